"""BECN-adaptive shaping of one PVC direction at its entry router (`becn_shaping: true`,
`shaping: {adaptive: becn}`), as Cisco IOS Frame Relay traffic shaping with
`frame-relay adaptive-shaping becn` does it. The shaper itself is engine/shaping.py's.

The rate starts at the shaped rate (CIR for `becn_shaping`). When a BECN-marked frame of
the opposite direction leaves the PVC at this router, the rate is cut by 25%, at most once
per Tc, not below the floor (min_cir; default half the rate, Cisco's mincir default). After
16 Tc without BECN the rate grows by (Bc + Be) / 16 bits per Tc, once per Tc, until it is
back at the shaped rate (from half of it with Be = 0, 8 steps). Those steps are applied
lazily at the next frame or BECN and traced at the time they were due. FECN is ignored, as
Cisco routers do.
"""

from __future__ import annotations

import math

from engine.kernel import Kernel
from engine.scenario import Pvc
from engine.shaping import Shaper
from engine.trace import Trace

STEP_DOWN = 0.75  # rate multiplier per BECN step (Cisco adaptive shaping)
QUIET_INTERVALS = 16  # Tc intervals without BECN before the rate steps back up
STEP_UP_SHARE = 16  # each step back up adds (Bc + Be) / 16 per Tc to the rate


class BecnAdaptation:
    """Moves a shaper's rate: down on BECN toward `floor`, back up to its ceiling."""

    __slots__ = ("floor", "tc", "burst", "last_down", "quiet_from", "up_steps")

    def __init__(self, floor: float, tc: float, burst: float):
        self.floor, self.tc = floor, tc
        self.burst = burst  # Bc + Be
        self.last_down = -math.inf
        self.quiet_from = math.inf
        self.up_steps = 0

    def on_becn(self, shaper: Shaper, now: float) -> None:
        self.recover(shaper, now)
        if now - self.last_down >= self.tc:
            self.last_down = now
            rate = max(self.floor, shaper.rate * STEP_DOWN)
            if rate != shaper.rate:
                shaper.rate = rate
                assert shaper.rate_trace is not None  # an adaptive shaper traces its rate
                shaper.rate_trace.add(now, rate)
        self.quiet_from = now + QUIET_INTERVALS * self.tc
        self.up_steps = 0

    def recover(self, shaper: Shaper, now: float) -> None:
        """Apply the step-ups due by `now`: one per Tc from `quiet_from` on, up to the
        shaper's ceiling."""
        ceiling = shaper.ceiling
        if shaper.rate >= ceiling or now < self.quiet_from:
            return
        due = int((now - self.quiet_from) / self.tc) + 1
        while self.up_steps < due and shaper.rate < ceiling:
            at = self.quiet_from + self.up_steps * self.tc
            self.up_steps += 1
            shaper.rate = min(ceiling, shaper.rate + self.burst / STEP_UP_SHARE / self.tc)
            assert shaper.rate_trace is not None
            shaper.rate_trace.add(at, shaper.rate)


def pvc_shaper(env: Kernel, pvc: Pvc) -> Shaper | None:
    """The shaper of one direction of `pvc`, if it is shaped. `becn_shaping` is adaptive
    shaping at CIR that spaces every frame (a bucket of 0 bits), with Tc and the steps of
    the contract's Bc and Be; `shaping` is the bucket its fields give."""
    cir = float(pvc.cir)
    assert pvc.bc is not None  # Pvc's validator defaults it to one second of CIR
    if pvc.becn_shaping:
        floor = float(pvc.min_cir) if pvc.min_cir is not None else cir / 2
        shaper = Shaper(env, f"pvc:{pvc.id}", cir, 0.0)
        adapt = BecnAdaptation(floor, float(pvc.bc) / cir, float(pvc.bc + pvc.be))
    elif pvc.shaping is not None:
        spec = pvc.shaping
        rate = float(spec.rate) if spec.rate is not None else cir
        bc, be = spec.committed(rate), float(spec.be)
        shaper = Shaper(env, f"pvc:{pvc.id}", rate, bc + be)
        if spec.adaptive != "becn":
            return shaper
        floor = float(spec.min_cir) if spec.min_cir is not None else rate / 2
        adapt = BecnAdaptation(floor, bc / rate, bc + be)
    else:
        return None
    shaper.adaptation = adapt
    shaper.rate_trace = Trace("bit/s")
    shaper.rate_trace.add(0.0, shaper.rate)
    return shaper
