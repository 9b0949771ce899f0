"""Each flow's path facts before simulating: route, base round-trip time, bottleneck and
its share (a link direction's rate, an interface's or a PVC's shaper, a PVC's contract),
bandwidth-delay product, window bound, and what the ACKs' path can clock."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

from engine.net import link_wire
from engine.protocol import IP_HEADER, UDP_HEADER
from engine.scenario import Link, Pvc, Scenario, TcpBulkFlow
from engine.scenario.topology import Hop, Topology
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
    ack_port: str | None  # the port key of the ACKs' path that sets `ack_clock_bps`
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


def _port_key(hop: Hop) -> str:
    return f"{hop.link_id}:{hop.src}>{hop.dst}"


class _Ports:
    """Each link direction's rate, delay and shaped rate, and each link's frame sizes,
    looked up once: the thousands of flows of a dry run cross the same few ports. The
    callers read `directions` and `wires` directly and ask `direction`/`wire` on a miss:
    a dry run is every run request's budget check."""

    def __init__(self, links: dict[str, Link]):
        self.links = links
        self.directions: dict[tuple[str, str], tuple[float, float, float | None]] = {}
        self.wires: dict[tuple[str, int], int] = {}

    def direction(self, hop: Hop) -> tuple[float, float, float | None]:
        """(rate, delay, shaped rate or None) of the link direction `hop` crosses."""
        link = self.links[hop.link_id]
        shaper = link.shaping_of(link.direction_from(hop.src))
        shaped = float(shaper.rate) if shaper is not None and shaper.rate is not None else None
        found = self.directions[(hop.link_id, hop.src)] = (
            link.rate_from(hop.src),
            link.delay_from(hop.src),
            shaped,
        )
        return found

    def wire(self, link_id: str, size: int) -> int:
        """Bytes an IP packet of `size` takes on the link (`link_wire`)."""
        wire = self.wires[(link_id, size)] = link_wire(self.links[link_id], size)
        return wire

    def hop_time(self, hop: Hop, size: int) -> float:
        """Propagation plus serialisation of an IP packet of `size` across `hop`, s."""
        rate, delay, _ = self.directions.get((hop.link_id, hop.src)) or self.direction(hop)
        wire = self.wires.get((hop.link_id, size)) or self.wire(hop.link_id, size)
        return delay + wire * 8 / rate


# The lowest-capacity resource of a path: (name, frame bit/s, payload capacity, share).
_Limit = tuple[str, float, float, float]


def flow_facts(
    scenario: Scenario, topo: Topology
) -> tuple[dict[str, PathFacts], dict[str, list[Hop]]]:
    """Each flow's facts (its estimate still zero) and route. Routes
    come from one `Topology`: thousands of flows share a few paths, and a dry run (every run
    request's budget check) must stay cheap for any valid scenario."""
    links = _links(scenario)
    ports = _Ports(links)
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
                wire = ports.wire(hop.link_id, size)
                cbr_on[key] = cbr_on.get(key, 0.0) + f.rate * wire / f.packet_size
    facts = {}
    for f in scenario.flows:
        hops = routes[f.id]
        is_tcp = isinstance(f, TcpBulkFlow)
        payload = f.tcp.payload if isinstance(f, TcpBulkFlow) else f.packet_size
        size = payload + (f.tcp.headers if isinstance(f, TcpBulkFlow) else UDP_HEADER + IP_HEADER)
        best, one_way = _port_limit(ports, hops, payload, size, tcp_on if is_tcp else {}, cbr_on)
        span = topo.pvc_span(hops)
        if span is not None:
            sharing = tcp_on.get(_port_key(hops[span.first]), 1) if is_tcp else 1
            pvc = _pvc_limit(span.pvc, links[hops[span.first].link_id], payload, size, sharing)
            if pvc[3] < best[3]:
                best = pvc
        key, rate, capacity, share = best
        tcp = _NOT_TCP
        if isinstance(f, TcpBulkFlow):
            tcp = _tcp_facts(ports, hops, topo.route(f.dst, f.src) or [], f, capacity, one_way)
        facts[f.id] = PathFacts(
            flow=f.id,
            kind=f.kind,
            path=[_port_key(h) for h in hops],
            hops=len(hops),
            base_rtt=tcp.base_rtt,
            one_way_delay=tcp.one_way if tcp.one_way is not None else one_way,
            bottleneck=key,
            bottleneck_rate_bps=rate,
            link_bps=capacity,
            share_bps=share,
            window_bytes=tcp.window,
            window_bps=tcp.window_bps,
            pvc=span.pvc.id if span is not None else None,
            bdp_bytes=tcp.bdp,
            ack_clock_bps=tcp.ack_clock,
            ack_port=tcp.ack_port,
            est_packets=0,
            est_events=0,
        )
    return facts, routes


class _Tcp(NamedTuple):
    """A TCP flow's own facts (None for other flows)."""

    base_rtt: float | None
    one_way: float | None  # when the window cuts segments short: the smaller packet's
    window: int | None
    window_bps: float | None
    bdp: float | None
    ack_clock: float | None
    ack_port: str | None


_NOT_TCP = _Tcp(None, None, None, None, None, None, None)


def _tcp_facts(
    ports: _Ports,
    hops: list[Hop],
    back: list[Hop],
    flow: TcpBulkFlow,
    capacity: float,
    one_way: float,
) -> _Tcp:
    """Base RTT (a full segment out, its ACK back), the window and its bound, the BDP, and
    the payload rate the ACKs' path can clock: its slowest hop's ACKs per second (a
    bare ACK, 40 bytes and any options, with that link's framing) times the segments each ACK acknowledges."""
    ack_way = 0.0
    acks_per_second = math.inf
    ack_port = None
    directions, wires = ports.directions, ports.wires
    headers = flow.tcp.headers  # a bare ACK's, options included
    for hop in back:
        rate, delay, _ = directions.get((hop.link_id, hop.src)) or ports.direction(hop)
        bits = (wires.get((hop.link_id, headers)) or ports.wire(hop.link_id, headers)) * 8
        ack_way += delay + bits / rate
        if rate / bits < acks_per_second:
            acks_per_second = rate / bits
            ack_port = _port_key(hop)
    tcp = flow.tcp
    window = effective_window(tcp)
    cut = None
    if window < tcp.payload:
        # Segments are cut to the window: the round trip of the smaller packet.
        cut = sum(ports.hop_time(h, window + headers) for h in hops)
        one_way = cut
    base_rtt = one_way + ack_way
    window_bps = window * 8 / base_rtt if base_rtt > 0 else math.inf
    per_ack = tcp.delayed_ack.count if tcp.delayed_ack.enabled else 1
    ack_clock = acks_per_second * per_ack * tcp.payload * 8 if back else None
    return _Tcp(base_rtt, cut, window, window_bps, capacity * base_rtt / 8, ack_clock, ack_port)


def _port_limit(
    ports: _Ports,
    hops: list[Hop],
    payload: int,
    size: int,
    tcp_on: dict[str, int],
    cbr_on: dict[str, float],
) -> tuple[_Limit, float]:
    """The port (or the interface shaper ahead of it) that leaves the flow the least (its
    rate in the hop's direction less CBR cross traffic, split among the TCP flows on it),
    and the path's one-way delay for a packet of `size`."""
    best: _Limit | None = None
    one_way = 0.0
    directions, wires = ports.directions, ports.wires
    for hop in hops:
        link_id = hop.link_id
        wire = wires.get((link_id, size)) or ports.wire(link_id, size)
        rate, delay, shaped = directions.get((link_id, hop.src)) or ports.direction(hop)
        one_way += delay + wire * 8 / rate
        port = key = f"{link_id}:{hop.src}>{hop.dst}"
        if shaped is not None and shaped < rate:
            key, rate = f"shaper:{key}", shaped
        capacity = rate * payload / wire
        share = max(rate - cbr_on.get(port, 0.0), 0.0) * payload / wire
        share /= max(tcp_on.get(port, 1), 1)
        if best is None or share < best[3]:
            best = (key, rate, capacity, share)
    assert best is not None  # a route has at least one hop
    return best, one_way


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
