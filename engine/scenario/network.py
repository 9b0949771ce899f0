"""Nodes and links: queues, loss, framing, rates and delays per direction, shapers."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from engine.scenario.common import (
    Count,
    Id,
    PositiveByteSize,
    PositiveRate,
    Probability,
    _Errors,
    _Model,
)
from engine.scenario.shaping import ShapingSpec
from engine.units import Duration

Direction = Literal["a_to_b", "b_to_a"]
"""One direction of a link: from its `a` end to its `b` end, or back."""


class Node(_Model):
    """A host (ends flows), a router, or a Frame Relay switch."""

    id: Id
    kind: Literal["host", "router", "fr_switch"]
    egress: Literal["backpressure", "drop"] | None = None
    """Hosts only (null elsewhere; a host's null becomes `backpressure`): what the host's
    own interfaces do when its TCP senders outrun them.
    `backpressure` (Linux, the default): data waits in the socket and nothing of a TCP
    connection is dropped at the host's own interface. A sender keeps at most ~1 ms of
    its pacing rate, and at least two packets, in the interface (TCP Small Queues; at most
    4 MB unless paced); it sends no new segment while the interface's queue is full and
    takes that as local congestion (Linux's tcp_enter_cwr): ssthresh from the variant, cwnd
    down to it, once per window. UDP datagrams beyond the queue are still dropped.
    `drop`: the interface's queue drops what does not fit, as a router's does (ns-2's
    hosts: a DropTail queue on every link). Routers and switches always drop."""

    @model_validator(mode="after")
    def _check(self) -> Node:
        """`egress` is a host's (a router forwards: it has no sockets to hold data back);
        a host's defaults to backpressure."""
        if self.kind == "host":
            if self.egress is None:
                self.egress = "backpressure"  # here, so that a router's stays null
        elif self.egress is not None:
            errors = _Errors("Node")
            errors.add(
                ("egress",),
                "field_not_allowed",
                f"egress applies to hosts only, not to a {self.kind}: its queues drop",
                self.egress,
            )
            errors.raise_if_any()
        return self


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
    """Line rate from `a` to `b`, and from `b` to `a` unless rate_b_to_a replaces it."""
    rate_b_to_a: PositiveRate | None = None
    """Line rate from `b` to `a` in place of `rate`: an asymmetric link (ADSL, cable, a
    satellite return channel); None keeps `rate`."""
    delay: Duration = 0.0
    """One-way propagation delay from `a` to `b`, and from `b` to `a` unless delay_b_to_a
    replaces it."""
    delay_b_to_a: Duration | None = None
    """One-way propagation delay from `b` to `a` in place of `delay` (e.g. a terrestrial
    return path beside a satellite downlink); None keeps `delay`."""
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
    shaping_a_to_b: ShapingSpec | None = None
    """Traffic shaping of the packets leaving `a` toward `b` (a router's interface); its
    rate is required, and it cannot adapt (BECN is a PVC's)."""
    shaping_b_to_a: ShapingSpec | None = None
    """Traffic shaping of the packets leaving `b` toward `a`, as shaping_a_to_b."""

    @model_validator(mode="after")
    def _check_shaping(self) -> Link:
        """An interface shaper has a rate of its own and a fixed one."""
        errors = _Errors("Link")
        for field in ("shaping_a_to_b", "shaping_b_to_a"):
            spec: ShapingSpec | None = getattr(self, field)
            if spec is None:
                continue
            if spec.rate is None:
                errors.add((field, "rate"), "missing", "a link's shaper needs its rate", None)
            if spec.adaptive != "none":
                errors.add(
                    (field, "adaptive"),
                    "field_not_allowed",
                    "adaptive shaping follows a PVC's BECN: shape the PVC instead",
                    spec.adaptive,
                )
        errors.raise_if_any()
        return self

    def shaping_of(self, direction: Direction) -> ShapingSpec | None:
        """The shaper of one direction of the link, if any."""
        return self.shaping_a_to_b if direction == "a_to_b" else self.shaping_b_to_a

    def queue_of(self, direction: Direction) -> QueueSpec:
        """The queue of one direction of the link."""
        own = self.queue_a_to_b if direction == "a_to_b" else self.queue_b_to_a
        return own if own is not None else self.queue

    def direction_from(self, node: str) -> Direction:
        """The direction of the link that leaves `node` (one of its two ends)."""
        return "a_to_b" if node == self.a else "b_to_a"

    def rate_from(self, node: str) -> float:
        """Line rate of the direction leaving `node`, bit/s."""
        if node != self.a and self.rate_b_to_a is not None:
            return float(self.rate_b_to_a)
        return float(self.rate)

    def delay_from(self, node: str) -> float:
        """One-way propagation delay of the direction leaving `node`, s."""
        if node != self.a and self.delay_b_to_a is not None:
            return float(self.delay_b_to_a)
        return float(self.delay)
