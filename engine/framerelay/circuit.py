"""One PVC (`Circuit`): its two directions, the per-PVC counters, their summary and series,
and the residual-error stream."""

from __future__ import annotations

from simpy import Environment

from engine.framerelay.pvc import PvcDirection
from engine.net import stream
from engine.result import PvcSummary
from engine.scenario import Pvc
from engine.trace import Trace


class Circuit:
    """One PVC: its two directions, the per-PVC counters and the residual-error stream."""

    def __init__(self, env: Environment, pvc: Pvc, seed: int):
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
