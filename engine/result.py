"""The Result of a simulation (docs/scenario.md "Result"): summaries per flow, link direction
and PVC, the diagnosis, and the time-series. Plain SI numbers throughout."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from engine.advice.model import Remedy


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FlowTime(_Model):
    """Where a TCP flow's time went (engine/accounting.py): its life, from the SYN (or its
    first segment without a handshake) to the last byte delivered in order, its `stop`, or
    the end of the run, split into states that add up to `duration`. Seconds throughout.
    The states other than `handshake`, `busy` and `timeout` are the time the bottleneck was
    idle while that was what held the sender back."""

    duration: float = Field(
        description="The flow's life: completion_time when it completed, else from its start "
        "to its stop or the end of the run"
    )
    handshake: float = Field(description="SYN sent, SYN-ACK not yet back (its timeouts apart)")
    busy: float = Field(
        description="The bottleneck (the pipe of the data path with the least payload capacity: "
        "a port, a PVC's contract, a shaper) was transmitting while the flow had data "
        "outstanding: the pipe was full"
    )
    receive_window: float = Field(description="The receiver's advertised window was full")
    send_buffer: float = Field(description="The send buffer (snd_buf) was full")
    slow_start: float = Field(description="The congestion window was full, in slow start")
    congestion_avoidance: float = Field(
        description="The congestion window was full, in congestion avoidance"
    )
    recovery: float = Field(
        description="Loss recovery: fast recovery, or after a timeout until what was "
        "outstanding then is acknowledged"
    )
    application: float = Field(description="Nothing outstanding and nothing to send")
    timeout: float = Field(
        description="Waiting for the retransmission timer: from its last arming to each expiry "
        "the sender acted on"
    )
    ack_clock: float = Field(
        default=0.0,
        description="The window was full while the ACKs that would open it waited on the way "
        "back: on a path whose ACKs' way back clocks the flow slower than its bottleneck "
        "carries (an ADSL uplink), its slowest port held more than a segment's time (at the "
        "bottleneck) of ACKs queued. 0 on other paths, and in results stored before it",
    )


class RttHop(_Model):
    """One hop of a flow's round trip: a port (or a stage that held packets, such as a
    PVC's shaper) in the direction of its data or of its ACKs."""

    hop: str = Field(description="A link direction '<link>:<from>><to>', or 'pvc:<id>'")
    direction: Literal["data", "ack"] = Field(
        description="`data`: the way of the flow's segments; `ack`: the way back of its ACKs"
    )
    propagation: float = Field(description="The link's one-way delay, s")
    serialisation: float = Field(
        description="Transmission of a full-sized segment (data) or a bare ACK (ack), s"
    )
    queueing: float = Field(
        description="Mean wait of the flow's packets that left this hop before their "
        "transmission began, s"
    )
    packets: int = Field(description="The flow's packets that left this hop")


class RttSplit(_Model):
    """A flow's mean round trip as its packets made it, hop by hop; the sampled `rtt_mean`
    also holds the receiver's delayed-ACK wait."""

    propagation: float = Field(description="Sum of the hops' propagation delays, s")
    serialisation: float = Field(description="Sum of the hops' serialisation times, s")
    queueing: float = Field(description="Sum of the hops' mean queueing delays, s")
    hops: list[RttHop] = Field(description="Data direction first, then the ACKs' way back")


class TcpFlowSummary(_Model):
    kind: Literal["tcp"] = "tcp"
    completed: bool
    completion_time: float | None = Field(
        description="Flow start to last byte delivered in order, s (includes the handshake)"
    )
    bytes_delivered: int
    goodput_bps: float
    throughput_pps: float = Field(description="Data packets arriving at the receiver per second")
    segments_sent: int
    retransmissions: int
    timeouts: int
    fast_retransmits: int
    dup_acks: int
    packets_dropped: int = Field(description="This flow's packets (data and ACKs) dropped anywhere")
    pdr: float | None = Field(description="Data packets delivered / (delivered + dropped)")
    plr: float | None = Field(description="Data packets dropped / (delivered + dropped)")
    packets_received: int = Field(
        default=0, description="Data packets arriving at the receiver, duplicates included"
    )
    delivery_ratio: float | None = Field(
        default=None,
        description="packets_received / segments_sent, as ns-2 trace scripts compute PDR: "
        "packets still in flight at the end count as not received",
    )
    rtt_mean: float | None
    rtt_min: float | None
    rtt_max: float | None
    delay_mean: float | None = Field(description="One-way delay of data packets, s")
    delay_p50: float | None
    delay_p95: float | None
    delay_p99: float | None
    jitter: float | None = Field(description="Mean |difference| of consecutive one-way delays, s")
    cwnd_max: int
    cwnd_mean: float | None
    time: FlowTime | None = Field(default=None, description="Where the flow's time went")
    rtt_split: RttSplit | None = Field(
        default=None, description="The round trip by hop: propagation, serialisation, queueing"
    )


class UdpFlowSummary(_Model):
    kind: Literal["udp"] = "udp"
    packets_sent: int
    packets_received: int
    packets_dropped: int
    pdr: float | None
    plr: float | None
    throughput_bps: float
    delay_mean: float | None
    delay_p50: float | None
    delay_p95: float | None
    delay_p99: float | None
    jitter: float | None


FlowSummary = Annotated[TcpFlowSummary | UdpFlowSummary, Field(discriminator="kind")]


class ShaperSummary(_Model):
    """A traffic shaper's queue: the frames it held back, for how long, and what it lost."""

    rate_bps: float = Field(description="The shaped rate, frame bits per second")
    frames: int = Field(description="Frames it let through")
    delayed: int = Field(description="Frames that waited in its queue")
    dropped: int = Field(description="Frames lost to its full queue")
    queue_max: int = Field(description="Most frames waiting at once")
    queue_mean: float = Field(description="Time-average frames waiting")
    delay_mean: float = Field(description="Mean wait per frame let through, s")
    delay_max: float = Field(description="Longest wait, s")


class LinkSummary(_Model):
    packets: int = Field(description="Packets transmitted")
    bytes: int = Field(description="Bytes transmitted on the wire, framing included")
    drops: int = Field(description="Packets dropped by the egress queue")
    error_drops: int = Field(description="Packets lost to the link's loss model")
    utilization: float
    queue_mean: float = Field(description="Time-average packets waiting")
    queue_max: int
    queue_delay_mean: float = Field(description="Mean wait before transmission starts, s")
    shaper: ShaperSummary | None = Field(
        default=None, description="The interface's traffic shaper, ahead of its queue"
    )


class PvcSummary(_Model):
    frames: int
    de_marked: int
    de_dropped: int
    excess_dropped: int
    fecn_marked: int
    becn_marked: int
    residual_error_rate: float = Field(description="Measured: frames errored / frames exiting")
    shaper_dropped: int = Field(default=0, description="Frames lost to a full shaper queue")
    shaper: ShaperSummary | None = Field(
        default=None, description="The forward direction's shaper at its entry router"
    )
    shaper_reverse: ShaperSummary | None = Field(
        default=None, description="The reverse direction's shaper"
    )


class Bounds(_Model):
    """Upper bounds of the flow's goodput, bit/s: each is at least `achieved_bps`."""

    link_bps: float | None = Field(
        description="What the most constrained resource on the path (a port's rate less "
        "per-packet overhead, or a PVC's contract) left to this flow while it ran, after "
        "the other traffic that actually crossed it meanwhile"
    )
    window_bps: float | None = Field(description="Effective window / base round-trip time")
    mathis_bps: float | None = Field(
        description="Mathis et al.: MSS/RTT * sqrt(3/2bp); null without loss, for bbr (which "
        "loss does not limit), or when the flow delivered more (its losses did not shape a "
        "congestion-avoidance sawtooth)"
    )
    application_bps: float | None = Field(default=None, description="The application's own rate")
    ack_clock_bps: float | None = Field(
        default=None,
        description="What the ACKs' way back can clock once the first window is out: its "
        "slowest port's ACKs per second (a 40-byte ACK with that link's framing) times the "
        "segments each ACK acknowledges times the MSS; null when it is above `link_bps` (a "
        "return path that does not bind)",
    )
    achieved_bps: float | None


Limit = Literal[
    "receive_window",
    "link_capacity",
    "loss",
    "congestion_window",
    "application",
    "timeouts",
    "send_buffer",
    "incomplete",
    "pvc_policing",
    "ack_clock",
]


class Diagnosis(_Model):
    limit: Limit
    bounds: Bounds
    bdp_bytes: float | None
    rtt: float | None = Field(default=None, description="Base round-trip time of the path, s")
    bottleneck: str | None = Field(
        default=None,
        description="The resource of `bounds.link_bps`: a link direction "
        "'<link>:<from>><to>', a PVC 'pvc:<id>' (its contract or its shaper), or an "
        "interface's shaper 'shaper:<link>:<from>><to>'",
    )
    remedies: list[Remedy] = Field(
        default_factory=list,
        description="Concrete changes for this flow's limit, helpful ones cheapest first, "
        "then those that won't help (with why); `advice` is written from them",
    )
    limit_time: float | None = Field(
        default=None,
        description="Seconds of the flow's life that `limit` cost: its time in the states "
        "that are this limit (the flow's `time`)",
    )
    why: str = Field(
        default="",
        description="What limits the flow, in plain words, without remedies (the first "
        "sentences of `advice`; empty in results stored before this field)",
    )
    advice: str = Field(
        description="`why`, then the remedies as candidates, cheapest first: each predicted "
        "by the bounds, none yet measured (a remedy check simulates them)"
    )


class Thinning(_Model):
    """How a series was kept within its share of the run's point budget (engine.trace).

    `bucket_m4`, a change-driven series: time cut into buckets of `bucket` seconds from
    `origin`, each keeping its first, least, greatest and last points, so its extremes are
    those recorded. `stride_mean`, a sampled series: each point the mean of
    `samples_per_point` consecutive samples (the last point of fewer), so its integral is
    kept. (`every_other` and `pair_mean`: series stored by earlier engine versions, thinned
    unevenly.)"""

    method: Literal["bucket_m4", "stride_mean", "every_other", "pair_mean"]
    halvings: int = Field(description="Times the buckets or the stride doubled")
    cap: int = Field(description="Its share of the run's points when it was last thinned")
    min_spacing: float | None = Field(
        default=None, description="`every_other` only: changes closer than this were merged, s"
    )
    bucket: float | None = Field(default=None, description="`bucket_m4`: the width of a bucket, s")
    origin: float | None = Field(
        default=None, description="`bucket_m4`: where the first bucket starts, s"
    )
    samples_per_point: int | None = Field(
        default=None, description="`stride_mean`: consecutive samples averaged into a point"
    )


class Series(_Model):
    unit: str
    t: list[float]
    v: list[float]
    # How the recorder thinned it (None: every point it recorded). Beside the document,
    # not in it, as a Result's capture files are: the worker stores it with the series,
    # and the series' figures and every stored Result stay what they were.
    _thinning: Thinning | None = PrivateAttr(default=None)

    @classmethod
    def recorded(cls, unit: str, t: list[float], v: list[float]) -> Series:
        """`model_construct(unit=, t=, v=)` without its generic walk over fields, defaults
        and private attributes (two thirds of its cost): a run builds one per trace, 16,000
        at 1,000 flows, and the points are the floats recorded, never validated again. The
        same instance state as model_construct's (tests/unit/test_engine_series_thinning.py)."""
        series = cls.__new__(cls)
        _set = object.__setattr__
        _set(series, "__dict__", {"unit": unit, "t": t, "v": v})
        _set(series, "__pydantic_fields_set__", {"unit", "t", "v"})
        _set(series, "__pydantic_extra__", None)
        _set(series, "__pydantic_private__", {"_thinning": None})
        return series

    @property
    def thinning(self) -> Thinning | None:
        return self._thinning

    def thinned(self, how: Thinning) -> None:
        self._thinning = how


class CaptureSummary(_Model):
    """A packet capture the scenario asked for; its libpcap file is served apart
    (`GET /v1/runs/{id}/pcap?link=...&direction=...`)."""

    link: str
    direction: Literal["a_to_b", "b_to_a", "both"]
    at: Literal["a", "b"] = Field(default="a", description="The end whose interface was captured")
    packets: int = Field(description="Packets in the file")
    missed: int = Field(description="Packets that went by after max_packets were kept")
    snaplen: int = Field(description="Bytes kept of each packet, IP header first")
    bytes: int = Field(description="Size of the libpcap file")
    sha256: str = Field(description="Hex sha256 of the libpcap file")


class Result(_Model):
    engine_version: str
    engine_build: Literal["compiled", "pure"] = Field(
        description="Which build of the engine's per-packet modules ran: `compiled` (mypyc; "
        "`make install` builds it) or `pure` (Python: no C compiler, a source edited since "
        "the build, or TCPFR_ENGINE_BUILD=pure). Every number is the same to the byte in "
        "both; only wall_time differs"
    )
    scenario_hash: str
    seed: int
    sim_time: float
    wall_time: float
    events: int
    warnings: list[str] = []
    flows: dict[str, FlowSummary]
    links: dict[str, LinkSummary]
    pvcs: dict[str, PvcSummary] = {}
    diagnosis: dict[str, Diagnosis] = {}
    series: dict[str, Series] = {}
    captures: list[CaptureSummary] = []
    # The libpcap files of `captures`, by (link, direction): bytes, not JSON, so they stay
    # out of the Result's document; the worker stores them beside it.
    _pcaps: dict[tuple[str, str], bytes] = PrivateAttr(default_factory=dict)

    def pcap(self, link: str, direction: str) -> bytes | None:
        """The libpcap file of the capture of `link` in `direction`, if the run took one."""
        return self._pcaps.get((link, direction))

    def summary(self) -> dict[str, Any]:
        """Everything but the series, as JSON-ready data."""
        return self.model_dump(mode="json", exclude={"series"})
