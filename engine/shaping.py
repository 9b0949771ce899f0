"""Traffic shaping at a router: a token bucket in front of a port, its queue of held-back
frames, their series and counters. One class, `Shaper`, serves a router interface
(`Link.shaping_a_to_b`: a hop of its own in every path through the port) and each direction
of a PVC (`Pvc.shaping`, `becn_shaping`: called by the PVC's entry hop,
engine/framerelay/pvc.py).

The bucket (depth D = bc + be bits, filled at the shaped rate R) is kept as the time at
which it would be full again, TAT (the GCRA's theoretical arrival time), so each frame is
a few arithmetic operations and no timer: a frame of b bits may leave once the bucket
holds min(b, D) bits, at TAT - (D - min(b, D)) / R, never before the frame ahead of it
(FIFO), and then TAT = max(TAT, departure) + b / R. Over any interval T the shaper so
sends at most D + R T bits, plus one frame's excess over D when a frame is larger than
the bucket (it leaves on a full bucket and leaves it in debt). D = 0 is a pure spacer:
frame i leaves at max(arrival, previous departure + previous bits / R), which is what
`becn_shaping: true` has always done.

A frame that must wait costs one event, its release to the port; the queue holds at most
the port's queue limit (packets or bytes) and drops what overflows. Adaptive shaping
(`adaptive: becn`) changes R through `adaptation` (engine/framerelay/shaping.py).

Visible: the number of frames waiting (change-driven, at each arrival and release), each
frame's wait (one sample per frame), the rate when it adapts, and a summary.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Protocol

from engine.kernel import Call, Kernel
from engine.net import Egress
from engine.packet import Packet, Path
from engine.result import ShaperSummary
from engine.trace import Trace

if TYPE_CHECKING:
    from engine.scenario import Link


SLACK = 1e-6  # bits: absorbs the rounding of rate * time in the allowance


class Adaptation(Protocol):
    """What moves a shaper's rate on the network's feedback: engine/framerelay/shaping.py's
    `BecnAdaptation`, which builds shapers and is therefore named by this protocol (an
    interpreted class: its calls cost the compiled shaper the same either way)."""

    #: The lowest rate it moves the shaper to, bit/s.
    floor: float

    def on_becn(self, shaper: Shaper, now: float) -> None: ...

    def recover(self, shaper: Shaper, now: float) -> None: ...


class Shaper:
    """A token-bucket shaper in front of one port, with its queue of held-back frames."""

    __slots__ = (
        "env",
        "key",
        "port",
        "rate",
        "ceiling",
        "depth",
        "tat",
        "last_release",
        "_waiting",
        "queued_bytes",
        "limit_packets",
        "limit_bytes",
        "adaptation",
        "rate_trace",
        "queue_trace",
        "delay_trace",
        "frames",
        "delayed",
        "dropped",
        "queue_max",
        "wait_total",
        "wait_max",
        "passed_bits",
        "largest_bits",
    )

    def __init__(self, env: Kernel, key: str, rate: float, depth: float):
        """`key` names the shaper in diagnoses ("pvc:<id>", "shaper:<port key>")."""
        self.env = env
        self.key = key
        self.port: Egress | None = None  # an interface shaper's port (a PVC's: None)
        self.rate = rate  # the rate in force (adaptive shaping moves it)
        self.ceiling = rate  # the configured rate: the most it ever is
        self.depth = depth
        self.tat = 0.0  # the bucket starts full
        self.last_release = 0.0
        # (release time, bytes) of frames not yet released, in order
        self._waiting: deque[tuple[float, int]] = deque()
        self.queued_bytes = 0
        self.limit_packets: int | None = None
        self.limit_bytes: int | None = None
        self.adaptation: Adaptation | None = None
        self.rate_trace: Trace | None = None  # the rate, when it adapts
        self.queue_trace = Trace("packets")
        self.delay_trace = Trace("s", rate=True)
        self.frames = self.delayed = self.dropped = self.queue_max = 0
        self.wait_total = self.wait_max = 0.0
        self.passed_bits = 0  # frame bits that have left, for engine/usage
        self.largest_bits = 0

    def size_like(self, port: Egress) -> None:
        """Hold at most as many frames (or bytes) as `port`'s queue, unless already sized."""
        if self.limit_packets is None and self.limit_bytes is None:
            self.limit_packets = port.queue.limit_packets
            self.limit_bytes = port.queue.limit_bytes

    def accept(self, pkt: Packet) -> None:
        """An interface shaper's hop: the packet goes on to its port, now or later."""
        pkt.hop += 1
        self.send(pkt, self.wire(pkt.size) * 8)

    def wire(self, ip_size: int) -> int:
        """An interface shaper's frame size is its port's (a PVC's entry asks its next hop)."""
        port = self.port
        assert port is not None  # only interface shapers are hops of a path
        return port.wire(ip_size)

    def send(self, pkt: Packet, bits: int) -> None:
        """Hand `pkt` (a frame of `bits` on its port, `pkt.path[pkt.hop]`) on when the
        bucket allows; drop it when the queue is full."""
        env = self.env
        now = env._now
        release = self.release_time(bits, now)
        if release is None:
            self.dropped += 1
            pkt.flow.dropped(pkt)
            return
        self.frames += 1
        if bits > self.largest_bits:
            self.largest_bits = bits
        wait = release - now
        self.delay_trace.sample(now, wait)
        if wait > 0:
            self.delayed += 1
            self.wait_total += wait
            if wait > self.wait_max:
                self.wait_max = wait
            self.queue_trace.add(now, len(self._waiting))
            Call(env, wait, self._release, pkt)
        else:
            self.passed_bits += bits
            pkt.path[pkt.hop].accept(pkt)

    def _release(self, pkt: Packet) -> None:
        now = self.env._now
        self._trim(now)
        self.queue_trace.add(now, len(self._waiting))
        pkt.path[pkt.hop].accept(pkt)

    def _trim(self, now: float) -> None:
        """Forget the frames released by `now`, counting their bits as let through (a
        frame's release event trims it at the latest)."""
        waiting = self._waiting
        while waiting and waiting[0][0] <= now:
            size = waiting.popleft()[1]
            self.queued_bytes -= size
            self.passed_bits += size * 8

    def release_time(self, bits: int, now: float) -> float | None:
        """When a frame of `bits` arriving now leaves; None if the queue is full."""
        adaptation = self.adaptation
        if adaptation is not None:
            adaptation.recover(self, now)
        self._trim(now)
        depth = self.depth
        need = bits if bits < depth else depth
        start = self.tat - (depth - need) / self.rate
        if start < self.last_release:
            start = self.last_release
        if start > now:
            waiting = self._waiting
            size = bits // 8
            if self.limit_packets is not None:
                if len(waiting) >= self.limit_packets:
                    return None
            elif self.limit_bytes is not None and self.queued_bytes + size > self.limit_bytes:
                return None
            waiting.append((start, size))
            self.queued_bytes += size
            if len(waiting) > self.queue_max:
                self.queue_max = len(waiting)
        else:
            start = now
        tat = self.tat
        self.tat = (tat if tat > start else start) + bits / self.rate
        self.last_release = start
        return start

    def on_becn(self, now: float) -> None:
        """A BECN-marked frame of the opposite direction left the PVC here."""
        if self.adaptation is not None:
            self.adaptation.on_becn(self, now)

    def tokens(self, now: float) -> float:
        """Bits the bucket holds at `now` counting only the frames that have left (TAT
        counts the waiting ones too: each added its bits / R when it was scheduled);
        negative when in debt after a frame larger than the bucket. Read-only."""
        waiting = sum(size for start, size in self._waiting if start > now) * 8
        level = self.depth - (self.tat - now) * self.rate + waiting
        return level if level < self.depth else self.depth

    def allowance(self, t0: float, t1: float, tokens0: float) -> float:
        """Most frame bits the shaper lets through in [t0, t1] with `tokens0` at t0: at a
        fixed rate R, the bucket's content, R (t1 - t0), and the last frame's debt beyond
        the bucket. An adaptive rate never exceeds R but moves the bucket's level in time
        units: then D R / floor + R (t1 - t0) + the last frame, from the frames' spacing."""
        span = (t1 - t0) * self.ceiling + SLACK
        adaptation = self.adaptation
        if adaptation is not None:
            return self.depth * self.ceiling / adaptation.floor + span + self.largest_bits
        debt = self.largest_bits - self.depth
        return tokens0 + span + (debt if debt > 0 else 0.0)

    def summary(self, end: float) -> ShaperSummary:
        future = sum(start - end for start, _ in self._waiting if start > end)
        return ShaperSummary(
            rate_bps=self.ceiling,
            frames=self.frames,
            delayed=self.delayed,
            dropped=self.dropped,
            queue_max=self.queue_max,
            queue_mean=(self.wait_total - future) / end if end > 0 else 0.0,
            delay_mean=self.wait_total / self.frames if self.frames else 0.0,
            delay_max=self.wait_max,
        )

    def series(self, prefix: str, queue: str, delay: str) -> dict[str, Trace]:
        """The queue length and wait series under `prefix` + the given names."""
        return {prefix + queue: self.queue_trace, prefix + delay: self.delay_trace}


def interface_shapers(
    env: Kernel, ports: dict[tuple[str, str, str], Egress], links: dict[str, Link]
) -> dict[str, Shaper]:
    """A shaper for each link direction that has one, by its port's key."""
    out = {}
    for (link_id, src, _), port in ports.items():
        link = links[link_id]
        spec = link.shaping_of(link.direction_from(src))
        if spec is None:
            continue
        assert spec.rate is not None  # Link's validator requires an interface shaper's rate
        rate = float(spec.rate)
        shaper = Shaper(env, f"shaper:{port.key}", rate, spec.committed(rate) + float(spec.be))
        shaper.port = port
        shaper.size_like(port)
        out[port.key] = shaper
    return out


def splice(path: Path, shapers: dict[str, Shaper]) -> Path:
    """`path` with each shaped port's shaper just ahead of it."""
    out: list[Any] = []
    for hop in path:
        shaper = shapers.get(hop.key) if isinstance(hop, Egress) else None
        if shaper is not None:
            out.append(shaper)
        out.append(hop)
    return tuple(out)
