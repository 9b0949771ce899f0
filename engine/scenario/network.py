"""Nodes, links (queues, loss, framing) and Frame Relay (switches, PVCs)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from engine.scenario.common import (
    MAX_INT,
    MAX_ITEMS,
    Count,
    Id,
    PositiveByteSize,
    PositiveRate,
    Probability,
    _Errors,
    _Model,
)
from engine.units import Bits, Duration, format_rate


class Node(_Model):
    """A host (ends flows), a router, or a Frame Relay switch."""

    id: Id
    kind: Literal["host", "router", "fr_switch"]


class QueueSpec(_Model):
    """The egress queue of each direction of a link."""

    discipline: Literal["droptail", "red"] = "droptail"
    limit_packets: Count | None = Field(default=None, ge=1)
    """Queue capacity in packets; 100 when neither limit is given."""
    limit_bytes: PositiveByteSize | None = None
    """Queue capacity in bytes, instead of limit_packets."""
    min_th: float = Field(default=5, gt=0, le=1e6)
    """RED: average queue (packets) where early drops start."""
    max_th: float = Field(default=15, gt=0, le=1e6)
    """RED: average queue (packets) where the drop probability reaches max_p."""
    max_p: float = Field(default=0.1, gt=0, le=1)
    """RED: drop probability at max_th."""
    weight: float = Field(default=0.002, gt=0, le=1)
    """RED: weight of the exponential moving average of the queue length."""
    gentle: bool = False
    """RED: ramp from max_p to 1 between max_th and 2 * max_th instead of dropping all."""

    @model_validator(mode="after")
    def _check(self) -> QueueSpec:
        """One limit at most (100 packets by default); RED thresholds in order."""
        errors = _Errors("QueueSpec")
        if self.limit_packets is not None and self.limit_bytes is not None:
            errors.add(
                ("limit_bytes",),
                "exclusive_fields",
                "give limit_packets or limit_bytes, not both",
                self.limit_bytes,
            )
        if self.min_th >= self.max_th:
            errors.add(
                ("max_th",),
                "invalid_range",
                f"max_th {self.max_th:g} must be greater than min_th {self.min_th:g}",
                self.max_th,
            )
        errors.raise_if_any()
        if self.limit_packets is None and self.limit_bytes is None:
            self.limit_packets = 100  # here, not as a field default, so limit_bytes can replace it
        return self


# Which LossSpec fields each loss model takes; the others must keep their defaults.
_LOSS_FIELDS: dict[str, tuple[str, ...]] = {
    "none": (),
    "bernoulli": ("rate",),
    "ber": ("ber",),
    "gilbert_elliott": ("p_gb", "p_bg", "loss_good", "loss_bad"),
    "script": ("drop",),
}
_LOSS_REQUIRED = {"bernoulli": ("rate",), "ber": ("ber",), "gilbert_elliott": ("p_gb", "p_bg")}


class LossSpec(_Model):
    """Random or scripted packet loss on a link."""

    model: Literal["none", "bernoulli", "ber", "gilbert_elliott", "script"] = "none"
    rate: Probability | None = None
    """bernoulli: probability that a packet is lost."""
    ber: float | None = Field(default=None, ge=0, lt=1)
    """ber: bit error rate; a packet of n bits is lost with probability 1 - (1 - ber)^n."""
    p_gb: Probability | None = None
    """gilbert_elliott: probability of moving from the good to the bad state, per packet."""
    p_bg: Probability | None = None
    """gilbert_elliott: probability of moving from the bad to the good state, per packet."""
    loss_good: Probability = 0.0
    """gilbert_elliott: loss probability in the good state."""
    loss_bad: Probability = 1.0
    """gilbert_elliott: loss probability in the bad state."""
    drop: list[Annotated[Count, Field(ge=0)]] = Field(default_factory=list, max_length=100_000)
    """script: 0-based indices of the data packets crossing the link that are dropped."""
    direction: Literal["a_to_b", "b_to_a", "both"] = "both"
    """Which direction of the link loses packets."""

    @field_validator("drop")
    @classmethod
    def _sorted_unique(cls, drop: list[int]) -> list[int]:
        """Sort and deduplicate, so equal scripts compare and hash alike."""
        return sorted(set(drop))

    @model_validator(mode="after")
    def _check(self) -> LossSpec:
        """Each model's required fields are given; other models' fields are not."""
        errors = _Errors("LossSpec")
        takes = _LOSS_FIELDS[self.model]
        for name in _LOSS_REQUIRED.get(self.model, ()):
            if getattr(self, name) is None:
                errors.add((name,), "missing", f"loss model {self.model!r} needs {name}", None)
        if self.model == "script" and not self.drop:
            errors.add(
                ("drop",), "missing", "loss model 'script' needs drop: packet indices", self.drop
            )
        for name, default in _loss_defaults().items():
            value = getattr(self, name)
            if name not in takes and value != default:
                accepted = ", ".join(takes) or "no parameters"
                errors.add(
                    (name,),
                    "field_not_allowed",
                    f"{name} does not apply to loss model {self.model!r} (it takes {accepted})",
                    value,
                )
        errors.raise_if_any()
        return self


_LOSS_DEFAULTS: dict[str, Any] = {}


def _loss_defaults() -> dict[str, Any]:
    """Each model-specific LossSpec field's default, computed once: pydantic inspects the
    factory's signature on every `get_default` call, a third of a millisecond per link."""
    if not _LOSS_DEFAULTS:
        for name in ("rate", "ber", "p_gb", "p_bg", "loss_good", "loss_bad", "drop"):
            field = LossSpec.model_fields[name]
            _LOSS_DEFAULTS[name] = field.get_default(call_default_factory=True)
    return _LOSS_DEFAULTS


class Link(_Model):
    """A full-duplex point-to-point link; each direction has its own egress queue."""

    id: Id
    a: str
    b: str
    rate: PositiveRate
    """Line rate of each direction."""
    delay: Duration = 0.0
    """One-way propagation delay."""
    encap: Literal["ethernet", "ppp", "hdlc", "frame_relay", "atm_aal5", "mpls", "none"] = (
        "ethernet"
    )
    """Link-layer encapsulation: per-packet overhead (ethernet 38 B with payloads padded to
    46 B; ppp, hdlc and frame_relay 8 B; mpls 12 B), the cell tax for atm_aal5 (53-byte
    cells of 48), none for `none` (an ns-2 link: the IP packet is all that is sent).
    frame_relay links also get Frame Relay switching (DE discard, FECN/BECN) under PVCs."""
    overhead_bytes: Count | None = Field(default=None, ge=0, le=65535)
    """Bytes added to every IP packet on the wire, in place of the encapsulation's own
    framing arithmetic (no padding, no cells); None uses the encapsulation's. ns-3's
    PointToPointNetDevice adds 2 (its PPP protocol field)."""
    mtu: int = Field(default=1500, ge=68, le=65535)
    """Largest IP packet the link carries, in bytes."""
    queue: QueueSpec = Field(default_factory=QueueSpec)
    """The egress queue of each direction, unless queue_a_to_b or queue_b_to_a replaces it."""
    queue_a_to_b: QueueSpec | None = None
    """The egress queue at `a` (packets toward `b`) in place of `queue`; None keeps `queue`."""
    queue_b_to_a: QueueSpec | None = None
    """The egress queue at `b` (packets toward `a`) in place of `queue`; None keeps `queue`:
    e.g. RED on the data direction and a plain DropTail for the ACKs."""
    loss: LossSpec = Field(default_factory=LossSpec)

    def queue_of(self, direction: Literal["a_to_b", "b_to_a"]) -> QueueSpec:
        """The queue of one direction of the link."""
        own = self.queue_a_to_b if direction == "a_to_b" else self.queue_b_to_a
        return own if own is not None else self.queue


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
    steps back up by (bc + be) / 16 per Tc until it is back at cir."""
    min_cir: PositiveRate | None = None
    """Floor of BECN shaping; None means cir / 2."""
    residual_error_rate: float = Field(default=0.0, ge=0, lt=1)
    """Probability that a frame is corrupted inside the cloud."""

    @model_validator(mode="after")
    def _check(self) -> Pvc:
        """Default bc to one second of CIR; min_cir cannot exceed cir."""
        errors = _Errors("Pvc")
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
