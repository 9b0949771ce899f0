"""The size of a run before it runs: packets, SimPy events (what a run costs) and
simulated seconds, flow by flow (`estimate_into` fills each flow's `est_packets` and
`est_events`); and, from them, what it will hold in memory (engine.analysis.memory)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from engine.analysis.memory import memory
from engine.analysis.paths import PathFacts, _links
from engine.kernel import SLICES
from engine.net import link_wire
from engine.protocol import IP_HEADER, UDP_HEADER
from engine.scenario import Link, Scenario, TcpBulkFlow
from engine.scenario.common import PCAP_FILE_HEADER, PCAP_RECORD_HEADER
from engine.scenario.topology import Hop, Topology
from engine.tcp.cc import variant

Links = dict[str, Link]
Routes = dict[str, list[Hop]]  # flow id -> its hops

# --- the size estimate -----------------------------------------------------------------
# What a run costs is its SimPy events: one per packet per hop it crosses, one per CBR
# datagram sent, a few per TCP segment for timers, one per sampling beat. The estimate
# predicts each flow's sending rate (its share of the bottleneck, its window per round
# trip, and for a lossy path Padhye et al.'s (1998) model, which counts the timeouts that
# Mathis' bound leaves out), how long it sends (until its bytes are out, its stop, or the
# run ends), and follows the packets hop by hop. Checked against real runs of the presets
# and synthetic scenarios (tests/unit/test_estimate.py): within a factor of 2 of `events`.

TIMER_EVERY = 4  # one retransmission or delayed-ACK timer event per this many segments
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


def _loss(link: Link, hop: Hop, wire: int, flight: float = 1.0) -> _Loss:
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
            still: float = (1 - p_bg) ** steps  # float ** float is typed Any (it may be complex)
            return from_bad * (still * bad + (1 - still) * mean) + (1 - from_bad) * mean

        return _Loss(mean, events, after(flight), after(1))
    return NO_LOSS


def _path_loss(links: Links, hops: list[Hop], size: int, flight: float) -> _Loss:
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


def _scripted(links: Links, hops: list[Hop]) -> int:
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


#: The loss a packet of `size` bytes meets from src to dst, `flight` packets behind a lost one.
LossOf = Callable[[str, str, int, float], _Loss]


def _tcp_plan(f: TcpBulkFlow, facts: PathFacts, loss_of: LossOf, extra: int) -> _Plan:
    tcp = f.tcp
    rtt = max(facts.base_rtt or 0.0, 1e-6)
    b = tcp.delayed_ack.count if tcp.delayed_ack.enabled else 1
    pps = min(facts.share_bps, facts.window_bps or math.inf) / (8 * tcp.payload)
    loss = loss_of(f.src, f.dst, tcp.payload + tcp.headers, max(pps * rtt / 2, 1.0))
    p, e = min(loss.mean, 0.99), min(loss.events, 0.99)
    # A timeout ends when a retransmission and its ACK both get through.
    acked = 1.0 - loss_of(f.dst, f.src, tcp.headers, 1.0).mean
    first = min(1 - (1 - loss.first) * acked, 0.99)
    again = min(1 - (1 - loss.again) * acked, 0.99)
    traits = variant(tcp.variant)
    # BBR's rate does not follow loss; a fixed window has no window for loss to size.
    if e > 0 and traits.loss_based and traits.limits_window:
        # PFTK: B = 1 / (RTT sqrt(2bp/3) + T0 min(1, 3 sqrt(3bp/8)) p f(p)), p the loss
        # events per packet, T0 f(p) the stall of a timeout and its backoff (_stall).
        t0 = min(max(tcp.min_rto, 2 * rtt), tcp.max_rto)
        q = min(1.0, 3 * math.sqrt(3 * b * e / 8) * p / e)  # a burst times out more often
        # Measured: SACK recovers from more losses without a timeout (so do the variants
        # whose `timeout_factor` says so).
        q *= 0.5 if traits.sack_permitted(tcp) else traits.timeout_factor
        # A gentler decrease than Reno's halving (CUBIC's beta) keeps a larger window:
        # AIMD's sqrt((1 + beta) / (2 (1 - beta))) against Reno's sqrt(3/2).
        beta = traits.decrease_factor(tcp)
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
        need = math.ceil(f.bytes / tcp.payload) / (1 - p) + extra
        end = f.start + (rtt if tcp.handshake else 0.0) + need / pps + rtt / 2
    if f.stop is not None:
        end = min(end, f.stop)
    return _Plan(pps, need, end)


def _plans(
    scenario: Scenario, facts: dict[str, PathFacts], routes: Routes, backs: Routes, links: Links
) -> dict[str, _Plan]:
    plans = {}
    paths = {(f.src, f.dst): routes[f.id] for f in scenario.flows}
    paths.update({(f.dst, f.src): back for f in scenario.flows if (back := backs.get(f.id))})
    known: dict[tuple[str, str, int, float], _Loss] = {}

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


def _horizon(scenario: Scenario, plans: dict[str, _Plan]) -> float:
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


def estimate_into(
    scenario: Scenario, facts: dict[str, PathFacts], routes: Routes, topo: Topology
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
                through = min(through, link.rate_from(hop.src) * active / (8 * wire))
                events += through
                through *= 1.0 - _loss(link, hop, wire).mean
        facts[f.id].est_packets = _count(packets)
        facts[f.id].est_events = _count(events)
    return horizon


def total(scenario: Scenario, facts: dict[str, PathFacts], horizon: float) -> dict[str, Any]:
    captured, capture_bytes = _captures(scenario, facts)
    held = memory(scenario, facts, horizon, capture_bytes)
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
        # What a worker will hold (engine.analysis.memory).
        "memory_bytes": held["bytes"],
        "series": held["series"],
        "series_points": held["series_points"],
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
