"""The scenario language: the pydantic models of docs/scenario.md and their whole-scenario rules.

Owns what a client posts and the engine simulates: `Scenario` and its parts, the checks
that need the whole scenario (unique ids, references, routes, MTU) reported at the
offending field's path, the canonical JSON and hash that identify what is simulated,
advisory `warnings()`, and `load_scenario` for JSON or YAML text and files.

After validation every quantity is an SI number (seconds, bytes, bit/s; see
engine.units), so a scenario dumps, hashes and round-trips the same however it was written.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError, core_schema

from engine.example import EXAMPLE_SCENARIO
from engine.net import link_wire
from engine.routing import Hop, Topology
from engine.units import Bits, ByteSize, Duration, Rate, format_duration, format_rate, format_size

__all__ = [
    "CaptureSpec",
    "DelayedAckSpec",
    "Flow",
    "FrSwitchSpec",
    "FrameRelaySpec",
    "Link",
    "LossSpec",
    "Node",
    "Pvc",
    "QueueSpec",
    "Scenario",
    "ScenarioFormatError",
    "TcpBulkFlow",
    "TcpSpec",
    "UdpCbrFlow",
    "load_scenario",
]

# Ids appear in dotted parameter paths ("flows.backup.tcp.rcv_buf") and series keys
# ("link.access1.branch>cloud"), so they cannot contain dots, '>' or ':'.
Id = Annotated[
    str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_\-]*$")
]
PositiveDuration = Annotated[Duration, Field(gt=0)]
# Integers stay exact in every JSON reader (doubles) and fit the 64-bit JSON encoders and
# databases we store scenarios with; beyond, a request would be an overflow, not a network.
MAX_INT = 2**53
Count = Annotated[int, Field(le=MAX_INT)]
PositiveByteSize = Annotated[ByteSize, Field(gt=0, le=MAX_INT)]
PositiveRate = Annotated[Rate, Field(gt=0)]
Probability = Annotated[float, Field(ge=0, le=1)]

IP_TCP_HEADERS = 40  # bytes of IPv4 + TCP headers without options: MSS <= MTU - 40
IP_UDP_HEADERS = 28
MAX_UNSCALED_WINDOW = 65_535
MAX_SCALED_WINDOW = 65_535 << 14  # RFC 7323 section 2.3: shift count at most 14
MAX_ITEMS = 10_000  # per list: keeps validation and routing bounded for any request
# Packet captures are kept in memory until the run ends and stored with its result: these
# bound one capture, all of a run's, and the file bytes they can make (headers + snaplen).
MAX_CAPTURE_PACKETS = 100_000
MAX_CAPTURE_TOTAL = 200_000
MAX_CAPTURE_BYTES = 64 * 2**20
MAX_CAPTURES = 16
PCAP_RECORD_HEADER = 16  # libpcap's per-packet header


class _Errors:
    """Line errors with their own `loc`, raised together as one ValidationError."""

    def __init__(self, title: str) -> None:
        """Start an empty collection for the model named `title`."""
        self.title = title
        self.lines: list[InitErrorDetails] = []

    def add(self, loc: tuple[str | int, ...], error_type: str, message: str, value: Any) -> None:
        """Record an error of `error_type` at `loc` (relative to the model validated)."""
        self.lines.append(
            {"type": PydanticCustomError(error_type, message), "loc": loc, "input": value}
        )

    def raise_if_any(self) -> None:
        """Raise the recorded errors; pydantic prefixes each loc with the model's own path."""
        if self.lines:
            raise ValidationError.from_exception_data(self.title, self.lines)


class _Model(BaseModel):
    """Base of every scenario model: unknown fields are errors, docstrings document fields."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, allow_inf_nan=False)


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


def _quickack_switch(value: Any) -> Any:
    """`true`/`false` are accepted for the default behaviour and for none."""
    if value is True:
        return "linux"
    if value is False:
        return "off"
    return value


class DelayedAckSpec(_Model):
    """Receiver delayed ACKs (RFC 1122 4.2.3.2, RFC 5681 4.2)."""

    enabled: bool = True
    count: Count = Field(default=2, ge=1)
    """ACK at least every `count` full-sized segments."""
    timeout: Duration = Field(default=0.2, gt=0, le=0.5)
    """Longest delay of an ACK; RFC 1122 caps it at 0.5 s."""
    quickack: Annotated[Literal["linux", "ns3", "off"], BeforeValidator(_quickack_switch)] = "linux"
    """ACK the first data segments of a connection at once instead of delaying them, so
    that a sender with a small initial window does not wait for the delayed-ACK timeout.
    `linux` (the default; `true` means the same): Linux's quickack mode on the first data
    segment, min(16, rcv_wnd / (2 * MSS)) immediate ACKs (at least 2), with rcv_wnd
    Linux's initial receive window, at most 10 segments of 1460 B (so 5 ACKs for a
    64 KB buffer); `ns3`: ns-3's TcpSocketBase, the first data segment only; `off`
    (`false`): every segment may wait, as ns-2's DelAck sink and OPNET."""


class TcpSpec(_Model):
    """TCP sender and receiver settings of a tcp_bulk flow."""

    variant: Literal["none", "tahoe", "reno", "newreno", "sack", "vegas", "cubic", "bbr"] = (
        "newreno"
    )
    """Congestion control; `none` is a fixed window with go-back-N on timeout; `bbr` is BBR
    v1 (Linux's tcp_bbr, ns-3's TcpBbr: rate-based, paced, not loss-based)."""
    sack: bool = False
    """SACK loss recovery (RFC 6675) under any variant."""
    fast_retransmit: bool = True
    """false: a timeout-only sender: duplicate ACKs are counted but trigger no fast
    retransmit, fast recovery or Limited Transmit, and every loss waits for the
    retransmission timer (slow start from one segment after it). The variant's congestion
    control (slow start, congestion avoidance) is unchanged; OPNET's TCP with "Fast
    Retransmit" and "Fast Recovery" disabled (seed 000's "without Reno")."""
    mss: Count = Field(default=1460, ge=64)
    """Maximum segment size in bytes; at most path MTU - 40."""
    rcv_buf: PositiveByteSize = 65535
    """Receive buffer, the advertised window; above 65,535 B it needs window_scaling."""
    snd_buf: PositiveByteSize | None = None
    """Send buffer; None means no limit."""
    window_scaling: bool = False
    """RFC 7323 window scale option."""
    initial_cwnd: int = Field(default=1, ge=1, le=100)
    """Initial congestion window in segments."""
    delayed_ack: DelayedAckSpec = Field(default_factory=DelayedAckSpec)
    min_rto: PositiveDuration = 1.0
    """Lower bound of the retransmission timeout (RFC 6298 2.4)."""
    max_rto: PositiveDuration = 60.0
    """Upper bound of the retransmission timeout (RFC 6298 2.5)."""
    initial_rto: PositiveDuration = 1.0
    """Retransmission timeout before the first RTT sample (RFC 6298 2.1)."""
    handshake: bool = True
    """Open with SYN / SYN-ACK, counted in the completion time."""
    syn_options: int = Field(default=12, ge=0, le=40, multiple_of=4)
    """Bytes of TCP options on the SYN and the SYN-ACK (a 40 B header plus these). The
    default 12 is MSS (4), window scale (3) and SACK-permitted (2) padded with NOPs;
    Linux also sends timestamps (20 B); ns-2's SYN has none (0)."""
    limited_transmit: bool = True
    """Limited Transmit (RFC 3042): a new segment on each of the first two duplicate
    ACKs. On by default, as in Linux, ns-3 (LimitedTransmit) and ns-2 (singledup_); no
    effect on variant none."""
    timer_granularity: PositiveDuration | None = None
    """The tick of the sender's retransmission clock. None (the default): a continuous
    clock, RTT samples exact and G = 1 ms in RFC 6298's RTO formula, close to Linux
    (microsecond RTTs, a millisecond-jiffy RTO timer at HZ=1000). A duration (e.g. 10 ms,
    ns-2's tcpTick_; 500 ms, the BSD slow timer's): RTT samples count whole ticks, the RTO
    is rounded up to whole ticks and G is one tick. The delayed-ACK timer is not ticked
    (Linux and ns-2 schedule it on its own)."""
    recovery: Literal["classic", "prr"] = "prr"
    """The window during fast recovery. `prr`: Proportional Rate Reduction (RFC 6937,
    RFC 9937), the default of Linux and ns-3: each ACK lets out data in proportion to what
    it reports delivered, so the data in flight falls to ssthresh over one round trip.
    `classic`: RFC 5681 / RFC 6582 window inflation (cwnd = ssthresh + 3 SMSS, one SMSS
    more per duplicate ACK), or with SACK RFC 6675's cwnd = ssthresh, as ns-2 and OPNET
    run it. Variants tahoe and none have no fast recovery and ignore it."""
    slow_start: Literal["standard", "hystart", "hystart++"] | None = None
    """How slow start ends besides a loss. `standard`: RFC 5681, at ssthresh or the first
    loss. `hystart`: HyStart as Linux's CUBIC runs it: from 16 segments on, leave slow
    start when the round's ACK train lasts over half the smallest RTT or its RTT rises by
    clamp(min RTT / 8, 4 ms, 16 ms). `hystart++`: RFC 9406 (Windows, FreeBSD): on that RTT
    rise, 5 rounds of Conservative Slow Start at a quarter of the growth, then congestion
    avoidance; in the first slow start only. None (the default) is the variant's own:
    `hystart` for cubic (on by default in Linux and ns-3), `standard` for the others (no
    delay exit in Linux's Reno or ns-3's NewReno; Vegas has its own, `vegas_gamma`)."""
    prr_bound: Literal["ssrb", "crb"] = "ssrb"
    """recovery prr: the bound once pipe is below ssthresh. `ssrb` (slow-start reduction
    bound, Linux's): up to one SMSS more than delivered on each ACK that advances snd_una;
    `crb` (conservative): never more than delivered."""
    vegas_alpha: float = Field(default=2, gt=0, le=1e6)
    """vegas: fewest extra segments queued in the path before cwnd grows no more."""
    vegas_beta: float = Field(default=4, gt=0, le=1e6)
    """vegas: most extra segments queued in the path before cwnd shrinks."""
    vegas_gamma: float = Field(default=1, gt=0, le=1e6)
    """vegas: extra segments queued that end slow start."""
    vegas_loss: Literal["linux", "ns3", "classic"] = "linux"
    """vegas: the response to loss and how BaseRTT is kept. Both references stop Vegas
    outside the Open state (recovery and the slow start after a timeout are Reno's), decide
    on a round only with 3 or more per-ACK RTT samples (else Reno's growth) and keep
    ssthresh >= 3/4 cwnd. `linux` (tcp_vegas): Reno's halving on loss; a timeout resets
    Vegas and BaseRTT is learnt again. `ns3` (TcpVegas): ssthresh = max(min(ssthresh,
    cwnd - 1 MSS), 2 MSS) on loss; BaseRTT kept. `classic`: the engine's Vegas before
    these were modelled (decisions in every phase from one timed segment per round trip,
    Reno's halving), which under heavy random loss delivers well above both; the seed
    presets pin it."""
    cubic_c: float = Field(default=0.4, gt=0, le=1e3)
    """cubic: scaling constant C (RFC 9438)."""
    cubic_beta: float = Field(default=0.7, gt=0, lt=1)
    """cubic: multiplicative decrease factor (RFC 9438)."""
    cubic_fast_convergence: bool = True
    cubic_tcp_friendliness: bool = True
    pacing: bool | None = None
    """Pace segments: at Linux's rate, cwnd/srtt times 2 while cwnd < ssthresh/2, else
    times 1.2 (the first 10 segments leave unpaced); `bbr` paces at its own rate. Null
    means the variant's default: on for `bbr` (which rejects false), off for the others,
    as in Linux without the fq qdisc and in ns-3."""

    @model_validator(mode="after")
    def _check(self) -> TcpSpec:
        """RTO bounds and Vegas thresholds in order."""
        errors = _Errors("TcpSpec")
        if self.min_rto > self.max_rto:
            errors.add(
                ("max_rto",),
                "invalid_range",
                f"max_rto {format_duration(self.max_rto)} is below "
                f"min_rto {format_duration(self.min_rto)}",
                self.max_rto,
            )
        if self.variant == "bbr" and self.pacing is False:
            errors.add(
                ("pacing",),
                "invalid_combination",
                "bbr always paces: its rate is its model of the path",
                self.pacing,
            )
        if self.variant == "none" and self.pacing:
            errors.add(
                ("pacing",),
                "invalid_combination",
                "pacing follows cwnd, which variant none does not have",
                self.pacing,
            )
        if self.variant == "none" and self.slow_start not in (None, "standard"):
            errors.add(
                ("slow_start",),
                "invalid_combination",
                f"slow_start {self.slow_start} needs a congestion window: variant none "
                "sends a fixed window and has no slow start",
                self.slow_start,
            )
        if self.variant == "bbr" and self.slow_start not in (None, "standard"):
            errors.add(
                ("slow_start",),
                "invalid_combination",
                f"slow_start {self.slow_start} does not apply to bbr: it leaves STARTUP by its "
                "own rule (three rounds without 25% more bandwidth)",
                self.slow_start,
            )
        if self.vegas_alpha > self.vegas_beta:
            errors.add(
                ("vegas_beta",),
                "invalid_range",
                f"vegas_beta {self.vegas_beta:g} is below vegas_alpha {self.vegas_alpha:g}",
                self.vegas_beta,
            )
        errors.raise_if_any()
        return self


class _FlowBase(_Model):
    """Fields every flow has."""

    id: Id
    src: str
    """Sending host."""
    dst: str
    """Receiving host."""
    start: Duration = 0.0
    """When the flow starts, in simulated time."""
    stop: Duration | None = None
    """When the flow stops sending; None means at the end of the run."""

    @model_validator(mode="after")
    def _check_times(self) -> _FlowBase:
        """A flow stops after it starts."""
        errors = _Errors(type(self).__name__)
        if self.stop is not None and self.stop <= self.start:
            errors.add(
                ("stop",),
                "invalid_range",
                f"stop {format_duration(self.stop)} must be after start "
                f"{format_duration(self.start)}",
                self.stop,
            )
        errors.raise_if_any()
        return self


class TcpBulkFlow(_FlowBase):
    """An FTP-like bulk transfer over TCP."""

    kind: Literal["tcp_bulk"]
    bytes: PositiveByteSize | None = None
    """File size; None means unlimited until stop or the end of the run."""
    tcp: TcpSpec = Field(default_factory=TcpSpec)


class UdpCbrFlow(_FlowBase):
    """Constant-bit-rate UDP traffic."""

    kind: Literal["udp_cbr"]
    rate: PositiveRate
    """Sending rate of UDP payload."""
    packet_size: Annotated[ByteSize, Field(ge=1, le=65507)] = 512
    """UDP payload bytes per datagram."""


class CaptureSpec(_Model):
    """A packet capture of a link, as a capture on one end's interface would see it, served
    as a libpcap file that Wireshark reads (`GET /v1/runs/{id}/pcap?link=...&direction=...`).

    A packet leaving the capturing end is recorded when its transmission starts, after its
    egress queue (packets the queue drops were never sent), whether or not the link then
    loses it; a packet arriving there is recorded when its last bit has arrived (packets
    lost on the link never arrive). Headers are real IPv4 and TCP/UDP: see "Packet
    captures" in docs/scenario.md for the addresses, ports and sequence numbers."""

    link: str
    """Id of the link captured."""
    direction: Literal["a_to_b", "b_to_a", "both"]
    """`a_to_b`: packets from the link's `a` node to its `b` node; `b_to_a` the reverse;
    `both`: the two directions in one file, in time order (what Wireshark's TCP analysis
    needs: a flow's data and its ACKs)."""
    at: Literal["a", "b"] | None = None
    """The end of the link whose interface is captured; None means the sending end of a
    one-way capture (`a` for a_to_b, `b` for b_to_a) and `a` for both."""
    flows: list[str] | None = Field(default=None, max_length=MAX_ITEMS)
    """Only these flows' packets; None means every flow's."""
    max_packets: int = Field(ge=1, le=MAX_CAPTURE_PACKETS)
    """The first this many packets are kept; the run's result counts the ones after."""
    snaplen: int = Field(default=96, ge=80, le=65535)
    """Bytes kept of each packet, IP header first (80 keeps every IPv4 + TCP header whole);
    the payload is zeros and each record keeps the packet's original length."""

    @model_validator(mode="after")
    def _default_end(self) -> CaptureSpec:
        """Name the capturing end when it was left out, so equal captures hash alike."""
        if self.at is None:
            self.at = "b" if self.direction == "b_to_a" else "a"
        return self


# pydantic's own error types; rebuilding one of them by name regenerates its message.
_KNOWN_ERROR_TYPES = frozenset(get_args(core_schema.ErrorType))


def _without_union_tag(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """Drop the union tag from error locs: `flows.0.bytes`, not `flows.0.tcp_bulk.bytes`.

    Paths in errors then match the document the client sent (and our own whole-scenario
    errors), which is what problem+json reports.
    """
    try:
        return handler(value)
    except ValidationError as exc:
        tag = value.get("kind") if isinstance(value, Mapping) else getattr(value, "kind", None)
        lines: list[InitErrorDetails] = []
        for error in exc.errors():
            loc = error["loc"]
            if tag is not None and loc[:1] == (tag,):
                loc = loc[1:]
            line: InitErrorDetails
            if error["type"] in _KNOWN_ERROR_TYPES:
                line = {"type": error["type"], "loc": loc, "input": error["input"]}
                if "ctx" in error:
                    line["ctx"] = error["ctx"]
            else:
                error_type = PydanticCustomError(error["type"], error["msg"])
                line = {"type": error_type, "loc": loc, "input": error["input"]}
            lines.append(line)
        raise ValidationError.from_exception_data(exc.title, lines) from None


Flow = Annotated[
    Annotated[TcpBulkFlow | UdpCbrFlow, Field(discriminator="kind")],
    WrapValidator(_without_union_tag),
]


class Scenario(_Model):
    """A complete simulation: topology, Frame Relay PVCs, traffic, and run settings."""

    model_config = ConfigDict(json_schema_extra={"examples": [EXAMPLE_SCENARIO]})

    name: str = Field(min_length=1, max_length=200)
    description: str = Field(default="", max_length=10_000)
    seed: int = Field(default=1, ge=0, lt=2**63)
    """Run seed; a run request may override it."""
    duration: PositiveDuration = 3600.0
    """Simulated-time cap."""
    stop_when_done: bool = True
    """End the run when every finite flow has finished."""
    sample_interval: PositiveDuration = 0.1
    """Sampling period of rate-type series."""
    nodes: list[Node] = Field(min_length=2, max_length=MAX_ITEMS)
    links: list[Link] = Field(min_length=1, max_length=MAX_ITEMS)
    frame_relay: FrameRelaySpec | None = None
    flows: list[Flow] = Field(min_length=1, max_length=MAX_ITEMS)
    capture: list[CaptureSpec] = Field(default_factory=list, max_length=MAX_CAPTURES)
    """Packet captures to take (libpcap files of link directions); none by default."""

    @field_validator("name", "description")
    @classmethod
    def _no_nul(cls, text: str) -> str:
        """Text, not binary: a NUL cannot be stored (PostgreSQL text) or shown (terminals)."""
        if "\x00" in text:
            raise PydanticCustomError("nul_character", "must not contain NUL (U+0000) characters")
        return text

    @model_validator(mode="after")
    def _check_whole(self) -> Scenario:
        """Cross-references: unique ids, existing endpoints, a route and a fitting MSS per flow."""
        errors = _Errors("Scenario")
        if self.sample_interval > self.duration:
            errors.add(
                ("sample_interval",),
                "invalid_range",
                f"sample_interval {format_duration(self.sample_interval)} exceeds "
                f"duration {format_duration(self.duration)}",
                self.sample_interval,
            )
        before_topology = len(errors.lines)
        _check_unique(errors, ("nodes",), self.nodes)
        _check_unique(errors, ("links",), self.links)
        nodes: dict[str, Node] = {}
        for node in self.nodes:
            nodes.setdefault(node.id, node)
        for index, link in enumerate(self.links):
            for end in ("a", "b"):
                if getattr(link, end) not in nodes:
                    _unknown_node(errors, ("links", index, end), getattr(link, end))
            if link.a == link.b:
                errors.add(
                    ("links", index, "b"),
                    "same_endpoints",
                    f"link {link.id!r} connects node {link.a!r} to itself",
                    link.b,
                )
        # Routes are only meaningful on a sound topology; otherwise report the topology alone.
        topology = Topology(self) if len(errors.lines) == before_topology else None
        if self.frame_relay is not None:
            self._check_pvcs(errors, nodes, topology)
        self._check_flows(errors, nodes, topology)
        self._check_captures(errors)
        errors.raise_if_any()
        return self

    def _check_captures(self, errors: _Errors) -> None:
        """Captures name existing links and flows, take each link direction once, and stay
        within the run's bounds on packets and bytes."""
        links = {link.id: link for link in self.links}
        flows = {flow.id for flow in self.flows}
        taken: dict[tuple[str, str], int] = {}
        total = size = 0
        for index, capture in enumerate(self.capture):
            loc = ("capture", index)
            link = links.get(capture.link)
            if link is None:
                errors.add(
                    (*loc, "link"),
                    "unknown_link",
                    f"no link has id {capture.link!r}",
                    capture.link,
                )
            for k, flow_id in enumerate(capture.flows or ()):
                if flow_id not in flows:
                    errors.add(
                        (*loc, "flows", k), "unknown_flow", f"no flow has id {flow_id!r}", flow_id
                    )
            ways = ("a_to_b", "b_to_a") if capture.direction == "both" else (capture.direction,)
            for way in ways:
                other = taken.setdefault((capture.link, way), index)
                if other != index:
                    errors.add(
                        (*loc, "direction"),
                        "duplicate_capture",
                        f"direction {way} of link {capture.link!r} is already captured by "
                        f"capture[{other}]",
                        capture.direction,
                    )
                    break
            total += capture.max_packets
            # A record holds at most the link's MTU (a whole packet) or the snap length.
            kept = min(capture.snaplen, link.mtu) if link is not None else capture.snaplen
            size += capture.max_packets * (PCAP_RECORD_HEADER + kept)
        if total > MAX_CAPTURE_TOTAL:
            errors.add(
                ("capture",),
                "too_many_packets",
                f"the captures ask for {total:,} packets in all; at most "
                f"{MAX_CAPTURE_TOTAL:,} per run",
                total,
            )
        elif size > MAX_CAPTURE_BYTES:
            errors.add(
                ("capture",),
                "capture_too_large",
                f"the captures could make {size / 2**20:,.1f} MiB of files; at most "
                f"{MAX_CAPTURE_BYTES // 2**20} MiB per run: lower max_packets or snaplen",
                size,
            )

    def _check_pvcs(
        self, errors: _Errors, nodes: dict[str, Node], topology: Topology | None
    ) -> None:
        """PVC ids and DLCIs are unique; each joins two distinct, connected routers."""
        assert self.frame_relay is not None
        base = ("frame_relay", "pvcs")
        pvcs = self.frame_relay.pvcs
        _check_unique(errors, base, pvcs)
        _check_unique(errors, base, pvcs, field="dlci")
        for index, pvc in enumerate(pvcs):
            ends_ok = True
            for end in ("src", "dst"):
                ends_ok &= _check_node(
                    errors, (*base, index, end), getattr(pvc, end), nodes, "router"
                )
            if pvc.src == pvc.dst:
                errors.add(
                    (*base, index, "dst"),
                    "same_endpoints",
                    f"PVC {pvc.id!r} starts and ends at router {pvc.src!r}",
                    pvc.dst,
                )
            elif ends_ok and topology is not None and topology.route(pvc.src, pvc.dst) is None:
                errors.add(
                    (*base, index, "dst"),
                    "no_route",
                    f"no route from router {pvc.src!r} to router {pvc.dst!r} for PVC {pvc.id!r}",
                    pvc.dst,
                )

    def _check_flows(
        self, errors: _Errors, nodes: dict[str, Node], topology: Topology | None
    ) -> None:
        """Flow ids are unique; each runs host to host over a route its MSS fits, in time."""
        _check_unique(errors, ("flows",), self.flows)
        for index, flow in enumerate(self.flows):
            loc = ("flows", index)
            src_ok = _check_node(errors, (*loc, "src"), flow.src, nodes, "host")
            dst_ok = _check_node(errors, (*loc, "dst"), flow.dst, nodes, "host")
            if flow.start >= self.duration:
                errors.add(
                    (*loc, "start"),
                    "invalid_range",
                    f"start {format_duration(flow.start)} is not before "
                    f"duration {format_duration(self.duration)}",
                    flow.start,
                )
            if flow.src == flow.dst:
                errors.add(
                    (*loc, "dst"),
                    "same_endpoints",
                    f"flow {flow.id!r} sends from host {flow.src!r} to itself",
                    flow.dst,
                )
                continue
            if not (src_ok and dst_ok and topology is not None):
                continue
            hops = topology.route(flow.src, flow.dst)
            if hops is None:
                errors.add(
                    (*loc, "dst"),
                    "no_route",
                    f"no route from {flow.src!r} to {flow.dst!r} "
                    "(only routers and fr_switches forward; hosts carry no transit traffic)",
                    flow.dst,
                )
            elif isinstance(flow, TcpBulkFlow):
                link = topology.narrowest(hops)
                largest = link.mtu - IP_TCP_HEADERS
                if flow.tcp.mss > largest:
                    errors.add(
                        (*loc, "tcp", "mss"),
                        "mss_exceeds_mtu",
                        f"mss {flow.tcp.mss} B does not fit the path MTU {link.mtu} B "
                        f"(link {link.id!r}) minus {IP_TCP_HEADERS} B of IP and TCP headers: "
                        f"at most {largest} B",
                        flow.tcp.mss,
                    )

    def canonical_json(self) -> str:
        """What is simulated: sorted, compact JSON of SI numbers without name, description, seed."""
        exclude = {"name", "description", "seed"}
        if not self.capture:
            exclude.add("capture")  # so scenarios from before captures keep their hash
        data = self.model_dump(mode="json", exclude=exclude)
        return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)

    def scenario_hash(self) -> str:
        """Identity of what is simulated: "sha256:" and the hex digest of canonical_json()."""
        return "sha256:" + hashlib.sha256(self.canonical_json().encode()).hexdigest()

    def warnings(self, topology: Topology | None = None) -> list[str]:
        """Legal but suspicious settings, and what the engine will do about them; pass the
        scenario's `Topology` when the caller has one."""
        if topology is None:
            topology = Topology(self)
        found: list[str] = []
        for link in self.links:
            found.extend(_queue_warnings(link))
        if self.frame_relay is not None:
            frames = self._largest_frames(topology)
            for pvc in self.frame_relay.pvcs:
                found.extend(_pvc_warnings(topology, pvc, frames.get(pvc.id)))
        for flow in self.flows:
            hops = topology.route(flow.src, flow.dst) or []
            found.extend(self._flow_warnings(flow, topology, hops))
        return found

    def _largest_frames(self, topology: Topology) -> dict[str, tuple[int, str, str]]:
        """Per PVC, the largest frame a flow sends through it: (frame bits on the PVC's
        first link, flow id, link id)."""
        links = {link.id: link for link in self.links}
        largest: dict[str, tuple[int, str, str]] = {}
        for flow in self.flows:
            hops = topology.route(flow.src, flow.dst)
            span = topology.pvc_span(hops) if hops else None
            if span is None or hops is None:
                continue
            size = (
                flow.tcp.mss + IP_TCP_HEADERS
                if isinstance(flow, TcpBulkFlow)
                else flow.packet_size + IP_UDP_HEADERS
            )
            link = links[hops[span.first].link_id]
            bits = link_wire(link, size) * 8
            if bits > largest.get(span.pvc.id, (0, "", ""))[0]:
                largest[span.pvc.id] = (bits, flow.id, link.id)
        return largest

    def _flow_warnings(
        self, flow: TcpBulkFlow | UdpCbrFlow, topology: Topology, hops: list[Hop]
    ) -> list[str]:
        """Warnings about one flow on its route."""
        path = f"flows.{flow.id}"
        found: list[str] = []
        if flow.stop is not None and flow.stop > self.duration:
            found.append(
                f"{path}.stop {format_duration(flow.stop)} is after duration "
                f"{format_duration(self.duration)}: the flow ends at "
                f"{format_duration(self.duration)}"
            )
        if isinstance(flow, TcpBulkFlow):
            found.extend(_tcp_warnings(path, flow.tcp))
            if flow.bytes is not None and hops:
                found.extend(self._completion_warnings(path, flow, topology, hops))
        elif hops:
            bottleneck = topology.bottleneck(hops)
            if flow.rate > bottleneck.rate:
                found.append(
                    f"{path}.rate {format_rate(flow.rate)} exceeds the bottleneck "
                    f"{format_rate(bottleneck.rate)} (link {bottleneck.id}): "
                    "its queue will overflow"
                )
            link = topology.narrowest(hops)
            if flow.packet_size + IP_UDP_HEADERS > link.mtu:
                found.append(
                    f"{path}.packet_size {format_size(flow.packet_size)} plus "
                    f"{IP_UDP_HEADERS} B of UDP and IP headers exceeds the path MTU "
                    f"{format_size(link.mtu)} (link {link.id})"
                )
        return found

    def _completion_warnings(
        self, path: str, flow: TcpBulkFlow, topology: Topology, hops: list[Hop]
    ) -> list[str]:
        """Warn when even an ideal sender cannot move `flow.bytes` before the run ends."""
        assert flow.bytes is not None
        bottleneck = topology.bottleneck(hops)
        rtt = 2 * sum(link.delay for link in topology.links_on(hops))
        window = _effective_window(flow.tcp)
        transfer = flow.bytes * 8 / bottleneck.rate
        limits = f"bottleneck {format_rate(bottleneck.rate)} on link {bottleneck.id}"
        if rtt > 0:
            # At most one window per round trip, and the last byte still needs half an RTT.
            transfer = max(transfer, flow.bytes / window * rtt) + rtt / 2
            limits += f"; window {format_size(window)} per {format_duration(rtt)} round trip"
            if flow.tcp.handshake:
                transfer += rtt
        needed = flow.start + transfer
        deadline, reason = self.duration, "duration"
        if flow.stop is not None and flow.stop < deadline:
            deadline, reason = flow.stop, "stop"
        if needed <= deadline:
            return []
        return [
            f"{path} cannot deliver {format_size(flow.bytes)} by {format_duration(deadline)} "
            f"({reason}): it needs at least {format_duration(needed)} ({limits})"
        ]


def _effective_window(tcp: TcpSpec) -> int:
    """The largest flight the receive window (as capped by RFC 7323) and send buffer allow."""
    window = min(tcp.rcv_buf, MAX_SCALED_WINDOW if tcp.window_scaling else MAX_UNSCALED_WINDOW)
    return window if tcp.snd_buf is None else min(window, tcp.snd_buf)


def _tcp_warnings(path: str, tcp: TcpSpec) -> list[str]:
    """Warnings about TCP settings alone."""
    found: list[str] = []
    cap = MAX_SCALED_WINDOW if tcp.window_scaling else MAX_UNSCALED_WINDOW
    if tcp.rcv_buf > cap:
        condition = "with" if tcp.window_scaling else "without"
        found.append(
            f"{path}.tcp.rcv_buf {tcp.rcv_buf} B exceeds {format_size(cap)} {condition} "
            f"window_scaling: capped at {format_size(cap)} (RFC 7323)"
        )
    window = min(tcp.rcv_buf, cap)
    if tcp.snd_buf is not None and tcp.snd_buf < window:
        found.append(
            f"{path}.tcp.snd_buf {tcp.snd_buf} B is smaller than the receive window "
            f"{format_size(window)}: the send buffer limits the flight size"
        )
    if window < tcp.mss:
        found.append(
            f"{path}.tcp.rcv_buf {tcp.rcv_buf} B is smaller than one segment "
            f"(mss {format_size(tcp.mss)}): segments are cut to the window"
        )
    if not tcp.min_rto <= tcp.initial_rto <= tcp.max_rto:
        found.append(
            f"{path}.tcp.initial_rto {format_duration(tcp.initial_rto)} is outside "
            f"[min_rto {format_duration(tcp.min_rto)}, max_rto {format_duration(tcp.max_rto)}]: "
            "the bounds apply"
        )
    if tcp.variant == "none" and tcp.sack:
        found.append(f"{path}.tcp.sack has no effect with variant none (go-back-N on timeout)")
    return found


def _queue_warnings(link: Link) -> list[str]:
    """Warnings about a link's queues."""
    found = []
    for field in ("queue", "queue_a_to_b", "queue_b_to_a"):
        queue = getattr(link, field)
        if (
            queue is not None
            and queue.discipline == "red"
            and queue.limit_packets is not None
            and queue.max_th >= queue.limit_packets
        ):
            found.append(
                f"links.{link.id}.{field}.max_th {queue.max_th:g} is not below limit_packets "
                f"{queue.limit_packets}: the queue overflows before RED's max_th is reached"
            )
    return found


def _pvc_warnings(topology: Topology, pvc: Pvc, largest: tuple[int, str, str] | None) -> list[str]:
    """Warnings about a PVC's contract against the links it crosses and the frames of the
    flows it carries (`largest`: see Scenario._largest_frames)."""
    path = f"frame_relay.pvcs.{pvc.id}"
    found: list[str] = []
    assert pvc.bc is not None
    if largest is not None and pvc.bc + pvc.be < largest[0]:
        bits, flow_id, link_id = largest
        found.append(
            f"{path}: bc + be ({pvc.bc + pvc.be:,.0f} bit) is smaller than one frame of flow "
            f"{flow_id} ({bits:,} bit on link {link_id}): the policer discards every such "
            "frame, so the PVC delivers none of them; raise bc (or be) to at least one frame"
        )
    hops = topology.route(pvc.src, pvc.dst)
    if hops:
        bottleneck = topology.bottleneck(hops)
        if pvc.cir > bottleneck.rate:
            found.append(
                f"{path}.cir {format_rate(pvc.cir)} exceeds the rate of link {bottleneck.id} "
                f"({format_rate(bottleneck.rate)}) on its path"
            )
    if pvc.min_cir is not None and not pvc.becn_shaping:
        found.append(f"{path}.min_cir has no effect without becn_shaping")
    return found


def _check_unique(
    errors: _Errors, base: tuple[str, ...], items: Iterable[Any], field: str = "id"
) -> None:
    """Report each repeat of an id (or `field`) at the repeating item."""
    seen: dict[Any, int] = {}
    for index, item in enumerate(items):
        value = getattr(item, field)
        if value in seen:
            errors.add(
                (*base, index, field),
                f"duplicate_{field}",
                f"{field} {value!r} is already used by {base[-1]}[{seen[value]}]",
                value,
            )
        else:
            seen[value] = index


def _unknown_node(errors: _Errors, loc: tuple[str | int, ...], node_id: str) -> None:
    """Report a reference to a node that does not exist."""
    errors.add(loc, "unknown_node", f"no node has id {node_id!r}", node_id)


def _check_node(
    errors: _Errors, loc: tuple[str | int, ...], node_id: str, nodes: dict[str, Node], kind: str
) -> bool:
    """Check that `node_id` names a node of `kind`; report and return False otherwise."""
    node = nodes.get(node_id)
    if node is None:
        _unknown_node(errors, loc, node_id)
        return False
    if node.kind != kind:
        errors.add(
            loc, "wrong_node_kind", f"node {node_id!r} is a {node.kind}, expected a {kind}", node_id
        )
        return False
    return True


class ScenarioFormatError(ValueError):
    """Scenario text that is not valid JSON or YAML, or not a mapping."""


def load_scenario(source: str | bytes | Path | Mapping[str, Any]) -> Scenario:
    """Load and validate a scenario from a file path, JSON or YAML text, or a mapping."""
    if isinstance(source, Mapping):
        return Scenario.model_validate(source)
    if isinstance(source, Path) or (
        isinstance(source, str) and "\n" not in source and Path(source).suffix in _SUFFIXES
    ):
        path = Path(source)
        return Scenario.model_validate(_parse(path.read_text(encoding="utf-8"), str(path)))
    try:
        text = source.decode() if isinstance(source, bytes) else source
    except UnicodeDecodeError as exc:
        raise ScenarioFormatError(f"<text>: not UTF-8: {exc}") from None
    return Scenario.model_validate(_parse(text, "<text>"))


_SUFFIXES = frozenset({".json", ".yaml", ".yml"})


def _parse(text: str, origin: str) -> dict[str, Any]:
    """Parse JSON (text starting with '{') or YAML into a mapping."""
    try:
        data = json.loads(text) if text.lstrip().startswith("{") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError, RecursionError) as exc:  # RecursionError: too deep
        raise ScenarioFormatError(f"{origin}: not valid JSON or YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ScenarioFormatError(f"{origin}: a scenario must be a mapping of fields")
    return data
