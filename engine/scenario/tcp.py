"""A TCP flow's stack: `TcpSpec` and its delayed-ACK receiver."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticKnownError, core_schema

from engine.protocol import TCP_IP_HEADERS, TIMESTAMPS_OPTION
from engine.scenario.common import Count, PositiveByteSize, PositiveDuration, _Errors, _Model
from engine.units import Duration, format_duration
from engine.variants import names, variant


class VariantName:
    """The `variant` field's type: a name in engine.variants, the one registry, read when
    a value is validated or a schema written, so a variant registered later (a test's own)
    is valid too. Its JSON Schema is an enum of the names, as a Literal's would be, and an
    unknown name is the same `literal_error` a Literal gives."""

    @staticmethod
    def choices() -> tuple[str, ...]:
        return names()

    @classmethod
    def _validate(cls, value: Any) -> str:
        names = cls.choices()
        if isinstance(value, str) and value in names:
            return value
        quoted = [repr(n) for n in names]
        expected = quoted[0] if len(quoted) < 2 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
        raise PydanticKnownError("literal_error", {"expected": expected})

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_plain_validator_function(
            cls._validate, serialization=core_schema.to_string_ser_schema()
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {"enum": list(cls.choices()), "type": "string"}


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

    variant: Annotated[str, VariantName] = "newreno"
    """Congestion control: one of the variants tabled under "TCP variants" in
    docs/scenario.md, with each one's recovery, slow start and traits. `none` is a fixed
    window with go-back-N on timeout; `bbr` is BBR v1 (Linux's tcp_bbr, ns-3's TcpBbr:
    rate-based, paced, not loss-based)."""
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
    timestamps: bool = False
    """RFC 7323 timestamps option, on by default in Linux. Every segment, data or ACK,
    carries 12 more bytes of header (the 10-byte option and two NOPs), so a full segment
    carries `mss` - 12 bytes of payload (1,448 B at mss 1,460, as Linux's mss_cache).
    The sender takes an RTT sample from every ACK that advances snd_una, from the
    timestamp the receiver echoes (RFC 7323 4.3: the segment that held the left edge of
    its window), retransmissions included, and such a sample resets the RTO's backoff
    (Linux's tcp_ack_update_rtt); without timestamps one segment per round trip is timed
    and none after a retransmission (Karn). The clock is the simulated time, exact."""
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
    start when the round's ACK train lasts over half the smallest RTT (over all of it when
    the flow paces, as Linux has it for a paced socket) or its RTT rises by
    clamp(min RTT / 8, 4 ms, 16 ms). `hystart++`: RFC 9406 (Windows, FreeBSD): on that RTT
    rise, 5 rounds of Conservative Slow Start at a quarter of the growth, then congestion
    avoidance; in the first slow start only. None (the default) is the variant's own:
    `hystart` for cubic (on by default in Linux and ns-3), `standard` for the others (no
    delay exit in Linux's Reno or ns-3's NewReno; Vegas has its own, `vegas_gamma`)."""
    loss_detection: Literal["rack", "dupack"] = "rack"
    """How a sender with SACK finds its losses. `rack` (the default, as Linux since 4.18):
    RACK-TLP (RFC 8985), by time: a segment is lost once one sent after it is delivered
    (and, outside recovery with few segments SACKed, a quarter of the minimum RTT more
    has passed), a retransmission like any other, so a retransmission lost again is
    resent without waiting for the retransmission timeout; a tail loss probe (2 SRTT
    after the last ACK) draws out the ACKs that reveal losses at the end of a flight.
    `dupack`: RFC 6675's, three duplicate ACKs or three segments SACKed above a hole, a
    hole resent once per recovery, as ns-2, ns-3 and OPNET run it (the seed presets pin
    it). Without SACK both are NewReno's duplicate ACKs (Linux's RACK needs SACK)."""
    ack_counting: Literal["segments", "acks"] = "segments"
    """What an ACK is worth to window growth. `segments` (the default, as Linux and ns-3's
    TcpCubic and TcpLinuxReno): every segment it acknowledges counts. Slow start adds them
    all, up to ssthresh, and carries the rest into congestion avoidance (Linux's
    tcp_slow_start), which adds one segment per window of segments acknowledged (RFC
    3465 byte counting, Linux's tcp_cong_avoid_ai); with delayed ACKs the window still
    doubles per round trip in slow start. `acks`: RFC 5681 per ACK, min(N, SMSS) in slow
    start and SMSS*SMSS/cwnd in congestion avoidance, as ns-2, OPNET and ns-3's
    TcpNewReno run it: with delayed ACKs x1.5 per round trip in slow start and half a
    segment per round trip after. The seed presets pin `acks`."""
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
    bbr_lt_bw: bool = True
    """bbr: Linux's long-term bandwidth estimate (lt_bw): after two lossy intervals of 4 to
    16 round trips (20% lost or more) with consistent delivery rates, BBR takes their
    mean as a policer's rate and paces at it, without probing, for 48 round trips. On by
    default, as in Linux's tcp_bbr; false as ns-3's TcpBbr, which has no such estimate."""
    pacing: bool | None = None
    """Pace segments: at Linux's rate, cwnd/srtt times 2 while cwnd < ssthresh/2, else
    times 1.2 (the first 10 segments leave unpaced); `bbr` paces at its own rate. Null
    means the variant's default: on for `bbr` (which rejects false), off for the others,
    as in Linux without the fq qdisc and in ns-3."""

    @property
    def option_bytes(self) -> int:
        """TCP option bytes on every segment after the handshake."""
        return TIMESTAMPS_OPTION if self.timestamps else 0

    @property
    def payload(self) -> int:
        """Payload bytes of a full segment: `mss` less the options every segment carries
        (Linux's mss_cache; RFC 9293 3.7.1 has MSS exclude them)."""
        return self.mss - self.option_bytes

    @property
    def headers(self) -> int:
        """IP and TCP header bytes of every segment after the handshake, options included."""
        return TCP_IP_HEADERS + self.option_bytes

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
        self._check_variant(errors)
        if self.vegas_alpha > self.vegas_beta:
            errors.add(
                ("vegas_beta",),
                "invalid_range",
                f"vegas_beta {self.vegas_beta:g} is below vegas_alpha {self.vegas_alpha:g}",
                self.vegas_beta,
            )
        errors.raise_if_any()
        return self

    def _check_variant(self, errors: _Errors) -> None:
        """Options the variant has no use for, as its traits say."""
        cls = variant(self.variant)
        if cls.always_paces and self.pacing is False:
            errors.add(
                ("pacing",),
                "invalid_combination",
                f"{self.variant} always paces: its rate is its model of the path",
                self.pacing,
            )
        if not cls.limits_window and self.pacing:
            errors.add(
                ("pacing",),
                "invalid_combination",
                f"pacing follows cwnd, which variant {self.variant} does not have",
                self.pacing,
            )
        if cls.own_slow_start and self.slow_start not in (None, "standard"):
            errors.add(
                ("slow_start",),
                "invalid_combination",
                f"slow_start {self.slow_start} does not apply: {cls.own_slow_start}",
                self.slow_start,
            )
