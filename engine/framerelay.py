"""Frame Relay PVCs: ingress policing (CIR, Bc, Be), DE-first discard and FECN/BECN marking
in the switches, BECN-adaptive shaping, residual frame errors, and their counters.

Built only when the scenario has a `frame_relay` section with at least one PVC; otherwise
nothing here exists and the packet path is untouched (zero cost).

How it hooks in (all without extra events, except a delayed shaped frame):

- A flow's path through a PVC gets three extra hops (`FrameRelay.wrap`): the PVC direction
  object (`PvcDirection`, the shaper) just before the first port the PVC carries, at the
  entry router; its policer (`PvcIngress`) just after that port, where the access link
  delivers the frame to the first switch; and its `PvcExit` just after the last port, at
  the exit router. Each forwards the packet by calling the next hop's `accept` directly. The forward direction of a PVC runs from its
  `src` to its `dst` router; a flow's ACKs use the reverse direction of the same PVC.
- Ports leaving an `fr_switch` node, and both directions of every `frame_relay` link, get
  `FrQueue`, a queue discipline wrapping the configured one (DropTail or RED).

What the model does:

- **Counting.** CIR, Bc and Be count *frame bits*: the frame as serialised on the first
  link the PVC carries (`port.wire(size) * 8`; on a `frame_relay` link the IP datagram plus
  8 bytes of flags, Q.922 address, control, NLPID and FCS-16).
- **Policing** (ITU-T I.370 / Q.922 contract, Tc = Bc / CIR) at the network's ingress:
  the first switch judges each frame as it arrives from the access link, so the network
  never sees more than the access rate and a burst waiting in the customer router's queue
  is charged to the contract as the access link delivers it (a PVC whose CIR is the port
  speed never discards). A frame within the committed allowance passes; else one within
  the excess allowance passes marked DE; else it is discarded (`excess_dropped`). Two
  disciplines count the allowances (`Pvc.policing`), both arithmetic at each arrival, no
  timer: `token_bucket` (default), two continuous buckets (`TokenBucket`), and `interval`,
  fixed consecutive Tc windows (`IntervalPolicer`). They agree in the long run only when
  Bc and Be are whole numbers of frames; see their docstrings.
- **Switch queues.** The queue's fill is measured when a frame arrives: packets waiting
  (the one being serialised excluded) / `limit_packets`, or queued bytes / `limit_bytes`.
  At or above `de_discard_threshold` a DE frame is discarded before the configured
  discipline is asked (`de_dropped`). Congestion marking judges, by default, the queue
  length averaged over regeneration cycles as ANSI T1.618 Annex A describes it
  (`CycleAverage`; `congestion_measure: instantaneous` judges the fill above instead): a
  frame the discipline admits while that fill is at or above `congestion_threshold` is
  marked FECN, and a frame of a PVC leaving a node where the port carrying the *opposite*
  direction of that PVC is at or above it at that moment is marked BECN. Each frame is counted once per mark however many
  switches mark it.
- **BECN-adaptive shaping** (`becn_shaping: true`), per direction at the entry router,
  as Cisco IOS Frame Relay traffic shaping with `frame-relay adaptive-shaping becn` does
  it: the shaper spaces frames at a current rate starting at CIR (frame i leaves at
  max(arrival, previous departure + previous bits / rate)). When a BECN-marked frame of
  the opposite direction leaves the PVC at this router, the rate is cut by 25%, at most
  once per Tc, not below `min_cir` (default CIR / 2, Cisco's mincir default). After 16 Tc
  without BECN the rate grows by (Bc + Be) / 16 bits per Tc, once per Tc, until it is
  back at CIR (from CIR / 2 with Be = 0, 8 steps). Those steps are applied lazily at the next frame or BECN and traced at the time they were due. A delayed frame
  costs one event (its release to the access port); the shaper holds at most as
  many frames (or bytes) as the entry port's queue limit, and counts the overflow in
  `shaper_dropped`.
- **Residual errors.** At the PVC's exit each frame is lost with probability
  `residual_error_rate`, from the stream `pvc:<id>:errors`; the summary reports the
  measured ratio (errored / frames reaching the exit).

What it simplifies:

- The same contract polices both directions of a PVC.
- A frame larger than Bc (Bc + Be) can never be committed (sent at all): no debt is
  allowed in the buckets.
- The shaper has no Bc/Be burst allowance (a pure rate spacer) and ignores FECN, as Cisco
  routers do. Frames not carried by a PVC cross Frame Relay ports unmarked and are never
  dropped as DE. A DE frame discarded before RED does not update RED's average.
"""

from __future__ import annotations

import math
from collections import deque

from simpy import Environment

from engine import routing
from engine.kernel import Call
from engine.net import Discipline, Egress, stream
from engine.packet import Packet, Path
from engine.result import PvcSummary
from engine.scenario import FrSwitchSpec, Pvc, Scenario
from engine.trace import Trace

STEP_DOWN = 0.75  # rate multiplier per BECN step (Cisco adaptive shaping)
QUIET_INTERVALS = 16  # Tc intervals without BECN before the rate steps back up
STEP_UP_SHARE = 16  # each step back up adds (Bc + Be) / 16 per Tc to the rate
TOKEN_SLACK = 1e-6  # bits: absorbs rounding of refill * rate == frame bits


class Circuit:
    """One PVC: its two directions, the per-PVC counters and the residual-error stream."""

    def __init__(self, env: Environment, pvc: Pvc, seed: int):
        self.pvc = pvc
        self.id = pvc.id
        self.frames = self.de_marked = self.de_dropped = self.excess_dropped = 0
        self.fecn_marked = self.becn_marked = self.shaper_dropped = 0
        self.exited = self.errored = 0
        self.de_trace = Trace("frames")
        rate = pvc.residual_error_rate
        self.error_random = stream(seed, f"pvc:{pvc.id}:errors").random if rate > 0 else None
        self.forward = PvcDirection(env, self, forward=True)
        self.reverse = PvcDirection(env, self, forward=False)
        self.forward.opposite = self.reverse
        self.reverse.opposite = self.forward

    def summary(self) -> PvcSummary:
        return PvcSummary(
            frames=self.frames,
            de_marked=self.de_marked,
            de_dropped=self.de_dropped,
            excess_dropped=self.excess_dropped,
            fecn_marked=self.fecn_marked,
            becn_marked=self.becn_marked,
            residual_error_rate=self.errored / self.exited if self.exited else 0.0,
            shaper_dropped=self.shaper_dropped,
        )

    def series(self) -> dict[str, Trace]:
        out = {f"pvc.{self.id}.de_marked": self.de_trace}
        for direction, suffix in ((self.forward, ""), (self.reverse, "_reverse")):
            if direction.shaper is not None:
                out[f"pvc.{self.id}.rate{suffix}"] = direction.shaper.trace
        return out


COMMITTED, EXCESS, DISCARD = 0, 1, 2  # a policer's verdict on one frame


class _Counts:
    """What both disciplines do with a frame once their counts are current: committed bits
    first, then excess (DE), else a discard."""

    __slots__ = ("committed", "excess")

    def __init__(self, committed: float, excess: float):
        self.committed, self.excess = committed, excess  # bits left of Bc and of Be

    def _take(self, bits: int) -> int:
        if self.committed + TOKEN_SLACK >= bits:
            self.committed -= bits
            return COMMITTED
        if self.excess + TOKEN_SLACK >= bits:
            self.excess -= bits
            return EXCESS
        return DISCARD


class TokenBucket(_Counts):
    """Policing by two continuous token buckets (`policing: token_bucket`): a committed
    bucket of depth Bc refilled at CIR and an excess bucket of depth Be refilled at Be / Tc,
    computed arithmetically at each frame's arrival. Over any interval T it admits at most
    Bc + CIR*T committed and Be + (Be/Tc)*T excess bits: I.370's "Bc (Be) per Tc" as a
    sliding window. Tokens left over by a frame carry to the next, so the long-run rate is
    CIR + Be/Tc whatever the frame size."""

    __slots__ = ("cir", "bc", "be", "excess_rate", "refilled_at")

    def __init__(self, cir: float, bc: float, be: float):
        self.cir, self.bc, self.be = cir, bc, be
        self.excess_rate = be * cir / bc  # Be per Tc, Tc = Bc / CIR
        super().__init__(bc, be)  # both buckets start full
        self.refilled_at = 0.0

    def police(self, bits: int, now: float) -> int:
        elapsed = now - self.refilled_at
        if elapsed > 0:
            self.refilled_at = now
            c = self.committed + elapsed * self.cir
            self.committed = c if c < self.bc else self.bc
            e = self.excess + elapsed * self.excess_rate
            self.excess = e if e < self.be else self.be
        return self._take(bits)

    def tokens(self, now: float) -> float:
        """Frame bits the buckets would admit at once at `now` (read-only)."""
        elapsed = max(0.0, now - self.refilled_at)
        return min(self.bc, self.committed + elapsed * self.cir) + min(
            self.be, self.excess + elapsed * self.excess_rate
        )

    def allowance(self, t0: float, t1: float, tokens0: float) -> float:
        """Most frame bits admitted in [t0, t1] with `tokens0` at t0."""
        return tokens0 + (t1 - t0) * (self.cir + self.excess_rate) + 2 * TOKEN_SLACK


class IntervalPolicer(_Counts):
    """Policing by fixed, consecutive measurement intervals Tc = Bc / CIR from t = 0
    (`policing: interval`), as ITU-T I.370 states the contract: within each interval the
    first Bc bits of frames pass, the next Be bits pass marked DE, the rest is discarded;
    counts start afresh at each interval. A frame is admitted only whole, so what a frame
    leaves unused of Bc (or Be) in an interval is lost: the long-run rate is
    (floor(Bc / F) + floor(Be / F)) * F / Tc for frames of F bits, the token bucket's
    CIR + Be/Tc only when Bc and Be are whole numbers of frames."""

    __slots__ = ("bc", "be", "tc", "index")

    def __init__(self, cir: float, bc: float, be: float):
        self.bc, self.be = bc, be
        self.tc = bc / cir
        self.index = 0  # the interval the counts belong to
        super().__init__(bc, be)  # what is left of Bc and Be in it

    def _roll(self, now: float) -> None:
        index = int(now / self.tc)
        if index != self.index:
            self.index = index
            self.committed, self.excess = self.bc, self.be

    def police(self, bits: int, now: float) -> int:
        self._roll(now)
        return self._take(bits)

    def tokens(self, now: float) -> float:
        if int(now / self.tc) != self.index:
            return self.bc + self.be
        return self.committed + self.excess

    def allowance(self, t0: float, t1: float, tokens0: float) -> float:
        """What is left of the interval holding t0, then Bc + Be per interval begun."""
        begun = int(t1 / self.tc) - int(t0 / self.tc)
        return tokens0 + begun * (self.bc + self.be) + 2 * TOKEN_SLACK


class PvcDirection:
    """The entry hop of one PVC direction at its entry router (the optional BECN shaper),
    and, through `ingress`, its policer at the network's edge."""

    __slots__ = (
        "env",
        "circuit",
        "forward",
        "opposite",
        "exit",
        "ingress",
        "egress_at",
        "shaper",
        "cir",
        "policer",
        "long_run_rate",
        "admitted_bits",
        "first_port",
    )

    def __init__(self, env: Environment, circuit: Circuit, forward: bool):
        pvc = circuit.pvc
        self.env = env
        self.circuit = circuit
        self.forward = forward
        self.opposite: PvcDirection | None = None
        self.exit = PvcExit(self)
        self.ingress = PvcIngress(self)
        # The FrQueue of the port this direction leaves each node by (for BECN lookups).
        self.egress_at: dict[str, FrQueue] = {}
        self.cir = cir = float(pvc.cir)
        assert pvc.bc is not None  # Pvc's validator defaults it to one second of CIR
        bc, be = float(pvc.bc), float(pvc.be)
        kind = IntervalPolicer if pvc.policing == "interval" else TokenBucket
        self.policer = kind(cir, bc, be)
        self.long_run_rate = cir + be * cir / bc  # frame bit/s: CIR plus Be per Tc
        self.admitted_bits = 0  # frame bits let through (committed or DE), for engine/usage
        self.first_port: Egress | None = None
        self.shaper: Shaper | None = None
        if pvc.becn_shaping:
            floor = float(pvc.min_cir) if pvc.min_cir is not None else cir / 2
            self.shaper = Shaper(cir, floor, bc / cir, bc + be)

    def tokens(self, now: float) -> float:
        return self.policer.tokens(now)

    def allowance(self, t0: float, t1: float, tokens0: float) -> float:
        return self.policer.allowance(t0, t1, tokens0)

    def attach(self, port: Egress) -> None:
        """Size the shaper's queue like the entry port's queue (first port seen wins)."""
        if self.first_port is None:
            self.first_port = port
        if (
            self.shaper is not None
            and self.shaper.limit_packets is None
            and self.shaper.limit_bytes is None
        ):
            queue = port.queue
            self.shaper.limit_packets = queue.limit_packets
            self.shaper.limit_bytes = queue.limit_bytes

    def accept(self, pkt: Packet) -> None:
        """A frame enters the PVC at its entry router, heading for the access link."""
        self.circuit.frames += 1
        pkt.hop += 1
        pkt.pvc = self
        shaper = self.shaper
        if shaper is None:
            pkt.path[pkt.hop].accept(pkt)
            return
        env = self.env
        now = env._now
        port = pkt.path[pkt.hop]
        release = shaper.release_time(port.wire(pkt.size) * 8, now)
        if release is None:
            self.circuit.shaper_dropped += 1
            pkt.flow.dropped(pkt)
        elif release > now:
            Call(env, release - now, port.accept, pkt)
        else:
            port.accept(pkt)


class _PvcHop:
    """A hop of a packet's path that acts for one PVC direction."""

    __slots__ = ("direction",)

    def __init__(self, direction: PvcDirection):
        self.direction = direction


class PvcIngress(_PvcHop):
    """Where the network polices a PVC direction: at the far end of the first link the
    PVC carries (the access link into the first switch), as each frame arrives from it.
    The network can never receive more than the access rate, so a burst queued at the
    customer's router is charged to the buckets as the access link delivers it."""

    __slots__ = ()

    def accept(self, pkt: Packet) -> None:
        direction = self.direction
        path = pkt.path
        hop = pkt.hop
        bits = path[hop - 1].wire(pkt.size) * 8  # the frame as the access link carried it
        now = direction.env._now
        verdict = direction.policer.police(bits, now)
        if verdict == DISCARD:
            direction.circuit.excess_dropped += 1
            pkt.flow.dropped(pkt)
            return
        if verdict == EXCESS and not pkt.de:
            pkt.de = True
            circuit = direction.circuit
            circuit.de_marked += 1
            circuit.de_trace.add(now, circuit.de_marked)
        direction.admitted_bits += bits
        hop += 1
        pkt.hop = hop
        path[hop].accept(pkt)


class PvcExit(_PvcHop):
    """The exit hop of one PVC direction: residual errors, BECN feedback to the shaper."""

    __slots__ = ()

    def accept(self, pkt: Packet) -> None:
        direction = self.direction
        circuit = direction.circuit
        circuit.exited += 1
        pkt.pvc = None
        if (
            circuit.error_random is not None
            and circuit.error_random() < circuit.pvc.residual_error_rate
        ):
            circuit.errored += 1
            pkt.flow.dropped(pkt)
            return
        if pkt.becn:
            # This router is the entry of the opposite direction: BECN tells its shaper.
            opposite = direction.opposite
            assert opposite is not None  # every PVC has both directions
            shaper = opposite.shaper
            if shaper is not None:
                shaper.on_becn(direction.env._now)
        hop = pkt.hop + 1
        pkt.hop = hop
        pkt.path[hop].accept(pkt)


class Shaper:
    """A rate spacer whose rate BECN steps down toward `floor` and quiet time back to CIR."""

    __slots__ = (
        "cir",
        "floor",
        "tc",
        "rate",
        "free_at",
        "_waiting",
        "queued_bytes",
        "limit_packets",
        "limit_bytes",
        "last_down",
        "quiet_from",
        "up_steps",
        "trace",
        "burst",
    )

    def __init__(self, cir: float, floor: float, tc: float, burst: float):
        self.cir, self.floor, self.tc = cir, floor, tc
        self.burst = burst  # Bc + Be
        self.rate = cir
        self.free_at = 0.0
        # (release time, bytes) of frames not yet released
        self._waiting: deque[tuple[float, int]] = deque()
        self.queued_bytes = 0
        self.limit_packets: int | None = None
        self.limit_bytes: int | None = None
        self.last_down = -math.inf
        self.quiet_from = math.inf
        self.up_steps = 0
        self.trace = Trace("bit/s")
        self.trace.add(0.0, cir)

    def release_time(self, bits: int, now: float) -> float | None:
        """When a frame of `bits` arriving now leaves the shaper; None if the queue is full."""
        self._recover(now)
        waiting = self._waiting
        while waiting and waiting[0][0] <= now:
            self.queued_bytes -= waiting.popleft()[1]
        start = self.free_at
        if start > now:
            size = bits // 8
            if self.limit_packets is not None:
                if len(waiting) >= self.limit_packets:
                    return None
            elif self.limit_bytes is not None and self.queued_bytes + size > self.limit_bytes:
                return None
            waiting.append((start, size))
            self.queued_bytes += size
        else:
            start = now
        self.free_at = start + bits / self.rate
        return start

    def on_becn(self, now: float) -> None:
        self._recover(now)
        if now - self.last_down >= self.tc:
            self.last_down = now
            rate = max(self.floor, self.rate * STEP_DOWN)
            if rate != self.rate:
                self.rate = rate
                self.trace.add(now, rate)
        self.quiet_from = now + QUIET_INTERVALS * self.tc
        self.up_steps = 0

    def _recover(self, now: float) -> None:
        """Apply the step-ups due by `now`: one per Tc from `quiet_from` on, up to CIR."""
        if self.rate >= self.cir or now < self.quiet_from:
            return
        due = int((now - self.quiet_from) / self.tc) + 1
        while self.up_steps < due and self.rate < self.cir:
            at = self.quiet_from + self.up_steps * self.tc
            self.up_steps += 1
            self.rate = min(self.cir, self.rate + self.burst / STEP_UP_SHARE / self.tc)
            self.trace.add(at, self.rate)


class CycleAverage:
    """A port's queue length averaged over regeneration cycles, as ANSI T1.618 Annex A
    has a frame relay switch judge incipient congestion (the algorithm DECbit introduced):
    a cycle begins when the outgoing circuit goes from idle to busy and runs through the
    busy period and the idle period after it; at any moment the average is the area under
    the queue length (frames or bytes in the port, the one being sent included) over the
    previous cycle and the current one so far, divided by their duration. Averaging over
    whole cycles ignores a burst that the port is about to clear. (The standard's text is
    not public; the algorithm is as Stallings, "Data and Computer Communications", ch.
    "Congestion Control", figure "A Frame Relay Algorithm", and Jain & Ramakrishnan's
    DECbit papers describe it.)

    O(1) per frame: the area of the frames still in the port is booked in full when they
    are admitted (each stays from its arrival to the end of its transmission, which the
    port's arithmetic fixes then) and the part after `now` is subtracted with running sums
    of their end times.
    """

    __slots__ = (
        "by_bytes",
        "prev_start",
        "prev_area",
        "start",
        "booked",
        "ends",
        "weights",
        "end_sum",
        "weight_sum",
    )

    def __init__(self, by_bytes: bool):
        self.by_bytes = by_bytes
        self.prev_start = self.start = 0.0
        self.prev_area = 0.0
        self.booked = 0.0  # sum of weight * (end - arrival) over the current cycle's frames
        self.ends: deque[float] = deque()  # end of transmission of each frame in the port
        self.weights: deque[int] = deque()  # their bytes (by_bytes only; else each weighs 1)
        self.end_sum = 0.0  # sum of weight * end over `ends`
        self.weight_sum = 0  # sum of weight over `ends`: the queue length

    def _trim(self, now: float) -> None:
        """Forget the frames sent by `now` (callers test `ends[0] <= now` first)."""
        ends = self.ends
        if self.by_bytes:
            weights = self.weights
            while ends and ends[0] <= now:
                weight = weights.popleft()
                self.end_sum -= weight * ends.popleft()
                self.weight_sum -= weight
        else:
            while ends and ends[0] <= now:
                self.end_sum -= ends.popleft()
            self.weight_sum = len(ends)
        if not ends:
            self.end_sum = 0.0  # no rounding left behind when idle

    def arrival(self, now: float) -> None:
        """A frame arrives: an idle port starts a new cycle here."""
        ends = self.ends
        if ends and ends[0] <= now:
            self._trim(now)
        if not ends and now > self.start and self.booked > 0:
            self.prev_start, self.prev_area = self.start, self.booked
            self.start, self.booked = now, 0.0

    def add(self, now: float, end: float, wire: int) -> None:
        """A frame admitted at `now` stays in the port until `end`."""
        self.ends.append(end)
        if self.by_bytes:
            self.weights.append(wire)
            self.booked += wire * (end - now)
            self.end_sum += wire * end
            self.weight_sum += wire
        else:
            self.booked += end - now
            self.end_sum += end
            self.weight_sum += 1

    def average(self, now: float) -> float:
        ends = self.ends
        if ends and ends[0] <= now:
            self._trim(now)
        span = now - self.prev_start
        if span <= 0:
            return self.weight_sum
        future = self.end_sum - now * self.weight_sum
        return (self.prev_area + self.booked - future) / span


class FrQueue:
    """A Frame Relay port's discipline: DE-first discard and FECN/BECN around `inner`."""

    __slots__ = (
        "inner",
        "port",
        "node",
        "congestion",
        "de_discard",
        "limit_packets",
        "limit_bytes",
        "limit",
        "cycle",
    )

    def __init__(self, inner: Discipline, port: Egress, switch: FrSwitchSpec):
        self.inner = inner
        self.port = port
        self.node = port.src
        self.congestion = switch.congestion_threshold
        self.de_discard = switch.de_discard_threshold
        self.limit_packets = inner.limit_packets
        self.limit_bytes = inner.limit_bytes
        limit = inner.limit_packets if inner.limit_packets is not None else inner.limit_bytes
        assert limit is not None  # the queue model requires one of the two limits
        self.limit: int = limit  # packets, or bytes when the queue counts bytes
        self.cycle: CycleAverage | None = None
        if switch.congestion_measure == "cycle_average":
            self.cycle = CycleAverage(by_bytes=inner.limit_packets is None)

    def fill(self, waiting: int) -> float:
        """Fraction of the queue's limit in use (the frame being serialised excluded)."""
        if self.limit_packets is not None:
            return waiting / self.limit_packets
        return self.port.queued_bytes / self.limit

    def congested(self, now: float) -> bool:
        cycle = self.cycle
        if cycle is not None:
            return cycle.average(now) >= self.congestion * self.limit
        return self.fill(self.port.waiting(now)) >= self.congestion

    def admit(self, port: Egress, waiting: int, wire: int, now: float, pkt: Packet) -> bool:
        cycle = self.cycle
        if cycle is not None:
            cycle.arrival(now)
        direction = pkt.pvc
        if direction is None:
            admitted = self.inner.admit(port, waiting, wire, now, pkt)
        else:
            admitted = self._admit_pvc(port, waiting, wire, now, pkt, direction)
        if admitted and cycle is not None:
            start = port.busy_until if port.busy_until > now else now
            cycle.add(now, start + wire * 8 / port.rate, wire)
        return admitted

    def _admit_pvc(
        self,
        port: Egress,
        waiting: int,
        wire: int,
        now: float,
        pkt: Packet,
        direction: PvcDirection,
    ) -> bool:
        circuit = direction.circuit
        limit = self.limit_packets
        fill = waiting / limit if limit is not None else port.queued_bytes / self.limit
        if pkt.de and fill >= self.de_discard:
            circuit.de_dropped += 1
            return False
        if not self.inner.admit(port, waiting, wire, now, pkt):
            return False
        if not pkt.fecn:
            cycle = self.cycle
            if cycle is not None:
                fill = cycle.average(now) / self.limit
            if fill >= self.congestion:
                pkt.fecn = True
                circuit.fecn_marked += 1
        if not pkt.becn:
            opposite = direction.opposite
            assert opposite is not None
            partner = opposite.egress_at.get(self.node)
            if partner is not None and partner.congested(now):
                pkt.becn = True
                circuit.becn_marked += 1
        return True


class FrameRelay:
    """Builds the PVCs of a scenario, wraps Frame Relay ports, and splices PVC paths."""

    def __init__(
        self,
        env: Environment,
        scenario: Scenario,
        seed: int,
        ports: dict[tuple[str, str, str], Egress],
    ):
        spec = scenario.frame_relay
        assert spec is not None and spec.pvcs
        self.scenario = scenario
        switches = {node.id for node in scenario.nodes if node.kind == "fr_switch"}
        for port in ports.values():
            if port.src in switches or port.encap == "frame_relay":
                port.use_queue(FrQueue(port.queue, port, spec.switch))
        self.circuits = {pvc.id: Circuit(env, pvc, seed) for pvc in spec.pvcs}

    def wrap(
        self, topology: routing.Topology, hops: list[routing.Hop], ports: tuple[Egress, ...]
    ) -> Path:
        """The path of `ports` (one per hop) with the PVC's entry and exit hops spliced in."""
        span = topology.pvc_span(hops)
        if span is None:
            return ports
        circuit = self.circuits[span.pvc.id]
        direction = circuit.forward if span.forward else circuit.reverse
        first, last = span.first, span.last
        carried = ports[first:last]
        direction.attach(carried[0])
        for port in carried:
            if isinstance(port.queue, FrQueue):
                direction.egress_at.setdefault(port.src, port.queue)
        return (
            *ports[:first],
            direction,
            carried[0],
            direction.ingress,
            *carried[1:],
            direction.exit,
            *ports[last:],
        )

    def summaries(self) -> dict[str, PvcSummary]:
        return {cid: c.summary() for cid, c in self.circuits.items()}

    def series(self) -> dict[str, Trace]:
        out: dict[str, Trace] = {}
        for circuit in self.circuits.values():
            out.update(circuit.series())
        return out
