"""Each flow's path facts before simulating: route, base round-trip time, bottleneck and
its share (a link direction's rate, an interface's or a PVC's shaper, a PVC's contract),
bandwidth-delay product, window bound, and what the ACKs' path can clock."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from engine import routing
from engine.net import link_wire
from engine.packet import IP_HEADER, TCP_IP_HEADERS, UDP_HEADER
from engine.scenario import Link, Pvc, Scenario, TcpBulkFlow
from engine.tcp.receiver import effective_window


@dataclass
class PathFacts:
    flow: str
    kind: str
    path: list[str]  # port keys "<link>:<from>><to>"
    hops: int
    base_rtt: float | None  # one full segment out, one ACK back, empty queues, s
    one_way_delay: float  # propagation plus serialisation of one packet, s
    bottleneck: str  # port key, "pvc:<id>" or "shaper:<port key>" of the lowest capacity
    bottleneck_rate_bps: float
    link_bps: float  # payload (goodput) capacity of the bottleneck for this flow alone
    share_bps: float  # the same, less CBR cross traffic, divided among TCP flows on it
    window_bytes: int | None
    window_bps: float | None  # effective window / base_rtt
    pvc: str | None  # the PVC carrying the flow's data, if any
    bdp_bytes: float | None
    ack_clock_bps: float | None  # most payload the ACKs' path can clock (b segments per ACK)
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


def _hop_time(link: Link, hop: routing.Hop, size: int) -> float:
    """Propagation plus serialisation of an IP packet of `size` across `hop`, s."""
    return link.delay_from(hop.src) + link_wire(link, size) * 8 / link.rate_from(hop.src)


# The lowest-capacity resource of a path: (name, frame bit/s, payload capacity, share).
_Limit = tuple[str, float, float, float]


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
        tcp = isinstance(f, TcpBulkFlow)
        payload = f.tcp.mss if isinstance(f, TcpBulkFlow) else f.packet_size
        size = payload + (TCP_IP_HEADERS if tcp else UDP_HEADER + IP_HEADER)
        best = _port_limit(links, hops, payload, size, tcp_on if tcp else {}, cbr_on)
        span = topo.pvc_span(hops)
        if span is not None:
            ports = tcp_on.get(_port_key(hops[span.first]), 1) if tcp else 1
            pvc = _pvc_limit(span.pvc, links[hops[span.first].link_id], payload, size, ports)
            if pvc[3] < best[3]:
                best = pvc
        key, rate, capacity, share = best
        one_way = sum(_hop_time(links[h.link_id], h, size) for h in hops)
        base_rtt = window = window_bps = bdp = ack_clock = None
        if isinstance(f, TcpBulkFlow):
            back = topo.route(f.dst, f.src) or []
            ack_way = sum(_hop_time(links[h.link_id], h, TCP_IP_HEADERS) for h in back)
            window = effective_window(f.tcp)
            if window < payload:
                # Segments are cut to the window: the round trip of the smaller packet.
                one_way = sum(_hop_time(links[h.link_id], h, window + TCP_IP_HEADERS) for h in hops)
            base_rtt = one_way + ack_way
            window_bps = window * 8 / base_rtt if base_rtt > 0 else math.inf
            bdp = capacity * base_rtt / 8
            ack_clock = _ack_clock(links, back, f)
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
            pvc=span.pvc.id if span is not None else None,
            bdp_bytes=bdp,
            ack_clock_bps=ack_clock,
            est_packets=0,
            est_events=0,
        )
    return facts, routes


def _port_limit(
    links: dict[str, Link],
    hops: list[routing.Hop],
    payload: int,
    size: int,
    tcp_on: dict[str, int],
    cbr_on: dict[str, float],
) -> _Limit:
    """The port (or the interface shaper ahead of it) that leaves the flow the least: its
    rate in the hop's direction less CBR cross traffic, split among the TCP flows on it."""
    best: _Limit | None = None
    for hop in hops:
        link = links[hop.link_id]
        wire = link_wire(link, size)
        key = _port_key(hop)
        rate = link.rate_from(hop.src)
        shaper = link.shaping_of(link.direction_from(hop.src))
        if shaper is not None and shaper.rate is not None and shaper.rate < rate:
            key, rate = f"shaper:{key}", float(shaper.rate)
        capacity = rate * payload / wire
        share = max(rate - cbr_on.get(_port_key(hop), 0.0), 0.0) * payload / wire
        share /= max(tcp_on.get(_port_key(hop), 1), 1)
        if best is None or share < best[3]:
            best = (key, rate, capacity, share)
    assert best is not None  # a route has at least one hop
    return best


def _pvc_limit(pvc: Pvc, first: Link, payload: int, size: int, flows: int) -> _Limit:
    """What the PVC lets the flow through: its traffic contract (CIR plus the excess burst
    per Tc, Tc = Bc/CIR) or its shaper's rate if lower, in frame bits on the first link it
    carries, split among the `flows` TCP flows that enter it there."""
    bc = pvc.bc or pvc.cir
    rate = pvc.cir + pvc.be * pvc.cir / bc
    if pvc.becn_shaping:
        rate = min(rate, pvc.cir)
    elif pvc.shaping is not None:
        rate = min(rate, pvc.shaping.rate if pvc.shaping.rate is not None else pvc.cir)
    capacity = rate * payload / link_wire(first, size)
    return (f"pvc:{pvc.id}", rate, capacity, capacity / max(flows, 1))


def _ack_clock(links: dict[str, Link], back: list[routing.Hop], flow: TcpBulkFlow) -> float | None:
    """The payload rate the ACKs' path can clock: its slowest hop's ACKs per second (a
    40-byte ACK with that link's framing) times the segments each ACK acknowledges."""
    if not back:
        return None
    per_second = min(
        links[h.link_id].rate_from(h.src) / (link_wire(links[h.link_id], TCP_IP_HEADERS) * 8)
        for h in back
    )
    tcp = flow.tcp
    per_ack = tcp.delayed_ack.count if tcp.delayed_ack.enabled else 1
    return per_second * per_ack * tcp.mss * 8
