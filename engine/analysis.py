"""Analytic facts about a scenario, before or without simulating it: each flow's path, its
base round-trip time, bottleneck, bandwidth-delay product, window bound, and an estimate of
the simulation's size. `describe()` serves the API's dry run; `diagnosis` reuses the facts.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from engine import routing
from engine.net import wire_bytes
from engine.packet import IP_HEADER, TCP_IP_HEADERS, UDP_HEADER
from engine.scenario import Scenario, TcpBulkFlow
from engine.tcp.receiver import advertised_window


@dataclass
class PathFacts:
    flow: str
    kind: str
    path: list[str]  # port keys "<link>:<from>><to>"
    hops: int
    base_rtt: float | None  # one full segment out, one ACK back, empty queues, s
    one_way_delay: float  # propagation plus serialisation of one packet, s
    bottleneck: str  # port key of the lowest payload capacity
    bottleneck_rate_bps: float
    link_bps: float  # payload (goodput) capacity of the bottleneck for this flow alone
    share_bps: float  # the same, less CBR cross traffic, divided among TCP flows on it
    window_bytes: int | None
    window_bps: float | None
    bdp_bytes: float | None
    est_packets: int
    est_events: int

    def as_dict(self) -> dict:
        return asdict(self)


def _links(scenario: Scenario) -> dict:
    return {link.id: link for link in scenario.links}


def _port_key(hop: routing.Hop) -> str:
    return f"{hop.link_id}:{hop.src}>{hop.dst}"


def effective_window(tcp) -> int:
    """The largest flight the receiver's window (RFC 7323 capped) and send buffer allow."""
    w = advertised_window(tcp)
    return w if tcp.snd_buf is None else min(w, tcp.snd_buf)


def path_facts(scenario: Scenario) -> dict[str, PathFacts]:
    links = _links(scenario)
    topo = routing.Topology(scenario)
    routes = {f.id: topo.route(f.src, f.dst) or [] for f in scenario.flows}
    # Who crosses each port, to split a shared bottleneck.
    tcp_on: dict[str, int] = {}
    cbr_on: dict[str, float] = {}
    for f in scenario.flows:
        for hop in routes[f.id]:
            key = _port_key(hop)
            if isinstance(f, TcpBulkFlow):
                tcp_on[key] = tcp_on.get(key, 0) + 1
            else:
                size = f.packet_size + UDP_HEADER + IP_HEADER
                wire = wire_bytes(links[hop.link_id].encap, size)
                cbr_on[key] = cbr_on.get(key, 0.0) + f.rate * wire / f.packet_size
    facts = {}
    for f in scenario.flows:
        hops = routes[f.id]
        if isinstance(f, TcpBulkFlow):
            payload = f.tcp.mss
            size = payload + TCP_IP_HEADERS
        else:
            payload = f.packet_size
            size = payload + UDP_HEADER + IP_HEADER
        one_way = 0.0
        best = None
        for hop in hops:
            link = links[hop.link_id]
            wire = wire_bytes(link.encap, size)
            one_way += link.delay + wire * 8 / link.rate
            capacity = link.rate * payload / wire
            key = _port_key(hop)
            share = max(link.rate - cbr_on.get(key, 0.0), 0.0) * payload / wire
            if isinstance(f, TcpBulkFlow):
                share /= max(tcp_on.get(key, 1), 1)
            if best is None or share < best[3]:
                best = (key, link.rate, capacity, share)
        span = routing.pvc_span(scenario, hops)
        if span is not None:
            # The PVC's traffic contract caps the flow too: CIR plus the excess burst per
            # Tc (Tc = Bc/CIR), in frame bits on the first link it carries.
            pvc = span.pvc
            bc = pvc.bc or pvc.cir
            policed = pvc.cir + pvc.be * pvc.cir / bc
            first = links[hops[span.first].link_id]
            wire = wire_bytes(first.encap, size)
            pvc_capacity = policed * payload / wire
            pvc_share = pvc_capacity
            if isinstance(f, TcpBulkFlow):
                pvc_share /= max(tcp_on.get(_port_key(hops[span.first]), 1), 1)
            if pvc_share < best[3]:
                best = (f"pvc:{pvc.id}", policed, pvc_capacity, pvc_share)
        key, rate, capacity, share = best
        base_rtt = window = window_bps = bdp = None
        if isinstance(f, TcpBulkFlow):
            back = routing.route(scenario, f.dst, f.src) or []
            ack_way = sum(links[h.link_id].delay
                          + wire_bytes(links[h.link_id].encap, TCP_IP_HEADERS) * 8
                          / links[h.link_id].rate for h in back)
            base_rtt = one_way + ack_way
            window = effective_window(f.tcp)
            window_bps = window * 8 / base_rtt if base_rtt > 0 else math.inf
            bdp = capacity * base_rtt / 8
            volume = f.bytes if f.bytes is not None else (
                min(share, window_bps) / 8 * _active(scenario, f))
            data = math.ceil(volume / payload)
            acks = data // max(f.tcp.delayed_ack.count if f.tcp.delayed_ack.enabled else 1, 1)
            packets = data + acks
            events = data * len(hops) + acks * len(back) + data // 4
        else:
            data = int(_active(scenario, f) * f.rate / (8 * payload))
            packets = data
            events = data * (len(hops) + 1)
        facts[f.id] = PathFacts(
            flow=f.id, kind=f.kind, path=[_port_key(h) for h in hops], hops=len(hops),
            base_rtt=base_rtt, one_way_delay=one_way, bottleneck=key,
            bottleneck_rate_bps=rate, link_bps=capacity, share_bps=share,
            window_bytes=window, window_bps=window_bps, bdp_bytes=bdp,
            est_packets=packets, est_events=events,
        )
    return facts


def _active(scenario: Scenario, flow) -> float:
    end = flow.stop if flow.stop is not None else scenario.duration
    return max(min(end, scenario.duration) - flow.start, 0.0)


def describe(scenario: Scenario) -> dict:
    """Dry-run facts: per-flow path facts, warnings, and the estimated simulation size."""
    facts = path_facts(scenario)
    return {
        "scenario_hash": scenario.scenario_hash(),
        "flows": {k: v.as_dict() for k, v in facts.items()},
        "warnings": scenario.warnings(),
        "estimate": {
            "packets": sum(v.est_packets for v in facts.values()),
            "events": sum(v.est_events for v in facts.values()),
        },
    }
