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

from engine import routing
from engine.advice import remedies
from engine.advice.whatif import PathModel
from engine.analysis import PathFacts
from engine.analysis.paths import flow_facts
from engine.net import link_wire
from engine.packet import TCP_IP_HEADERS
from engine.result import Bounds, Diagnosis, Limit, PvcSummary, Result, TcpFlowSummary
from engine.scenario import Pvc, Scenario, TcpBulkFlow
from engine.usage import Share

REACHED = 0.85  # achieved/bound at or above which a bound counts as the binding one


def mathis_bps(mss: int, rtt: float, p: float, acked_per_ack: int) -> float:
    return mss * 8 / rtt * math.sqrt(3 / (2 * acked_per_ack * p))


def diagnose(
    scenario: Scenario,
    result: Result,
    shares: dict[str, list[Share]] | None = None,
    topo: routing.Topology | None = None,
) -> dict[str, Diagnosis]:
    """Each TCP flow's diagnosis; `shares` are the measured shares of engine/usage.py (the
    static 1/n split of the path facts stands in without them). `topo`, the run's own
    topology, already knows every flow's route."""
    topo = topo or routing.Topology(scenario)
    facts, routes = flow_facts(scenario, topo)
    pvcs = {p.id: p for p in scenario.frame_relay.pvcs} if scenario.frame_relay else {}
    links = {link.id: link for link in scenario.links}
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
            limit=d.limit,
            bounds=d.bounds,
            loss_rate=summary.plr or 0.0,
            policing=policing,
            model=PathModel.of(scenario, flow, topo, links, routes.get(flow.id)),
        )
        found = remedies.remedies(ctx)
        out[flow.id] = d.model_copy(
            update={"remedies": found, "advice": remedies.advice(ctx, found)}
        )
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
            frame_bits = link_wire(links[link_id], flow.tcp.mss + TCP_IP_HEADERS) * 8
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
    edges = f.window_bps * f.base_rtt / active + flow.tcp.mss * 8 / active
    return f.window_bps + edges


def _diagnose_tcp(
    flow: TcpBulkFlow,
    s: TcpFlowSummary,
    f: PathFacts,
    link: Share,
    policing: _Policing | None,
    end: float,
) -> Diagnosis:
    tcp = flow.tcp
    rtt = f.base_rtt
    measured_rtt = s.rtt_mean or rtt
    b = tcp.delayed_ack.count if tcp.delayed_ack.enabled else 1
    p = s.plr or 0.0
    achieved = s.goodput_bps
    # Mathis models a loss-driven window; BBR's rate is not set by loss (docs/scenario.md).
    loss_based = tcp.variant != "bbr"
    loss_bound = (
        mathis_bps(tcp.mss, measured_rtt, p, b) if p > 0 and measured_rtt and loss_based else None
    )
    if loss_bound is not None and loss_bound < achieved:
        loss_bound = None  # not a sawtooth the formula describes (see the module docstring)
    active = s.completion_time if s.completion_time is not None else _active(flow, end)
    window_bps = _window_bound(f, flow, active)
    bounds = Bounds(
        link_bps=link.bound_bps,
        window_bps=window_bps,
        mathis_bps=loss_bound,
        application_bps=None,
        achieved_bps=achieved,
    )
    candidates: dict[Limit, float] = {"link_capacity": link.bound_bps}
    if window_bps is not None:
        candidates["receive_window"] = window_bps
    if loss_bound is not None and tcp.variant != "none":
        candidates["loss"] = loss_bound
    name: Limit
    name, bound = min(candidates.items(), key=lambda kv: kv[1])
    window_by_sndbuf = tcp.snd_buf is not None and f.window_bytes == tcp.snd_buf
    if name == "receive_window" and window_by_sndbuf:
        name = "send_buffer"
    if achieved >= REACHED * link.bound_bps and name not in ("receive_window", "send_buffer"):
        # The flow fills what the path left it: any loss it sees is the queue (or the
        # policer) overflowing under it, a symptom of the link limit rather than its cause.
        name = "link_capacity"
    elif achieved < REACHED * bound:
        if policing is not None and tcp.variant != "none":
            name = "pvc_policing"
        elif s.timeouts and s.timeouts * tcp.min_rto > 0.2 * (s.completion_time or 1e-9):
            name = "timeouts"
        elif s.retransmissions == 0:
            # Nothing lost, every bound out of reach: the window had not grown to what the
            # path holds, because the transfer or the run ended first.
            name = "congestion_window"
        elif p > 0 and tcp.variant != "none":
            name = "loss"
    if name == "loss" and policing is not None:
        name = "pvc_policing"  # the losses that set the pace are the policer's discards
    return Diagnosis(
        limit=name,
        bounds=bounds,
        bdp_bytes=f.bdp_bytes,
        rtt=rtt,
        bottleneck=link.resource,
        advice="",  # written from the remedies (`_with_remedies`)
    )


def _active(flow: TcpBulkFlow, end: float) -> float:
    last = end if flow.stop is None else min(end, float(flow.stop))
    return max(last - float(flow.start), 0.0)
