"""One PVC (`Circuit`: its two directions, the per-PVC counters, their summary and series,
and the residual-error stream) and the hops it adds to a packet's path: its entry at the
entry router (`PvcDirection`, with the optional shaper), its policer at the network's edge
(`PvcIngress`) and its exit (`PvcExit`: residual errors, BECN feedback to the opposite
direction's shaper). One module, as the circuit makes its directions and they count on it.

A flow's path through a PVC gets these three extra hops (`FrameRelay.wrap`): the PVC
direction object just before the first port the PVC carries, at the entry router; its
policer just after that port, where the access link delivers the frame to the first
switch; and its exit just after the last port, at the exit router. Each forwards the
packet by calling the next hop's `accept` directly: no extra events, except a frame the
shaper delays. The forward direction of a PVC runs from its `src` to its `dst` router; a
flow's ACKs use the reverse direction of the same PVC.

Policing happens at the network's ingress: the first switch judges each frame as it
arrives from the access link, so the network never sees more than the access rate and a
burst waiting in the customer router's queue is charged to the contract as the access
link delivers it (a PVC whose CIR is the port speed never discards).

At the PVC's exit each frame is lost with probability `residual_error_rate`, from the
stream `pvc:<id>:errors`; the summary reports the measured ratio (errored / frames
reaching the exit). The same contract polices both directions of a PVC.
"""

from __future__ import annotations

from typing import Protocol

from engine.framerelay.policing import DISCARD, EXCESS, IntervalPolicer, TokenBucket
from engine.framerelay.shaping import pvc_shaper
from engine.kernel import Kernel, stream
from engine.net import Egress
from engine.packet import Packet
from engine.result import PvcSummary
from engine.scenario import Pvc
from engine.trace import Trace


class Congestion(Protocol):
    """A switch port's congestion as a PVC direction asks it for BECN (engine.framerelay.
    switch's `FrQueue`, which reads PVC directions and is therefore named by this)."""

    def congested(self, now: float) -> bool: ...


class PvcDirection:
    """The entry hop of one PVC direction at its entry router (the optional shaper), and,
    through `ingress`, its policer at the network's edge."""

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

    def __init__(self, env: Kernel, circuit: Circuit, forward: bool):
        pvc = circuit.pvc
        self.env = env
        self.circuit = circuit
        self.forward = forward
        self.opposite: PvcDirection | None = None
        self.exit = PvcExit(self)
        self.ingress = PvcIngress(self)
        # The FrQueue of the port this direction leaves each node by (for BECN lookups).
        self.egress_at: dict[str, Congestion] = {}
        self.cir = cir = float(pvc.cir)
        assert pvc.bc is not None  # Pvc's validator defaults it to one second of CIR
        bc, be = float(pvc.bc), float(pvc.be)
        kind = IntervalPolicer if pvc.policing == "interval" else TokenBucket
        self.policer = kind(cir, bc, be)
        self.long_run_rate = cir + be * cir / bc  # frame bit/s: CIR plus Be per Tc
        self.admitted_bits = 0  # frame bits let through (committed or DE), for engine/usage
        self.first_port: Egress | None = None
        self.shaper = pvc_shaper(env, pvc)

    def tokens(self, now: float) -> float:
        return self.policer.tokens(now)

    def allowance(self, t0: float, t1: float, tokens0: float) -> float:
        return self.policer.allowance(t0, t1, tokens0)

    def attach(self, port: Egress) -> None:
        """Size the shaper's queue like the entry port's queue (first port seen wins)."""
        if self.first_port is None:
            self.first_port = port
        if self.shaper is not None:
            self.shaper.size_like(port)

    def accept(self, pkt: Packet) -> None:
        """A frame enters the PVC at its entry router, heading for the access link."""
        self.circuit.frames += 1
        pkt.hop += 1
        pkt.pvc = self
        shaper = self.shaper
        port = pkt.path[pkt.hop]
        if shaper is None:
            port.accept(pkt)
        else:
            shaper.send(pkt, port.wire(pkt.size) * 8)


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
            circuit = direction.circuit
            circuit.excess_dropped += 1
            circuit.discard_trace.add(now, circuit.excess_dropped)
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


class Circuit:
    """One PVC: its two directions, the per-PVC counters and the residual-error stream."""

    def __init__(self, env: Kernel, pvc: Pvc, seed: int):
        self.pvc = pvc
        self.id = pvc.id
        self.frames = self.de_marked = self.de_dropped = self.excess_dropped = 0
        self.fecn_marked = self.becn_marked = 0
        self.exited = self.errored = 0
        self.de_trace = Trace("frames")
        self.discard_trace = Trace("frames")  # the policer's discards, cumulative
        rate = pvc.residual_error_rate
        self.error_random = stream(seed, f"pvc:{pvc.id}:errors").random if rate > 0 else None
        self.forward = PvcDirection(env, self, forward=True)
        self.reverse = PvcDirection(env, self, forward=False)
        self.forward.opposite = self.reverse
        self.reverse.opposite = self.forward

    def summary(self, end: float) -> PvcSummary:
        shapers = [d.shaper for d in (self.forward, self.reverse)]
        return PvcSummary(
            frames=self.frames,
            de_marked=self.de_marked,
            de_dropped=self.de_dropped,
            excess_dropped=self.excess_dropped,
            fecn_marked=self.fecn_marked,
            becn_marked=self.becn_marked,
            residual_error_rate=self.errored / self.exited if self.exited else 0.0,
            shaper_dropped=sum(s.dropped for s in shapers if s is not None),
            shaper=shapers[0].summary(end) if shapers[0] is not None else None,
            shaper_reverse=shapers[1].summary(end) if shapers[1] is not None else None,
        )

    def series(self) -> dict[str, Trace]:
        """`pvc.<id>.de_marked`, `.discards`, and per shaped direction (suffix `_reverse`
        for the reverse one) `.queue_packets`, `.queue_delay` and, when it adapts, `.rate`."""
        prefix = f"pvc.{self.id}."
        out = {prefix + "de_marked": self.de_trace, prefix + "discards": self.discard_trace}
        for direction, suffix in ((self.forward, ""), (self.reverse, "_reverse")):
            shaper = direction.shaper
            if shaper is None:
                continue
            out.update(shaper.series(prefix, "queue_packets" + suffix, "queue_delay" + suffix))
            if shaper.rate_trace is not None:
                out[prefix + "rate" + suffix] = shaper.rate_trace
        return out
