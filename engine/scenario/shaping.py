"""Traffic shaping at a router, on an interface (`Link.shaping_a_to_b`) or a PVC
(`Pvc.shaping`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from engine.scenario.common import MAX_INT, PositiveRate, _Errors, _Model
from engine.units import Bits, format_rate

#: Cisco's default shaping interval: Bc = rate x 125 ms unless given.
DEFAULT_TC = 0.125


class ShapingSpec(_Model):
    """Traffic shaping at a router (Cisco's `shape average`, or Frame Relay traffic shaping
    on a PVC): a token bucket of depth bc + be filled at `rate` lets frames leave back to
    back while it holds their bits, then at `rate`; the frames it holds back wait in its
    own queue (as deep as the port's queue behind it), and what overflows that queue is
    dropped. Rates and bursts count frame bits: the packet with the framing of the link
    it leaves by (on a PVC, the first link the PVC crosses)."""

    rate: PositiveRate | None = None
    """Shaped rate (Cisco's `frame-relay cir`, `shape average`). Required on a link; on a
    PVC, None means the PVC's cir. Shaping a PVC at cir + be / Tc of its contract uses
    the excess burst without a policer discard."""
    bc: Annotated[Bits, Field(le=MAX_INT)] | None = Field(default=None, ge=0)
    """Committed burst in bits, sent back to back once the bucket is full; Tc = bc / rate.
    None means rate x 125 ms (Cisco's default Tc); 0 spaces every frame at `rate`."""
    be: Annotated[Bits, Field(le=MAX_INT)] = Field(default=0, ge=0)
    """Excess burst in bits: credit the bucket keeps beyond bc after an idle spell."""
    adaptive: Literal["none", "becn"] = "none"
    """`becn` (PVCs only): Cisco's `frame-relay adaptive-shaping becn`: each BECN-marked
    frame arriving on the opposite direction cuts the rate by 25% (at most once per Tc)
    down to min_cir; after 16 Tc without BECN it steps back up by (bc + be) / 16 per Tc."""
    min_cir: PositiveRate | None = None
    """`becn` only: the floor of the adaptive rate (Cisco's mincir); None means rate / 2."""

    @model_validator(mode="after")
    def _check(self) -> ShapingSpec:
        """min_cir belongs to adaptive shaping and lies below the rate; adapting needs a Tc."""
        errors = _Errors("ShapingSpec")
        if self.adaptive == "becn" and self.bc == 0:
            errors.add(
                ("bc",),
                "invalid_range",
                "adaptive shaping steps once per Tc = bc / rate: bc must be above 0",
                self.bc,
            )
        if self.min_cir is not None:
            if self.adaptive == "none":
                errors.add(
                    ("min_cir",),
                    "field_not_allowed",
                    "min_cir applies to adaptive shaping only (adaptive: becn)",
                    self.min_cir,
                )
            elif self.rate is not None and self.min_cir > self.rate:
                errors.add(
                    ("min_cir",),
                    "invalid_range",
                    f"min_cir {format_rate(self.min_cir)} exceeds the shaped rate "
                    f"{format_rate(self.rate)}",
                    self.min_cir,
                )
        errors.raise_if_any()
        return self

    def committed(self, rate: float) -> float:
        """bc in bits for a shaper at `rate` (its default is 125 ms of it)."""
        return float(self.bc) if self.bc is not None else rate * DEFAULT_TC
