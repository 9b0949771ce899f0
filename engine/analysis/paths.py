"""Each flow's path facts before simulating: route, base round-trip time, bottleneck and
its share, bandwidth-delay product, window bound."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from engine import routing
from engine.net import link_wire
from engine.packet import IP_HEADER, TCP_IP_HEADERS, UDP_HEADER
from engine.scenario import Link, Scenario, TcpBulkFlow
from engine.tcp.receiver import effective_window


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
    window_bps: float | None  # effective window / base_rtt
    pvc: str | None  # the PVC carrying the flow's data, if any
    bdp_bytes: float | None
    est_packets: int
    est_events: int

    def as_dict(self) -> dict[str, Any]:
        """The facts as JSON-ready data: a shallow copy (dataclasses.asdict deep-copies
        every path list, a third of a 4,000-flow dry run's time)."""
        d = dict(vars(self))
        d["path"] = list(self.path)
        return d


def _links(scenario: Scenario) -> dict[str, Link]:
    return {link.id: link for link in scenario.links}


def _port_key(hop: routing.Hop) -> str:
    return f"{hop.link_id}:{hop.src}>{hop.dst}"


def flow_facts(
    scenario: Scenario, topo: routing.Topology
) -> tuple[dict[str, PathFacts], dict[str, list[routing.Hop]]]:
    """Each flow's facts (its estimate still zero) and route. Routes
    come from one `Topology`: thousands of flows share a few paths, and a dry run (every run
    request's budget check) must stay cheap for any valid scenario."""
    links = _links(scenario)
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
                wire = link_wire(links[hop.link_id], size)
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
        best: tuple[str, float, float, float] | None = None
        for hop in hops:
            link = links[hop.link_id]
            wire = link_wire(link, size)
            one_way += link.delay + wire * 8 / link.rate
            capacity = link.rate * payload / wire
            key = _port_key(hop)
            share = max(link.rate - cbr_on.get(key, 0.0), 0.0) * payload / wire
            if isinstance(f, TcpBulkFlow):
                share /= max(tcp_on.get(key, 1), 1)
            if best is None or share < best[3]:
                best = (key, link.rate, capacity, share)
        span = topo.pvc_span(hops)
        pvc_id = span.pvc.id if span is not None else None
        if span is not None:
            # The PVC's traffic contract caps the flow too: CIR plus the excess burst per
            # Tc (Tc = Bc/CIR), in frame bits on the first link it carries.
            pvc = span.pvc
            bc = pvc.bc or pvc.cir
            policed = pvc.cir + pvc.be * pvc.cir / bc
            first = links[hops[span.first].link_id]
            wire = link_wire(first, size)
            pvc_capacity = policed * payload / wire
            pvc_share = pvc_capacity
            if isinstance(f, TcpBulkFlow):
                pvc_share /= max(tcp_on.get(_port_key(hops[span.first]), 1), 1)
            if best is None or pvc_share < best[3]:
                best = (f"pvc:{pvc.id}", policed, pvc_capacity, pvc_share)
        assert best is not None  # a route has at least one hop
        key, rate, capacity, share = best
        base_rtt = window = window_bps = bdp = None
        if isinstance(f, TcpBulkFlow):
            back = topo.route(f.dst, f.src) or []
            ack_way = sum(
                links[h.link_id].delay
                + link_wire(links[h.link_id], TCP_IP_HEADERS) * 8 / links[h.link_id].rate
                for h in back
            )
            window = effective_window(f.tcp)
            if window < payload:
                # Segments are cut to the window: the round trip of the smaller packet.
                one_way = sum(
                    links[h.link_id].delay
                    + link_wire(links[h.link_id], window + TCP_IP_HEADERS)
                    * 8
                    / links[h.link_id].rate
                    for h in hops
                )
            base_rtt = one_way + ack_way
            window_bps = window * 8 / base_rtt if base_rtt > 0 else math.inf
            bdp = capacity * base_rtt / 8
        facts[f.id] = PathFacts(
            flow=f.id,
            kind=f.kind,
            path=[_port_key(h) for h in hops],
            hops=len(hops),
            base_rtt=base_rtt,
            one_way_delay=one_way,
            bottleneck=key,
            bottleneck_rate_bps=rate,
            link_bps=capacity,
            share_bps=share,
            window_bytes=window,
            window_bps=window_bps,
            pvc=pvc_id,
            bdp_bytes=bdp,
            est_packets=0,
            est_events=0,
        )
    return facts, routes
