"""Analytic facts about a scenario, before or without simulating it: each flow's path, its
base round-trip time, bottleneck, bandwidth-delay product, window bound, and an estimate of
the simulation's size. `describe()` serves the API's dry run; `diagnosis` reuses the facts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import NamedTuple

from engine import routing
from engine.kernel import SLICES
from engine.net import link_wire
from engine.packet import IP_HEADER, TCP_IP_HEADERS, UDP_HEADER
from engine.scenario import Scenario, TcpBulkFlow
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

    def as_dict(self) -> dict:
        return asdict(self)


def _links(scenario: Scenario) -> dict:
    return {link.id: link for link in scenario.links}


def _port_key(hop: routing.Hop) -> str:
    return f"{hop.link_id}:{hop.src}>{hop.dst}"


def path_facts(scenario: Scenario) -> dict[str, PathFacts]:
    return _analyse(scenario, routing.Topology(scenario))[0]


def _analyse(scenario: Scenario, topo: routing.Topology) -> tuple[dict[str, PathFacts], float]:
    """Each flow's facts, and when the run is expected to end (simulated seconds). Routes
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
    horizon = _estimate(scenario, facts, routes, topo)
    return facts, horizon


def describe(scenario: Scenario) -> dict:
    """Dry-run facts: per-flow path facts, warnings, and the estimated simulation size."""
    topo = routing.Topology(scenario)
    facts, horizon = _analyse(scenario, topo)
    return {
        "scenario_hash": scenario.scenario_hash(),
        "flows": {k: v.as_dict() for k, v in facts.items()},
        "warnings": scenario.warnings(topo),
        "estimate": _total(scenario, facts, horizon),
    }


def estimate(scenario: Scenario) -> dict:
    """The simulation's estimated size: end-to-end packets, SimPy events (the cost of a
    run), and simulated seconds until it ends."""
    return _total(scenario, *_analyse(scenario, routing.Topology(scenario)))


def _total(scenario: Scenario, facts: dict[str, PathFacts], horizon: float) -> dict:
    captured, capture_bytes = _captures(scenario, facts)
    return {
        "packets": min(sum(v.est_packets for v in facts.values()), MOST),
        # A captured packet costs about an event more: its record, then its headers.
        "events": min(
            sum(v.est_events for v in facts.values()) + _run_events(scenario, horizon) + captured,
            MOST,
        ),
        "sim_time": horizon,
        "capture_packets": captured,
        "capture_bytes": capture_bytes,
    }


def _captures(scenario: Scenario, facts: dict[str, PathFacts]) -> tuple[int, int]:
    """Packets the captures will hold and the most bytes their files can take: per
    capture, the packets of the flows whose path crosses the link (a TCP flow's ACKs
    counted with its data), up to max_packets."""
    if not scenario.capture:
        return 0, 0
    mtu = {link.id: link.mtu for link in scenario.links}
    crossing: dict[str, set[str]] = {}
    for flow_id, f in facts.items():
        for port in f.path:
            crossing.setdefault(port.partition(":")[0], set()).add(flow_id)
    packets = size = 0
    for capture in scenario.capture:
        flows = crossing.get(capture.link, set())
        if capture.flows is not None:
            flows = flows & set(capture.flows)
        n = min(capture.max_packets, sum(facts[k].est_packets for k in flows))
        packets += n
        size += PCAP_FILE_HEADER + n * (
            PCAP_RECORD_HEADER + min(capture.snaplen, mtu[capture.link])
        )
    return packets, size


# --- the size estimate -----------------------------------------------------------------
# What a run costs is its SimPy events: one per packet per hop it crosses, one per CBR
# datagram sent, a few per TCP segment for timers, one per sampling beat. The estimate
# predicts each flow's sending rate (its share of the bottleneck, its window per round
# trip, and for a lossy path Padhye et al.'s (1998) model, which counts the timeouts that
# Mathis' bound leaves out), how long it sends (until its bytes are out, its stop, or the
# run ends), and follows the packets hop by hop. Checked against real runs of the presets
# and synthetic scenarios (tests/unit/test_estimate.py): within a factor of 2 of `events`.

GENTLE = frozenset({"sack", "cubic", "vegas"})
TIMER_EVERY = 4  # one retransmission or delayed-ACK timer event per this many segments
PCAP_FILE_HEADER, PCAP_RECORD_HEADER = 24, 16
MOST = 10**18  # counts are capped here, so absurd scenarios give a number, not an overflow


def _count(x: float) -> int:
    return math.ceil(x) if x < MOST else MOST  # NaN too lands on MOST


class _Loss(NamedTuple):
    """A path's losses for a flow's packets: the mean rate, loss events per packet (a
    burst of losses is one event), the chance that the first retransmission after a loss
    is lost too, and that each later one is."""

    mean: float
    events: float
    first: float
    again: float


NO_LOSS = _Loss(0.0, 0.0, 0.0, 0.0)


def _loss(link, hop: routing.Hop, wire: int, flight: float = 1.0) -> _Loss:
    """What the loss model of `link` does to packets of `wire` bytes crossing it in `hop`'s
    direction, `flight` packets following a lost one before its retransmission (scripted
    drops are counted apart, in `_scripted`)."""
    spec = link.loss
    forward = hop.src == link.a
    if spec.direction != "both" and (spec.direction == "a_to_b") != forward:
        return NO_LOSS
    if spec.model == "bernoulli":
        p = float(spec.rate or 0.0)
        return _Loss(p, p, p, p)
    if spec.model == "ber":
        p = -math.expm1(wire * 8 * math.log1p(-(spec.ber or 0.0)))
        return _Loss(p, p, p, p)
    if spec.model == "gilbert_elliott":
        # One state transition per packet, so a burst ends only as packets cross: the
        # retransmission meets the bad state still unless the flight behind the lost packet
        # moved the chain on, and each lone retransmission after it moves it one step.
        p_gb, p_bg, good, bad = spec.p_gb or 0.0, spec.p_bg or 0.0, spec.loss_good, spec.loss_bad
        in_bad = p_gb / (p_gb + p_bg) if p_gb + p_bg > 0 else 0.0
        mean = in_bad * bad + (1 - in_bad) * good
        if mean <= 0:
            return NO_LOSS
        events = min(mean, (1 - in_bad) * (p_gb * bad + good))
        from_bad = in_bad * bad / mean

        def after(steps: float) -> float:
            still = (1 - p_bg) ** steps
            return from_bad * (still * bad + (1 - still) * mean) + (1 - from_bad) * mean

        return _Loss(mean, events, after(flight), after(1))
    return NO_LOSS


def _path_loss(links: dict, hops: list[routing.Hop], size: int, flight: float) -> _Loss:
    survive, events, first, again = 1.0, 0.0, 1.0, 1.0
    for hop in hops:
        link = links[hop.link_id]
        loss = _loss(link, hop, link_wire(link, size), flight)
        survive *= 1.0 - loss.mean
        events += loss.events
        first *= 1.0 - loss.first
        again *= 1.0 - loss.again
    return _Loss(1.0 - survive, min(events, 1.0 - survive), 1.0 - first, 1.0 - again)


def _stall(t0: float, most: float, first: float, again: float) -> tuple[float, float]:
    """A timeout's expected stall and retransmissions: it waits t0, then doubling (RFC 6298
    5.5) up to `most`, for as long as each retransmission is lost again (PFTK's T0 f(p))."""
    time = sends = 0.0
    wait, chance = t0, 1.0
    for i in range(64):
        time += chance * wait
        sends += chance
        chance *= first if i == 0 else again
        if wait >= most:
            return time + chance * most / (1 - again), sends + chance / (1 - again)
        wait = min(wait * 2, most)
    return time, sends


def _scripted(links: dict, hops: list[routing.Hop]) -> int:
    """Data packets a `script` loss model drops on the path: each one is sent again."""
    n = 0
    for hop in hops:
        spec = links[hop.link_id].loss
        forward = hop.src == links[hop.link_id].a
        if spec.model == "script" and (
            spec.direction == "both" or (spec.direction == "a_to_b") == forward
        ):
            n += len(spec.drop)
    return n


@dataclass
class _Plan:
    """One flow's predicted sending: packets per second and when it would be done."""

    rate_pps: float
    need: float  # packets it sends to finish (inf: unlimited)
    end: float  # simulated time it is done (inf: never before the run ends)


def _tcp_plan(f: TcpBulkFlow, facts: PathFacts, loss_of: Callable, extra: int) -> _Plan:
    tcp = f.tcp
    rtt = max(facts.base_rtt or 0.0, 1e-6)
    b = tcp.delayed_ack.count if tcp.delayed_ack.enabled else 1
    pps = min(facts.share_bps, facts.window_bps or math.inf) / (8 * tcp.mss)
    loss = loss_of(f.src, f.dst, tcp.mss + TCP_IP_HEADERS, max(pps * rtt / 2, 1.0))
    p, e = min(loss.mean, 0.99), min(loss.events, 0.99)
    # A timeout ends when a retransmission and its ACK both get through.
    acked = 1.0 - loss_of(f.dst, f.src, TCP_IP_HEADERS, 1.0).mean
    first = min(1 - (1 - loss.first) * acked, 0.99)
    again = min(1 - (1 - loss.again) * acked, 0.99)
    if e > 0 and tcp.variant not in ("none", "bbr"):  # BBR's rate does not follow loss
        # PFTK: B = 1 / (RTT sqrt(2bp/3) + T0 min(1, 3 sqrt(3bp/8)) p f(p)), p the loss
        # events per packet, T0 f(p) the stall of a timeout and its backoff (_stall).
        t0 = min(max(tcp.min_rto, 2 * rtt), tcp.max_rto)
        q = min(1.0, 3 * math.sqrt(3 * b * e / 8) * p / e)  # a burst times out more often
        if tcp.sack or tcp.variant in GENTLE:
            q /= 2  # measured: these recover from more losses without a timeout
        # A gentler decrease than Reno's halving (CUBIC's beta) keeps a larger window:
        # AIMD's sqrt((1 + beta) / (2 (1 - beta))) against Reno's sqrt(3/2).
        beta = tcp.cubic_beta if tcp.variant == "cubic" else 0.5
        gentler = math.sqrt((1 + beta) / (2 * (1 - beta)) / 1.5)
        # Per loss event: 1/e segments in congestion avoidance, an RTT apart per window,
        # and with probability q a timeout's stall and retransmissions. (1 - p): near total
        # loss no ACK comes back and only the timer paces the sender.
        between = rtt * math.sqrt(2 * b / (3 * e)) / gentler * (1 - p)
        stall, sends = _stall(t0, tcp.max_rto, first, again)
        pps = min(pps, (1 / e + q * sends) / (between + q * stall))
    pps = max(pps, 1e-9)
    if f.bytes is None:
        need, end = math.inf, math.inf
    else:
        need = math.ceil(f.bytes / tcp.mss) / (1 - p) + extra
        end = f.start + (rtt if tcp.handshake else 0.0) + need / pps + rtt / 2
    if f.stop is not None:
        end = min(end, f.stop)
    return _Plan(pps, need, end)


def _plans(
    scenario: Scenario, facts: dict[str, PathFacts], routes: dict, backs: dict, links: dict
) -> dict:
    plans = {}
    paths = {(f.src, f.dst): routes[f.id] for f in scenario.flows}
    paths.update({(f.dst, f.src): back for f in scenario.flows if (back := backs.get(f.id))})
    known: dict[tuple, _Loss] = {}

    def loss_of(src: str, dst: str, size: int, flight: float) -> _Loss:
        """_path_loss once per path, packet size and flight: flows share paths."""
        key = (src, dst, size, flight)
        if key not in known:
            known[key] = _path_loss(links, paths.get((src, dst), []), size, flight)
        return known[key]

    for f in scenario.flows:
        hops = routes[f.id]
        if isinstance(f, TcpBulkFlow):
            plans[f.id] = _tcp_plan(f, facts[f.id], loss_of, _scripted(links, hops))
        else:
            end = (f.stop + facts[f.id].one_way_delay) if f.stop is not None else math.inf
            plans[f.id] = _Plan(f.rate / (8 * f.packet_size), math.inf, end)
    return plans


def _horizon(scenario: Scenario, plans: dict) -> float:
    """When the run ends: at `duration`, or once every finite flow is done."""
    duration = float(scenario.duration)
    finite = [
        plans[f.id].end
        for f in scenario.flows
        if f.stop is not None or (isinstance(f, TcpBulkFlow) and f.bytes is not None)
    ]
    if scenario.stop_when_done and finite:
        return min(duration, max(finite))
    return duration


def _run_events(scenario: Scenario, horizon: float) -> int:
    """The sampler's beats (one per sample_interval), simulate()'s slices, each flow's
    start and stop."""
    slices = min(SLICES, _count(horizon / (float(scenario.duration) / SLICES)))
    beats = _count(horizon / float(scenario.sample_interval))
    return min(beats + slices + 2 * len(scenario.flows) + 2, MOST)


def _estimate(
    scenario: Scenario, facts: dict[str, PathFacts], routes: dict, topo: routing.Topology
) -> float:
    """Fill each flow's est_packets and est_events (see the comment above SLICES); return
    when the run is expected to end."""
    links = _links(scenario)
    backs = {
        f.id: topo.route(f.dst, f.src) or [] for f in scenario.flows if isinstance(f, TcpBulkFlow)
    }
    plans = _plans(scenario, facts, routes, backs, links)
    horizon = _horizon(scenario, plans)
    for f in scenario.flows:
        plan, hops = plans[f.id], routes[f.id]
        until = min(horizon, plan.end, f.stop if f.stop is not None else math.inf)
        active = max(until - f.start, 0.0)
        if isinstance(f, TcpBulkFlow):
            back = backs[f.id]
            b = f.tcp.delayed_ack.count if f.tcp.delayed_ack.enabled else 1
            data = min(plan.need, plan.rate_pps * active)
            acks = data / b
            handshake = 3 * (len(hops) + len(back)) if f.tcp.handshake else 0
            packets = data + acks
            events = data * len(hops) + acks * len(back) + data / TIMER_EVERY + handshake
        else:
            packets = plan.rate_pps * active
            # One event per datagram sent, then one per hop it gets through: a hop
            # slower than the offered load forwards only what its rate allows.
            events, through = packets, packets
            size = f.packet_size + UDP_HEADER + IP_HEADER
            for hop in hops:
                link = links[hop.link_id]
                wire = link_wire(link, size)
                through = min(through, link.rate * active / (8 * wire))
                events += through
                through *= 1.0 - _loss(link, hop, wire).mean
        facts[f.id].est_packets = _count(packets)
        facts[f.id].est_events = _count(events)
    return horizon
