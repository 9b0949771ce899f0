"""What limits each flow, in numbers and one sentence of advice.

Every TCP flow has upper bounds that physics and TCP theory set independently: the
bottleneck's payload rate (its share of it when flows compete), the effective window per
round trip, the Mathis et al. (1997) bound for the loss rate it saw,
MSS/RTT * sqrt(3/(2bp)) with b packets acknowledged per ACK, and the application's own
rate. The smallest bound that the achieved goodput reaches is the limit; when the goodput
falls well short of every bound, timeouts or a short transfer (slow start) are to blame.
"""

from __future__ import annotations

import math

from engine.analysis import PathFacts, path_facts
from engine.result import Bounds, Diagnosis, Result, TcpFlowSummary
from engine.scenario import Scenario, TcpBulkFlow

REACHED = 0.85  # achieved/bound at or above which a bound counts as the binding one


def mathis_bps(mss: int, rtt: float, p: float, acked_per_ack: int) -> float:
    return mss * 8 / rtt * math.sqrt(3 / (2 * acked_per_ack * p))


def _fmt_bps(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:,.2f} Mbit/s"
    return f"{x / 1e3:,.0f} kbit/s"


def diagnose(scenario: Scenario, result: Result) -> dict[str, Diagnosis]:
    facts = path_facts(scenario)
    out = {}
    for flow in scenario.flows:
        summary = result.flows.get(flow.id)
        if not isinstance(flow, TcpBulkFlow) or not isinstance(summary, TcpFlowSummary):
            continue
        out[flow.id] = _diagnose_tcp(flow, summary, facts[flow.id])
    return out


def _diagnose_tcp(flow: TcpBulkFlow, s: TcpFlowSummary, f: PathFacts) -> Diagnosis:
    tcp = flow.tcp
    rtt = f.base_rtt
    measured_rtt = s.rtt_mean or rtt
    b = tcp.delayed_ack.count if tcp.delayed_ack.enabled else 1
    p = s.plr or 0.0
    # Mathis models a loss-driven window; BBR's rate is not set by loss (docs/scenario.md).
    loss_based = tcp.variant != "bbr"
    loss_bound = (mathis_bps(tcp.mss, measured_rtt, p, b)
                  if p > 0 and measured_rtt and loss_based else None)
    bounds = Bounds(
        link_bps=f.share_bps,
        window_bps=f.window_bps,
        mathis_bps=loss_bound,
        application_bps=None,
        achieved_bps=s.goodput_bps,
    )
    candidates = {"link_capacity": f.share_bps, "receive_window": f.window_bps}
    if loss_bound is not None and tcp.variant != "none":
        candidates["loss"] = loss_bound
    name, bound = min(candidates.items(), key=lambda kv: kv[1])
    achieved = s.goodput_bps
    window_by_sndbuf = tcp.snd_buf is not None and f.window_bytes == tcp.snd_buf
    if name == "receive_window" and window_by_sndbuf:
        name = "send_buffer"
    if achieved >= REACHED * f.share_bps and name != "receive_window":
        # The flow fills its share of the bottleneck: any loss it sees is the queue
        # overflowing under it, a symptom of the link limit rather than its cause.
        name = "link_capacity"
    elif achieved < REACHED * bound:
        if s.timeouts and s.timeouts * tcp.min_rto > 0.2 * (s.completion_time or 1e-9):
            name = "timeouts"
        elif s.retransmissions == 0 and s.completed:
            name = "congestion_window"
        elif p > 0 and tcp.variant != "none":
            name = "loss"
    advice = _advice(name, flow, s, f, bounds, p)
    return Diagnosis(limit=name, bounds=bounds, bdp_bytes=f.bdp_bytes, rtt=rtt, advice=advice)


def _advice(name: str, flow: TcpBulkFlow, s: TcpFlowSummary, f: PathFacts, bounds: Bounds,
            p: float) -> str:
    tcp = flow.tcp
    bdp = f.bdp_bytes or 0.0
    w = f.window_bytes or 0
    link = _fmt_bps(f.share_bps)
    if name == "receive_window":
        scaling = "" if tcp.window_scaling or bdp <= 65535 else " with window_scaling"
        return (f"Receive window {w:,} B is below the path's bandwidth-delay product "
                f"({bdp:,.0f} B at {link} and {f.base_rtt * 1e3:.0f} ms): raise rcv_buf"
                f"{scaling} to at least {math.ceil(bdp):,} B; a faster link alone will not help.")
    if name == "send_buffer":
        return (f"Send buffer {tcp.snd_buf:,} B caps the flight below the bandwidth-delay "
                f"product ({bdp:,.0f} B): raise snd_buf to at least {math.ceil(bdp):,} B.")
    if name == "link_capacity" and f.bottleneck.startswith("pvc:"):
        return (f"The PVC's traffic contract ({f.bottleneck[4:]}: {_fmt_bps(f.bottleneck_rate_bps)} "
                f"of CIR plus excess burst, {link} of payload) is the limit, not the access "
                "links: raise the CIR (or Be), or the transfer stays this slow.")
    if name == "link_capacity":
        return (f"The bottleneck {f.bottleneck} ({link} of payload for this flow) is the limit; "
                f"the window ({w:,} B) already covers the bandwidth-delay product "
                f"({bdp:,.0f} B): only a faster link (or less competing traffic) helps.")
    if name == "loss":
        return (f"Loss of {p:.2%} of data packets caps goodput near "
                f"{_fmt_bps(bounds.mathis_bps or 0)} (Mathis et al.): find and remove the "
                "loss (errors, queue overflow) or use a variant that recovers better (SACK); "
                "if it is random (line errors, not a full queue), bbr does not slow down "
                "for it.")
    if name == "timeouts":
        return (f"{s.timeouts} retransmission timeouts stalled the transfer: losses in "
                "bursts defeat fast retransmit; SACK or NewReno recovery, larger queues or "
                f"a lower min_rto ({tcp.min_rto:g} s now) shorten the stalls.")
    if name == "congestion_window":
        return ("The transfer is too short to leave slow start: the congestion window, "
                "not the path, set the pace; a larger initial_cwnd shortens it.")
    return "The flow did not finish; lengthen duration to see its steady state."
