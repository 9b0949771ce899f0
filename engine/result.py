"""The Result of a simulation (docs/scenario.md "Result"): summaries per flow, link direction
and PVC, the diagnosis, and the time-series. Plain SI numbers throughout."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from engine.advice.model import Remedy


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


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


class LinkSummary(_Model):
    packets: int = Field(description="Packets transmitted")
    bytes: int = Field(description="Bytes transmitted on the wire, framing included")
    drops: int = Field(description="Packets dropped by the egress queue")
    error_drops: int = Field(description="Packets lost to the link's loss model")
    utilization: float
    queue_mean: float = Field(description="Time-average packets waiting")
    queue_max: int
    queue_delay_mean: float = Field(description="Mean wait before transmission starts, s")


class PvcSummary(_Model):
    frames: int
    de_marked: int
    de_dropped: int
    excess_dropped: int
    fecn_marked: int
    becn_marked: int
    residual_error_rate: float = Field(description="Measured: frames errored / frames exiting")
    shaper_dropped: int = Field(default=0, description="Frames lost to a full BECN shaper queue")


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
]


class Diagnosis(_Model):
    limit: Limit
    bounds: Bounds
    bdp_bytes: float | None
    rtt: float | None = Field(default=None, description="Base round-trip time of the path, s")
    bottleneck: str | None = Field(
        default=None,
        description="The resource of `bounds.link_bps`: a link direction "
        "'<link>:<from>><to>' or 'pvc:<id>'",
    )
    remedies: list[Remedy] = Field(
        default_factory=list,
        description="Concrete changes for this flow's limit, helpful ones cheapest first, "
        "then those that won't help (with why); `advice` is written from them",
    )
    advice: str


class Series(_Model):
    unit: str
    t: list[float]
    v: list[float]


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
