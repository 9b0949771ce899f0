"""Advisory warnings: legal settings that will not do what they seem to (a transfer that
cannot finish by `duration` on an ideal path, a window capped by RFC 7323, a queue or a
PVC contract that passes nothing), with what the engine will do about each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.net import link_wire
from engine.protocol import MAX_SCALED_WINDOW, MAX_UNSCALED_WINDOW, TCP_IP_HEADERS, UDP_IP_HEADERS
from engine.scenario.flows import TcpBulkFlow, UdpCbrFlow
from engine.scenario.framerelay import Pvc
from engine.scenario.network import Link
from engine.scenario.tcp import TcpSpec
from engine.scenario.topology import Hop, Topology
from engine.tcp.cc import variant
from engine.tcp.receiver import effective_window
from engine.units import format_duration, format_rate, format_size

if TYPE_CHECKING:
    from engine.scenario.document import Scenario


def scenario_warnings(scenario: Scenario, topology: Topology | None = None) -> list[str]:
    """Legal but suspicious settings, and what the engine will do about them; pass the
    scenario's `Topology` when the caller has one."""
    if topology is None:
        topology = Topology(scenario)
    found: list[str] = []
    for link in scenario.links:
        found.extend(_queue_warnings(link))
    if scenario.frame_relay is not None:
        frames = _largest_frames(scenario, topology)
        for pvc in scenario.frame_relay.pvcs:
            found.extend(_pvc_warnings(topology, pvc, frames.get(pvc.id)))
    for flow in scenario.flows:
        hops = topology.route(flow.src, flow.dst) or []
        found.extend(_flow_warnings(scenario, flow, topology, hops))
    return found


def _largest_frames(scenario: Scenario, topology: Topology) -> dict[str, tuple[int, str, str]]:
    """Per PVC, the largest frame a flow sends through it: (frame bits on the PVC's
    first link, flow id, link id)."""
    links = {link.id: link for link in scenario.links}
    largest: dict[str, tuple[int, str, str]] = {}
    for flow in scenario.flows:
        hops = topology.route(flow.src, flow.dst)
        span = topology.pvc_span(hops) if hops else None
        if span is None or hops is None:
            continue
        size = (
            flow.tcp.mss + TCP_IP_HEADERS
            if isinstance(flow, TcpBulkFlow)
            else flow.packet_size + UDP_IP_HEADERS
        )
        link = links[hops[span.first].link_id]
        bits = link_wire(link, size) * 8
        if bits > largest.get(span.pvc.id, (0, "", ""))[0]:
            largest[span.pvc.id] = (bits, flow.id, link.id)
    return largest


def _flow_warnings(
    scenario: Scenario, flow: TcpBulkFlow | UdpCbrFlow, topology: Topology, hops: list[Hop]
) -> list[str]:
    """Warnings about one flow on its route."""
    path = f"flows.{flow.id}"
    found: list[str] = []
    if flow.stop is not None and flow.stop > scenario.duration:
        found.append(
            f"{path}.stop {format_duration(flow.stop)} is after duration "
            f"{format_duration(scenario.duration)}: the flow ends at "
            f"{format_duration(scenario.duration)}"
        )
    if isinstance(flow, TcpBulkFlow):
        found.extend(_tcp_warnings(path, flow.tcp))
        if flow.bytes is not None and hops:
            found.extend(_completion_warnings(scenario, path, flow, topology, hops))
    elif hops:
        found += _above_path(f"{path}.rate", flow.rate, topology, hops, ": its queue will overflow")
        link = topology.narrowest(hops)
        if flow.packet_size + UDP_IP_HEADERS > link.mtu:
            found.append(
                f"{path}.packet_size {format_size(flow.packet_size)} plus "
                f"{UDP_IP_HEADERS} B of UDP and IP headers exceeds the path MTU "
                f"{format_size(link.mtu)} (link {link.id})"
            )
    return found


def _above_path(
    field: str, bps: float, topology: Topology, hops: list[Hop], then: str
) -> list[str]:
    """A rate (`field`: a flow's, a PVC's CIR) above what its path's slowest link carries."""
    bottleneck, rate = topology.bottleneck(hops)
    if bps <= rate:
        return []
    return [
        f"{field} {format_rate(bps)} exceeds the bottleneck {format_rate(rate)} "
        f"(link {bottleneck.id}){then}"
    ]


def _completion_warnings(
    scenario: Scenario, path: str, flow: TcpBulkFlow, topology: Topology, hops: list[Hop]
) -> list[str]:
    """Warn when even an ideal sender cannot move `flow.bytes` before the run ends."""
    assert flow.bytes is not None
    bottleneck, rate = topology.bottleneck(hops)
    rtt = topology.round_trip_delay(hops)
    window = effective_window(flow.tcp)
    transfer = flow.bytes * 8 / rate
    limits = f"bottleneck {format_rate(rate)} on link {bottleneck.id}"
    if rtt > 0:
        # At most one window per round trip, and the last byte still needs half an RTT.
        transfer = max(transfer, flow.bytes / window * rtt) + rtt / 2
        limits += f"; window {format_size(window)} per {format_duration(rtt)} round trip"
        if flow.tcp.handshake:
            transfer += rtt
    needed = flow.start + transfer
    deadline, reason = scenario.duration, "duration"
    if flow.stop is not None and flow.stop < deadline:
        deadline, reason = flow.stop, "stop"
    if needed <= deadline:
        return []
    return [
        f"{path} cannot deliver {format_size(flow.bytes)} by {format_duration(deadline)} "
        f"({reason}): it needs at least {format_duration(needed)} ({limits})"
    ]


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
    if tcp.sack and not variant(tcp.variant).sack_recovery(tcp):
        found.append(
            f"{path}.tcp.sack has no effect with variant {tcp.variant} (go-back-N on timeout)"
        )
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
        found += _above_path(f"{path}.cir", pvc.cir, topology, hops, " on its path")
    if pvc.min_cir is not None and not pvc.becn_shaping:
        found.append(f"{path}.min_cir has no effect without becn_shaping")
    admitted = pvc.cir + pvc.be * pvc.cir / pvc.bc
    if pvc.shaping is not None and pvc.shaping.rate is not None and pvc.shaping.rate > admitted:
        found.append(
            f"{path}.shaping.rate {format_rate(pvc.shaping.rate)} exceeds what the contract "
            f"admits in the long run (cir + be / Tc = {format_rate(admitted)}): the policer "
            "discards the excess"
        )
    return found
