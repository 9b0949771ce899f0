"""What limits each flow, in numbers and one sentence of advice.

Every TCP flow has upper bounds that physics and TCP theory set independently, and each
reported bound is one the achieved goodput cannot exceed:

- **link**: the payload rate the path's most constrained resource left to this flow while
  it ran (engine/usage.py): a port's rate less per-packet overhead and less what the
  other traffic actually carried across it meanwhile, or a PVC's traffic contract (the
  tokens in its buckets at the flow's start plus what they earned) less the other
  traffic's frames. Flows that never ran at the same time do not share anything; flows
  that did share what they really took, fair or not.
- **window**: the effective window per base round trip (plus the first window's head
  start when there is no handshake to wait for).
- **ack clock**: what the ACKs' way back can clock (its slowest port's ACKs per second
  times the segments each acknowledges), reported where it is below the link's: a slow
  return channel (ADSL's uplink) paces the sender, one segment per ACK that gets back.
  The limit is `ack_clock` when the flow reached it and its time is the link's or a
  window's (a window held full by ACKs queued on the way back), or when the time the
  accounting booked to `ack_clock` is the flow's largest.
- **mathis**: Mathis et al. (1997), MSS/RTT * sqrt(3/(2bp)) with b packets acknowledged
  per ACK and p the loss rate the flow saw. It models a congestion-avoidance sawtooth;
  when a flow delivered more (its few losses came late, slow start moved the data), the
  formula does not describe the flow and is not reported.

The smallest bound that the achieved goodput reaches is the limit; when the goodput falls
well short of every bound, timeouts, a short transfer (slow start), loss, or a PVC's
policer discarding the bursts TCP sends are to blame.
"""

from __future__ import annotations

import math
from typing import Any

from engine.advice import remedies, words
from engine.advice.alike import SharedBounds
from engine.advice.whatif import Bound, PathModel
from engine.analysis import PathFacts
from engine.analysis.paths import flow_facts
from engine.net import link_wire
from engine.result import Bounds, Diagnosis, Limit, PvcSummary, Result, TcpFlowSummary
from engine.scenario import Pvc, Scenario, TcpBulkFlow
from engine.scenario.topology import Topology
from engine.tcp.cc import variant
from engine.usage import Share

REACHED = 0.85  # share of a flow's life its bottleneck must be busy to be its limit
# The ACKs' way back limits a flow when it clocks less than this margin below the forward
# bottleneck, and the flow got at least REACHED of what it clocks.
ACK_MARGIN = 0.05


def mathis_bps(mss: int, rtt: float, p: float, acked_per_ack: int) -> float:
    return mss * 8 / rtt * math.sqrt(3 / (2 * acked_per_ack * p))


def diagnose(
    scenario: Scenario,
    result: Result,
    shares: dict[str, list[Share]] | None = None,
    topo: Topology | None = None,
) -> dict[str, Diagnosis]:
    """Each TCP flow's diagnosis; `shares` are the measured shares of engine/usage.py (the
    static 1/n split of the path facts stands in without them). `topo`, the run's own
    topology, already knows every flow's route."""
    topo = topo or Topology(scenario)
    facts, routes = flow_facts(scenario, topo)
    pvcs = {p.id: p for p in scenario.frame_relay.pvcs} if scenario.frame_relay else {}
    links = {link.id: link for link in scenario.links}
    shared: SharedBounds[Bound] = SharedBounds()  # most flows' paths are alike
    out = {}
    for flow in scenario.flows:
        summary = result.flows.get(flow.id)
        if not isinstance(flow, TcpBulkFlow) or not isinstance(summary, TcpFlowSummary):
            continue
        f = facts[flow.id]
        measured = (shares or {}).get(flow.id)
        if measured:
            link = min(measured, key=lambda s: s.bound_bps)
        else:
            link = Share(f.bottleneck, f.share_bps, f.link_bps, 0.0)
        policing = _policing(f, result, pvcs, scenario, flow)
        d = _diagnose_tcp(flow, summary, f, link, policing, result.sim_time)
        ctx = remedies.Context(
            scenario=scenario,
            links=links,
            flow=flow,
            summary=summary,
            result=result,
            facts=f,
            share=link,
            limit=d["limit"],
            bounds=d["bounds"],
            loss_rate=summary.plr or 0.0,
            policing=policing,
            model=PathModel.of(scenario, flow, topo, links, routes.get(flow.id), shared),
        )
        found = remedies.remedies(ctx)
        why = remedies.why(ctx)
        # Validated once, whole: a copy with the remedies cost a validation's worth again.
        out[flow.id] = Diagnosis(**d, remedies=found, why=why, advice=words.advice(why, found))
    return out


class _Policing:
    """A PVC whose policer discarded more of the path's frames than the links did."""

    def __init__(self, pvc: Pvc, counters: PvcSummary, link_drops: int, frame_bits: int):
        self.pvc = pvc
        self.counters = counters
        self.link_drops = link_drops
        self.frame_bits = frame_bits  # a full segment's frame on the PVC's first link


def _policing(
    f: PathFacts, result: Result, pvcs: dict[str, Pvc], scenario: Scenario, flow: TcpBulkFlow
) -> _Policing | None:
    if f.pvc is None or f.pvc not in result.pvcs:
        return None
    counters = result.pvcs[f.pvc]
    link_drops = sum(
        result.links[key].drops + result.links[key].error_drops
        for key in f.path
        if key in result.links
    )
    if counters.excess_dropped == 0 or counters.excess_dropped <= link_drops:
        return None
    pvc = pvcs[f.pvc]
    links = {link.id: link for link in scenario.links}
    frame_bits = 0
    for key in f.path:  # the first link the PVC carries leaves one of its routers
        link_id, ends = key.split(":")
        if ends.split(">")[0] in (pvc.src, pvc.dst):
            frame_bits = link_wire(links[link_id], flow.tcp.payload + flow.tcp.headers) * 8
            break
    return _Policing(pvc, counters, link_drops, frame_bits)


def _window_bound(f: PathFacts, flow: TcpBulkFlow, active: float) -> float | None:
    """At most one window per base round trip, plus the edges of a finite transfer: the
    first window leaves at once (without a handshake to wait for) and a last segment
    shorter than the others crosses faster. Both fade as the transfer lengthens."""
    if f.window_bps is None or f.base_rtt is None:
        return None
    if active <= 0:
        return f.window_bps
    edges = f.window_bps * f.base_rtt / active + flow.tcp.payload * 8 / active
    return f.window_bps + edges


def _diagnose_tcp(
    flow: TcpBulkFlow,
    s: TcpFlowSummary,
    f: PathFacts,
    link: Share,
    policing: _Policing | None,
    end: float,
) -> dict[str, Any]:
    """The flow's `Diagnosis` fields but its remedies and sentences, which the remedy rules
    write from these."""
    tcp = flow.tcp
    rtt = f.base_rtt
    measured_rtt = s.rtt_mean or rtt
    b = tcp.delayed_ack.count if tcp.delayed_ack.enabled else 1
    p = s.plr or 0.0
    achieved = s.goodput_bps
    # Mathis models a loss-driven window; BBR's rate is not set by loss (docs/scenario.md).
    traits = variant(tcp.variant)
    loss_bound = (
        mathis_bps(tcp.payload, measured_rtt, p, b)
        if p > 0 and measured_rtt and traits.loss_based
        else None
    )
    if loss_bound is not None and loss_bound < achieved:
        loss_bound = None  # not a sawtooth the formula describes (see the module docstring)
    active = s.completion_time if s.completion_time is not None else _active(flow, end)
    window_bps = _window_bound(f, flow, active)
    ack = f.ack_clock_bps
    ack_binds = ack is not None and ack < link.bound_bps * (1 - ACK_MARGIN)
    bounds = Bounds(
        link_bps=link.bound_bps,
        window_bps=window_bps,
        mathis_bps=loss_bound,
        application_bps=None,
        ack_clock_bps=ack if ack_binds else None,
        achieved_bps=achieved,
    )
    name, spent = _limit_by_time(flow, s, policing, bounds)
    bottleneck: str | None = link.resource
    clocked = ack_binds and name in _CLOCKED and ack is not None and achieved >= REACHED * ack
    if clocked and not _kept_busy(s):
        name, spent = "ack_clock", _clocked(s)
    if name == "ack_clock":  # by the clause above, or by the time the accounting booked
        bottleneck = f.ack_port
    return {
        "limit": name,
        "bounds": bounds,
        "bdp_bytes": f.bdp_bytes,
        "rtt": rtt,
        "bottleneck": bottleneck,
        "limit_time": spent,
    }


# What an ACK-clocked flow's time shows: its bottleneck busy less than its life, the rest
# a window full of segments whose ACKs wait on the way back (engine/accounting.py).
_CLOCKED: frozenset[Limit] = frozenset(
    {"link_capacity", "receive_window", "send_buffer", "congestion_window", "ack_clock"}
)


def _kept_busy(s: TcpFlowSummary) -> bool:
    """The flow kept its bottleneck busy for most of its life (REACHED): the link's limit,
    whatever the ACKs' way back could clock."""
    t = s.time
    if t is None:
        return False
    after_handshake = t.duration - t.handshake
    return after_handshake > 0 and t.busy >= REACHED * after_handshake


def _clocked(s: TcpFlowSummary) -> float | None:
    """What a slow way back cost the flow: its life past the handshake beyond the time its
    bytes take at the forward bottleneck's rate (the accounting's `busy`)."""
    t = s.time
    if t is None:
        return None
    return max(t.duration - t.handshake - t.busy, 0.0)


# The limit each state of the flow's time is (engine/accounting.py), in the order ties go.
# Congestion avoidance is the window that losses cut when the flow lost anything, else the
# congestion window; a fixed-window sender recovers only after timeouts.
_LIMIT_OF: dict[str, Limit] = {
    "busy": "link_capacity",
    "receive_window": "receive_window",
    "send_buffer": "send_buffer",
    "slow_start": "congestion_window",
    "congestion_avoidance": "congestion_window",
    "recovery": "loss",
    "timeout": "timeouts",
    "application": "application",
    "ack_clock": "ack_clock",
}
_LOSSES: frozenset[Limit] = frozenset({"loss", "timeouts"})
_WINDOWS: frozenset[Limit] = frozenset({"receive_window", "send_buffer"})


def _limit_by_time(
    flow: TcpBulkFlow, s: TcpFlowSummary, policing: _Policing | None, bounds: Bounds
) -> tuple[Limit, float | None]:
    """The limit that cost the flow the most time, and that time. Every bound stays an
    upper bound whatever the limit is; a limit must also be consistent with the bounds and
    the causes behind it: losses are named only when packets were lost (timers that
    expired on packets still queued or serialising mean a path slower than the timer:
    the link); a window only when its bound is below the link's (a window that holds more
    than the path carries is full because its packets wait in a queue: the link's); a
    PVC's policer when its discards outnumber the links' drops.

    The bottleneck's busy time is the transfer itself at the path's rate, not time a
    limit added: it names the link only when the flow kept its bottleneck busy for most of
    its life (REACHED, as the bounds' rule). A window that left a 1 Mbit/s link idle 30% of
    the time is the window's limit, though the link was busy for the other 70%."""
    t = s.time
    if t is None:
        return "incomplete", None
    window_fits = bounds.window_bps is not None and bounds.window_bps < (bounds.link_bps or 0)
    after_handshake = t.duration - t.handshake
    full = _kept_busy(s)
    spent: dict[Limit, float] = {}
    limits_window = variant(flow.tcp.variant).limits_window  # once, not once per state
    for state, limit in _LIMIT_OF.items():
        if state == "busy" and not full and after_handshake > t.busy:
            continue  # the others' time decides (the docstring's second paragraph)
        if state == "congestion_avoidance" and s.retransmissions:
            limit = "loss"
        if not limits_window and limit == "loss":
            limit = "timeouts"
        if limit in _LOSSES and s.packets_dropped == 0:
            limit = "link_capacity"
        if limit in _WINDOWS and not window_fits:
            limit = "link_capacity"
        if limit == "ack_clock" and bounds.ack_clock_bps is None:
            limit = "link_capacity"  # a way back within ACK_MARGIN of the link's rate
        spent[limit] = spent.get(limit, 0.0) + getattr(t, state)
    name = max(spent, key=lambda k: spent[k])  # the first of equals, in _LIMIT_OF's order
    if spent[name] <= 0:
        return "incomplete", None  # never past the handshake
    if name in _LOSSES and policing is not None:
        return "pvc_policing", spent[name]  # the losses that set the pace are its discards
    return name, spent[name]


def _active(flow: TcpBulkFlow, end: float) -> float:
    last = end if flow.stop is None else min(end, float(flow.stop))
    return max(last - float(flow.start), 0.0)
