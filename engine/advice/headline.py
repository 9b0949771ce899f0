"""What limits a flow, in the figures the diagnosis rests on: the first clause of
`Diagnosis.advice` (its remedies follow, engine/advice/words.py)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from engine.advice.words import BUSY_OTHERS, rate
from engine.units import format_rate

if TYPE_CHECKING:
    from engine.advice.context import Context


def headline(ctx: Context) -> str:
    """What limits the flow."""
    words: dict[str, Callable[[Context], str]] = {
        "receive_window": _window,
        "send_buffer": _send_buffer,
        "link_capacity": _capacity,
        "pvc_policing": _policing,
        "loss": _loss,
        "timeouts": _timeouts,
        "congestion_window": _cwnd,
        "ack_clock": _ack_clock,
    }
    say = words.get(ctx.limit)
    if say is None or (ctx.limit == "pvc_policing" and ctx.policing is None):
        return "The flow did not finish: its steady state is not known."
    return say(ctx)


def _others(ctx: Context) -> str:
    f, s, share = ctx.facts, ctx.summary, ctx.share
    if share.others_fraction < BUSY_OTHERS:
        return ""
    return (
        f" Other traffic took {share.others_fraction:.0%} of {share.resource} meanwhile: its "
        f"queue lengthened every round trip (mean {(s.rtt_mean or 0) * 1e3:,.0f} ms against "
        f"{(f.base_rtt or 0) * 1e3:,.0f} ms unloaded)."
    )


def _window(ctx: Context) -> str:
    f = ctx.facts
    return (
        f"Receive window {f.window_bytes or 0:,} B is below the path's bandwidth-delay product "
        f"({f.bdp_bytes or 0:,.0f} B at {rate(f.link_bps)} and "
        f"{(f.base_rtt or 0) * 1e3:.0f} ms): a faster link alone only shortens the round trip."
    )


def _send_buffer(ctx: Context) -> str:
    return (
        f"Send buffer {ctx.flow.tcp.snd_buf:,} B caps the flight below the "
        f"bandwidth-delay product ({ctx.facts.bdp_bytes or 0:,.0f} B)."
    )


def _capacity(ctx: Context) -> str:
    share = ctx.share
    if share.kind == "shaper":
        where = share.resource.removeprefix("shaper:")
        where = f"PVC {where[4:]}" if where.startswith("pvc:") else where
        return (
            f"The traffic shaper of {where} ({rate(share.capacity_bps)} of payload at its "
            f"rate, {rate(share.bound_bps)} for this flow over its transfer) is the limit: "
            "packets wait in its queue, not on the path."
        )
    if share.resource.startswith("pvc:"):
        text = (
            f"The PVC's traffic contract ({share.resource[4:]}: {rate(share.capacity_bps)} of "
            f"payload in the long run, {rate(share.bound_bps)} for this flow over its "
            "transfer, bursts included) is the limit, not the access links."
        )
        if ctx.policing is not None:
            text += " " + _policing(ctx)
        return text
    if share.others_fraction >= BUSY_OTHERS:
        return (
            f"The bottleneck {share.resource} is the limit: other traffic took "
            f"{share.others_fraction:.0%} of it while this flow ran, leaving "
            f"{rate(share.bound_bps)} of its {rate(share.capacity_bps)} of payload; a "
            "larger window does not help."
        )
    return (
        f"The bottleneck {share.resource} ({rate(share.bound_bps)} of payload for this "
        f"flow) is the limit; the window ({ctx.facts.window_bytes or 0:,} B) already covers "
        f"the bandwidth-delay product ({ctx.facts.bdp_bytes or 0:,.0f} B)."
    )


def _ack_clock(ctx: Context) -> str:
    f, s, tcp = ctx.facts, ctx.summary, ctx.flow.tcp
    per_ack = tcp.delayed_ack.count if tcp.delayed_ack.enabled else 1
    acks = "one ACK per segment" if per_ack == 1 else f"one ACK per {per_ack} segments"
    return (
        f"The ACKs' way back is the limit: {f.ack_port} returns at {acks} a clock of "
        f"{rate(f.ack_clock_bps)} of payload, below the {rate(ctx.share.bound_bps)} that "
        f"{ctx.share.resource} carries for this flow; the sender sends only as ACKs come "
        f"back, and they queue on the way (round trip {(s.rtt_mean or 0) * 1e3:,.0f} ms "
        f"against {(f.base_rtt or 0) * 1e3:,.0f} ms unloaded)."
    )


def _contract(ctx: Context) -> str:
    p = ctx.policing
    assert p is not None
    pvc = p.pvc
    assert pvc.bc is not None
    tc = pvc.bc / pvc.cir
    return (
        f"CIR {format_rate(pvc.cir)}, Bc {pvc.bc:,.0f} bit, Be {pvc.be:,.0f} bit, "
        f"Tc {tc * 1e3:,.0f} ms"
    )


def _policing(ctx: Context) -> str:
    p = ctx.policing
    assert p is not None and p.pvc.bc is not None
    burst = p.pvc.bc + p.pvc.be
    dropped = p.counters.excess_dropped
    if burst < p.frame_bits:
        return (
            f"PVC {p.pvc.id}'s contract ({_contract(ctx)}) discarded {dropped:,} frames: "
            f"Bc + Be ({burst:,.0f} bit) is smaller than one full frame "
            f"({p.frame_bits:,} bit), so no full-sized segment can ever pass."
        )
    return (
        f"PVC {p.pvc.id}'s policer discarded {dropped:,} frames beyond its contract "
        f"({_contract(ctx)}) while the links dropped {p.link_drops:,}: TCP's bursts "
        f"exceed Bc + Be ({burst:,.0f} bit) and each discard costs a loss recovery."
    )


def _loss(ctx: Context) -> str:
    mathis = ctx.bounds.mathis_bps
    caps = f"caps goodput near {rate(mathis)} (Mathis et al.)" if mathis else "cost loss recoveries"
    return f"Loss of {ctx.loss_rate:.2%} of data packets {caps}."


def _timeouts(ctx: Context) -> str:
    return (
        f"{ctx.summary.timeouts} retransmission timeouts stalled the transfer (min_rto "
        f"{ctx.flow.tcp.min_rto:g} s): losses in bursts defeat fast retransmit."
    )


def _cwnd(ctx: Context) -> str:
    s, bdp = ctx.summary, ctx.facts.bdp_bytes or 0.0
    if s.completed:
        return (
            "The transfer is too short to leave slow start: the congestion window, not the "
            "path, set the pace." + _others(ctx)
        )
    holds = f", short of the {bdp:,.0f} B the path holds" if bdp and math.isfinite(bdp) else ""
    return (
        "The congestion window, not the path, set the pace: it grew to "
        f"{s.cwnd_max:,} B by the end of the run{holds}, with nothing lost." + _others(ctx)
    )
