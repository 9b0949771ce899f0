"""Frame Relay: the switches' congestion behaviour and the PVCs across the cloud."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from engine.scenario.common import MAX_INT, MAX_ITEMS, Id, PositiveRate, _Errors, _Model
from engine.scenario.shaping import ShapingSpec
from engine.units import Bits, format_rate


class FrSwitchSpec(_Model):
    """Congestion behaviour of every Frame Relay switch, as fractions of queue capacity."""

    congestion_threshold: float = Field(default=0.5, gt=0, le=1)
    """Queue fill above which frames are marked FECN (forward) and BECN (backward)."""
    de_discard_threshold: float = Field(default=0.75, gt=0, le=1)
    """Queue fill above which frames marked DE (discard eligible) are dropped first."""
    congestion_measure: Literal["cycle_average", "instantaneous"] = "cycle_average"
    """The queue fill that FECN/BECN marking judges. `cycle_average`: as ANSI T1.618 Annex
    A has it, the queue length (the frame being sent included) averaged over the previous
    regeneration cycle (a busy period and the idle period after it) and the current one.
    `instantaneous`: the frames waiting when the frame arrives. DE discard always judges
    the instantaneous fill (it protects the buffer)."""

    @model_validator(mode="after")
    def _check(self) -> FrSwitchSpec:
        """Congestion marking starts no later than DE discard."""
        errors = _Errors("FrSwitchSpec")
        if self.congestion_threshold > self.de_discard_threshold:
            errors.add(
                ("de_discard_threshold",),
                "invalid_range",
                f"de_discard_threshold {self.de_discard_threshold:g} must be at least "
                f"congestion_threshold {self.congestion_threshold:g}",
                self.de_discard_threshold,
            )
        errors.raise_if_any()
        return self


class Pvc(_Model):
    """A permanent virtual circuit between two routers across the Frame Relay cloud."""

    id: Id
    dlci: int = Field(ge=16, le=1007)
    """Data link connection identifier (16-1007 are the user DLCIs)."""
    src: str
    """Router at the PVC's forward entry."""
    dst: str
    """Router at the PVC's forward exit."""
    cir: PositiveRate
    """Committed information rate."""
    bc: Annotated[Bits, Field(le=MAX_INT)] | None = Field(default=None, gt=0)
    """Committed burst in bits per interval Tc = bc / cir (a plain number is bits, or a
    size with a unit: "64kbit", "8kB"); default cir x 1 s."""
    be: Annotated[Bits, Field(le=MAX_INT)] = Field(default=0, ge=0)
    """Excess burst in bits per Tc, as bc: sent marked DE; beyond bc + be frames are dropped."""
    policing: Literal["token_bucket", "interval"] = "token_bucket"
    """How the network's ingress (the first switch, as frames arrive from the access link)
    counts Bc and Be. `token_bucket`: two continuous buckets (depth bc refilled at cir,
    depth be refilled at be / Tc), leftover tokens carry over, so the long-run rate is
    cir + be / Tc for any frame size. `interval`: fixed consecutive Tc windows from t = 0,
    the first bc bits of whole frames committed, the next be bits DE, counts reset each
    window; a part of bc or be smaller than the next frame is lost, so the long-run rate
    is lower unless bc and be are whole numbers of frames."""
    becn_shaping: bool = False
    """Shape to CIR at the entry router, as Cisco IOS adaptive shaping does: the rate steps
    down by 0.75 on BECN (at most once per Tc) toward min_cir; after 16 Tc without BECN it
    steps back up by (bc + be) / 16 per Tc until it is back at cir. Frames are spaced at
    the current rate, with no burst: `shaping: {adaptive: becn, bc: 0}` but with Tc and
    the steps from the contract's bc and be."""
    min_cir: PositiveRate | None = None
    """Floor of BECN shaping; None means cir / 2."""
    shaping: ShapingSpec | None = None
    """Traffic shaping of both directions at their entry routers, at any rate (Cisco's
    Frame Relay traffic shaping: cir, bc, be, mincir, adaptive shaping); in place of
    becn_shaping. Its rate defaults to the PVC's cir."""
    residual_error_rate: float = Field(default=0.0, ge=0, lt=1)
    """Probability that a frame is corrupted inside the cloud."""

    @model_validator(mode="after")
    def _check(self) -> Pvc:
        """Default bc to one second of CIR; min_cir cannot exceed cir."""
        errors = _Errors("Pvc")
        if self.shaping is not None:
            for field in ("becn_shaping", "min_cir"):
                if field in self.model_fields_set and getattr(self, field) not in (None, False):
                    errors.add(
                        (field,),
                        "exclusive_fields",
                        f"give shaping or {field}, not both (shaping.adaptive: becn and "
                        "shaping.min_cir say the same)",
                        getattr(self, field),
                    )
            spec = self.shaping
            if spec.min_cir is not None and spec.rate is None and spec.min_cir > self.cir:
                errors.add(
                    ("shaping", "min_cir"),
                    "invalid_range",
                    f"min_cir {format_rate(spec.min_cir)} exceeds the shaped rate, the "
                    f"PVC's cir {format_rate(self.cir)}",
                    spec.min_cir,
                )
        if self.min_cir is not None and self.min_cir > self.cir:
            errors.add(
                ("min_cir",),
                "invalid_range",
                f"min_cir {format_rate(self.min_cir)} exceeds cir {format_rate(self.cir)}",
                self.min_cir,
            )
        errors.raise_if_any()
        if self.bc is None:
            self.bc = max(1, round(self.cir))  # Tc = 1 s, the usual default
        return self


class FrameRelaySpec(_Model):
    """Frame Relay switching behaviour and the PVCs across the cloud."""

    switch: FrSwitchSpec = Field(default_factory=FrSwitchSpec)
    pvcs: list[Pvc] = Field(default_factory=list, max_length=MAX_ITEMS)
