"""Links: one `Egress` port per direction, with framing, an egress queue and a loss model.

A port computes a packet's departure arithmetically (`max(now, busy_until) + bits/rate`)
and schedules exactly one event: the packet's arrival at the next hop, on the port's
`Line`, so the packets propagating on a link take one entry of the event queue, not one
each. The queue is never a process; it is the list of packets whose transmission has not
started yet, trimmed lazily when the next packet arrives. Queue occupancy, waiting times and busy time follow
from the same arithmetic, so the time-average queue length is exact (Little's law over
the recorded waits) without sampling.
"""

from __future__ import annotations

import math
import random
from collections import deque
from typing import TYPE_CHECKING, Protocol

from engine.kernel import Kernel, Line, stream
from engine.packet import Packet

if TYPE_CHECKING:  # the probe and the tap import this module
    from engine.capture import TapPoint
    from engine.recorder import LinkProbe
    from engine.scenario import Link, LossSpec, QueueSpec

# Framing added to an IP datagram on the wire, in bytes, per encapsulation.
#   ethernet: preamble+SFD 8, header 14, FCS 4, inter-frame gap 12; payload padded to 46.
#   ppp (RFC 1662) and Cisco hdlc: flag, address, control, protocol (2), FCS-16, flag.
#   frame_relay (RFC 2427 over Q.922): flag, 2-byte address, control, NLPID, FCS-16, flag.
#   mpls: one 4-byte label stack entry over PPP framing (RFC 3032).
#   atm_aal5 (RFC 2684 LLC/SNAP): 8-byte LLC/SNAP, 8-byte AAL5 trailer, padded to
#   48-byte cell payloads, 53 bytes per cell on the wire (the "cell tax").
#   none: nothing, as ns-2's links carry a packet (its size is all there is on the wire).
FRAMING = {"ethernet": 38, "ppp": 8, "hdlc": 8, "frame_relay": 8, "mpls": 12, "none": 0}
ETHERNET_MIN_PAYLOAD = 46
ETHERNET_GAP = 12  # of the 38: the inter-frame gap, line time but no bits to corrupt
ATM_CELL, ATM_PAYLOAD, AAL5_OVERHEAD = 53, 48, 16


def wire_bytes(encap: str, ip_size: int, overhead: int | None = None) -> int:
    """Bytes a datagram of `ip_size` occupies on a link of this encapsulation, or with
    `overhead` bytes per packet in place of the encapsulation's framing (no padding, no
    cells) when it is given."""
    if overhead is not None:
        return ip_size + overhead
    if encap == "atm_aal5":
        return -(-(ip_size + AAL5_OVERHEAD) // ATM_PAYLOAD) * ATM_CELL
    if encap == "ethernet":
        return max(ip_size, ETHERNET_MIN_PAYLOAD) + FRAMING["ethernet"]
    return ip_size + FRAMING[encap]


# --- loss models --------------------------------------------------------------------------


class LossModel:
    """Decides whether a packet that was transmitted arrives corrupted (and is discarded)."""

    def lost(self, pkt: Packet, wire: int) -> bool:
        return False


class Bernoulli(LossModel):
    def __init__(self, rate: float, rng: random.Random):
        self.rate = rate
        self.random = rng.random

    def lost(self, pkt: Packet, wire: int) -> bool:
        return self.random() < self.rate


class BitErrors(LossModel):
    """Independent bit errors: a frame of n bits survives with probability (1 - ber)^n.
    The bits are those transmitted: an Ethernet frame's inter-frame gap is idle line."""

    def __init__(self, ber: float, rng: random.Random, idle_bytes: int = 0):
        self.log_survive = math.log1p(-ber)
        self.idle_bytes = idle_bytes
        self.random = rng.random
        self._p: dict[int, float] = {}

    def lost(self, pkt: Packet, wire: int) -> bool:
        p = self._p.get(wire)
        if p is None:
            bits = (wire - self.idle_bytes) * 8
            p = self._p[wire] = -math.expm1(bits * self.log_survive)
        return self.random() < p


class GilbertElliott(LossModel):
    """Two-state Markov loss, one transition per packet, then loss with the state's rate."""

    def __init__(
        self, p_gb: float, p_bg: float, loss_good: float, loss_bad: float, rng: random.Random
    ):
        self.p_gb, self.p_bg = p_gb, p_bg
        self.loss_good, self.loss_bad = loss_good, loss_bad
        self.bad = False
        self.random = rng.random

    def lost(self, pkt: Packet, wire: int) -> bool:
        r = self.random
        if self.bad:
            if r() < self.p_bg:
                self.bad = False
        elif r() < self.p_gb:
            self.bad = True
        return r() < (self.loss_bad if self.bad else self.loss_good)


class Scripted(LossModel):
    """Drops the data packets whose 0-based index among data packets crossing is listed."""

    def __init__(self, drop: list[int]):
        self.drop = frozenset(drop)
        self.count = 0

    def lost(self, pkt: Packet, wire: int) -> bool:
        if not pkt.carries_data:
            return False
        index = self.count
        self.count = index + 1
        return index in self.drop


def link_wire(link: Link, ip_size: int) -> int:
    """`wire_bytes` for a scenario Link: its encapsulation or its explicit overhead."""
    return wire_bytes(link.encap, ip_size, link.overhead_bytes)


def make_loss(
    spec: LossSpec, rng: random.Random, encap: str = "ppp", overhead: int | None = None
) -> LossModel | None:
    model = spec.model
    if model == "none":
        return None
    # LossSpec's validator requires each model's parameters: the asserts narrow the types.
    if model == "bernoulli":
        assert spec.rate is not None
        return Bernoulli(spec.rate, rng) if spec.rate > 0 else None
    if model == "ber":
        assert spec.ber is not None
        idle = ETHERNET_GAP if encap == "ethernet" and overhead is None else 0
        return BitErrors(spec.ber, rng, idle) if spec.ber > 0 else None
    if model == "gilbert_elliott":
        assert spec.p_gb is not None and spec.p_bg is not None
        return GilbertElliott(spec.p_gb, spec.p_bg, spec.loss_good, spec.loss_bad, rng)
    if model == "script":
        return Scripted(spec.drop)
    raise ValueError(f"unknown loss model {model!r}")


# --- queue disciplines --------------------------------------------------------------------


class Discipline(Protocol):
    """What a port asks its queue: may this packet join the ones waiting? Its limits,
    waiting packets or queued bytes (one of the two is set)."""

    limit_packets: int | None
    limit_bytes: int | None

    def admit(self, port: Egress, waiting: int, wire: int, now: float, pkt: Packet) -> bool: ...


class DropTail:
    """Tail drop when the waiting packets (the one being serialised excluded) hit the limit.

    This is ns-3's DropTailQueue on a point-to-point device (the packet on the wire has
    left the queue). ns-2's DropTail counts it: its `limit_` N holds N - 1 waiting.
    `limit_bytes` counts the wire bytes of the waiting packets the same way.
    """

    def __init__(self, limit_packets: int | None, limit_bytes: int | None):
        self.limit_packets = limit_packets
        self.limit_bytes = limit_bytes
        # A packet finding nothing waiting joins without asking (a port may skip the call).
        self.admits_when_idle = True

    def admit(self, port: Egress, waiting: int, wire: int, now: float, pkt: Packet) -> bool:
        """Whether `pkt` (`wire` bytes) may join the `waiting` packets queued at `port`."""
        if self.limit_packets is not None:
            return waiting < self.limit_packets
        limit = self.limit_bytes
        assert limit is not None  # the queue model requires one of the two limits
        return port.queued_bytes + wire <= limit


class Red(DropTail):
    """Random Early Detection (Floyd & Jacobson 1993) in packet mode, as ns-2's red.cc and
    ns-3's RedQueueDisc run it by default, `wait` option included.

    On every arrival the average follows an EWMA of the packets waiting (the one being
    serialised excluded, as ns counts its queue); after an idle period it first decays as
    if m packets of 500 B (ns's mean_pktsize) had left at the link's rate. Early drops
    need avg >= min_th and more than one packet waiting; the first such arrival only
    starts `count` (arrivals since the last drop). With `wait`, the drop probability is 0
    while count * p_b < 1 and p_b / (2 - count * p_b) after, so drops come every 1/p_b to
    2/p_b arrivals (the paper's p_b / (1 - count * p_b) spaces them 1 to 1/p_b apart).
    At or above max_th (2 * max_th when gentle) every arrival is dropped.
    """

    MEAN_PACKET_BITS = 500 * 8

    def __init__(self, spec: QueueSpec, rng: random.Random):
        super().__init__(spec.limit_packets, spec.limit_bytes)
        self.admits_when_idle = False  # RED's average must see every arrival
        self.min_th, self.max_th = spec.min_th, spec.max_th
        self.max_p, self.weight, self.gentle = spec.max_p, spec.weight, spec.gentle
        self.forced_th = 2 * spec.max_th if spec.gentle else spec.max_th
        self.avg = 0.0
        self.count = 0
        self.above = False  # the previous arrival found avg >= min_th with a queue
        self.random = rng.random

    def admit(self, port: Egress, waiting: int, wire: int, now: float, pkt: Packet) -> bool:
        w = self.weight
        idle = port.busy_until
        if waiting == 0 and idle < now:
            m = int((now - idle) * port.rate / self.MEAN_PACKET_BITS)
            self.avg *= (1.0 - w) ** (m + 1)
        else:
            self.avg += w * (waiting - self.avg)
        avg = self.avg
        self.count += 1
        if avg >= self.min_th and waiting > 1:
            if avg >= self.forced_th:
                return False
            if not self.above:
                self.above = True
                self.count = 1
            elif self.random() < self._drop_probability(avg):
                self.count = 0
                return False
        else:
            self.above = False
        return super().admit(port, waiting, wire, now, pkt)

    def _drop_probability(self, avg: float) -> float:
        if avg < self.max_th:
            p_b = self.max_p * (avg - self.min_th) / (self.max_th - self.min_th)
        else:  # gentle: from max_p at max_th to 1 at 2 * max_th
            p_b = self.max_p + (1 - self.max_p) * (avg - self.max_th) / self.max_th
        x = self.count * p_b
        if x < 1:
            return 0.0
        return p_b / (2 - x) if x < 2 else 1.0


def make_queue(spec: QueueSpec, seed: int, component: str) -> DropTail:
    """The port's queue; RED draws from the component's own stream (DropTail draws none,
    and a thousand ports would each pay a SHA-256 and a Mersenne Twister for it)."""
    if spec.discipline == "red":
        return Red(spec, stream(seed, component))
    return DropTail(spec.limit_packets, spec.limit_bytes)


# --- the port -----------------------------------------------------------------------------


class Egress:
    """One direction of a full-duplex link: queue, serialiser, propagation, loss."""

    __slots__ = (
        "env",
        "key",
        "link_id",
        "src",
        "dst",
        "rate",
        "delay",
        "encap",
        "overhead",
        "queue",
        "loss",
        "busy_until",
        "queued_bytes",
        "_waiting",
        "probe",
        "tap",
        "line",
        "packets",
        "bytes",
        "drops",
        "error_drops",
        "busy_total",
        "wait_total",
        "queue_max",
        "shown",
        "admits_idle",
        "_wire_cache",
    )

    def __init__(
        self,
        env: Kernel,
        link: Link,
        src: str,
        dst: str,
        queue: Discipline,
        loss: LossModel | None,
        framing: dict[int, tuple[int, float]] | None = None,
    ):
        """`framing`: a (wire bytes, serialisation time) table by IP size, which the ports
        of one encapsulation, overhead and rate share: a thousand access links then keep
        one table warm rather than a thousand cold ones."""
        # Assigned in the order the compiled class lays its fields out: what `accept` reads
        # of every packet first, and the two the rate sampler reads on every beat side by
        # side (with a thousand flows each access port is cold when its packet comes).
        self.env = env
        self.busy_until = 0.0
        self.busy_total = 0.0
        self.queued_bytes = 0
        # (start_time, wire_bytes) of packets not yet started
        self._waiting: deque[tuple[float, int]] = deque()
        self._wire_cache = {} if framing is None else framing
        self.queue = queue
        self.admits_idle = False
        self.use_queue(queue)
        self.packets = self.bytes = 0
        self.probe: LinkProbe | None = None
        # The queue length last shown to the probe, so that a port whose queue has not
        # changed does not wake its probe (a cold object per packet with many flows); -1
        # for none yet, a plain int the compiled class holds unboxed.
        self.shown = -1
        self.loss = loss
        self.tap: TapPoint | None = None  # set when this direction is captured
        self.line = Line(env)  # packets propagating to the next hop, in arrival order
        self.delay = link.delay_from(src)
        self.wait_total = 0.0
        self.queue_max = 0
        self.link_id = link.id
        self.src, self.dst = src, dst
        self.key = f"{link.id}:{src}>{dst}"
        self.rate = link.rate_from(src)
        self.encap = link.encap
        self.overhead = link.overhead_bytes
        self.drops = self.error_drops = 0

    def use_queue(self, queue: Discipline) -> None:
        """Queue with `queue` from now on."""
        self.queue = queue
        # A packet-limited DropTail takes any packet when none is waiting: its verdict is
        # known without asking it (RED, or Frame Relay's queue, must see every arrival).
        idle = getattr(queue, "admits_when_idle", False)
        self.admits_idle = idle is True and (queue.limit_packets or 0) >= 1

    def wire(self, ip_size: int) -> int:
        return self._framing(ip_size)[0]

    def _framing(self, ip_size: int) -> tuple[int, float]:
        """(wire bytes, serialisation time) of a datagram of `ip_size`, cached by size."""
        f = self._wire_cache.get(ip_size)
        if f is None:
            wire = wire_bytes(self.encap, ip_size, self.overhead)
            f = self._wire_cache[ip_size] = (wire, wire * 8 / self.rate)
        return f

    def waiting(self, now: float) -> int:
        """Packets queued behind the one being serialised, at time `now`."""
        w = self._waiting
        while w and w[0][0] <= now:
            self.queued_bytes -= w.popleft()[1]
        return len(w)

    def next_start(self) -> float:
        """When the first waiting packet starts its transmission (the port's busy end if
        none waits); `waiting(now)` has trimmed the queue."""
        w = self._waiting
        return w[0][0] if w else self.busy_until

    def accept(self, pkt: Packet) -> None:
        """A packet arrives at this port from the node it leaves."""
        env = self.env
        now = env._now
        w = self._waiting
        if self.queued_bytes:  # every waiting packet has bytes: else `w` is empty, unread
            while w and w[0][0] <= now:  # self.waiting(now), inlined on the hot path
                self.queued_bytes -= w.popleft()[1]
            waiting = len(w)
        else:
            waiting = 0
        f = self._wire_cache.get(pkt.size) or self._framing(pkt.size)
        wire = f[0]
        if (waiting or not self.admits_idle) and not self.queue.admit(
            self, waiting, wire, now, pkt
        ):
            self.drops += 1
            pkt.flow.dropped(pkt)
            if self.probe is not None:
                self.probe.on_drop(now, waiting, self.drops + self.error_drops)
                self.shown = waiting
            return
        start = self.busy_until
        if start > now:
            w.append((start, wire))
            self.queued_bytes += wire
            wait = start - now
            self.wait_total += wait
            # engine.accounting.charge_wait, inlined: the flow's queueing at this hop
            # (taken back below if the line loses the packet: the mean is of those it left).
            pkt.path[-1].waits[pkt.hop] += wait
            waiting += 1
            if waiting > self.queue_max:
                self.queue_max = waiting
        else:
            start = now
        tx = f[1]
        end = start + tx
        self.busy_until = end
        self.busy_total += tx
        self.packets += 1
        self.bytes += wire
        probe = self.probe
        if probe is not None and waiting != self.shown:
            self.shown = waiting
            probe.on_queue(now, waiting)
        loss = self.loss
        lost = loss is not None and loss.lost(pkt, wire)
        tap = self.tap
        if tap is not None:
            tap.record(start, end, pkt, lost)
        if lost:
            self.error_drops += 1
            if start > now:
                pkt.path[-1].waits[pkt.hop] -= start - now
            pkt.flow.dropped(pkt)
            if probe is not None:
                probe.on_drop(now, waiting, self.drops + self.error_drops)
                self.shown = waiting
            return
        pkt.hop += 1
        self.line.add(end + self.delay - now, pkt)

    def busy_time(self, now: float) -> float:
        """Seconds spent serialising up to `now` (the scheduled future excluded)."""
        # Clamped: (start + tx) - now - tx can round to a hair below zero.
        return max(0.0, self.busy_total - max(0.0, self.busy_until - now))

    def queue_wait_total(self, now: float) -> float:
        """Summed queueing delay up to `now`, excluding waits that lie in the future."""
        future = 0.0
        for start, _ in self._waiting:
            if start > now:
                # Its wait was booked in full on arrival; the part after now is start - now.
                future += start - now
        return self.wait_total - future
