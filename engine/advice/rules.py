"""The remedy rules, one per limit the diagnosis names (engine/advice/remedies.py says what
they promise): a window below the BDP, a link or a PVC contract at capacity, a policer
discarding bursts, losses (named where they happened), timeouts, a window still growing."""

from __future__ import annotations

import math

from engine.advice import words
from engine.advice.build import (
    ROOM,
    is_port,
    make,
    not_ours,
    path_bdp,
    port_direction,
    queue_change,
    queue_packets,
    segments,
    tcp_path,
    upgrade,
    window_changes,
)
from engine.advice.context import Context
from engine.advice.levers import ladder_for
from engine.advice.model import Action, Change, Remedy
from engine.net import link_wire
from engine.protocol import TCP_IP_HEADERS
from engine.scenario import Link, Pvc
from engine.tcp.cc import variant
from engine.variants import names

LINUX_IW = 10  # RFC 6928, Linux's initial window since 2.6.39
LINUX_MIN_RTO = 0.2  # Linux's TCP_RTO_MIN

# --- the rules, one per limit ----------------------------------------------------------------


def window(ctx: Context) -> list[Remedy | None]:
    field = "snd_buf" if ctx.limit == "send_buffer" else "rcv_buf"
    action: Action = "raise_snd_buf" if field == "snd_buf" else "raise_rcv_buf"
    bdp = path_bdp(ctx)
    changes = _window_to(ctx, field, segments(bdp, ctx.flow.tcp.mss))
    out = []
    model = ctx.model
    bound = model.bound({c.path: c.value for c in changes}) if model else None
    port = bound.resource if bound and is_port(bound.resource) else None
    # Slow start sends at twice the bottleneck's rate: a queue under half the BDP overflows
    # before the window reaches it (the satellite case of issue 23).
    window = ctx.facts.window_bytes or 0
    short: dict[str, float | int | str] = {}
    if port and bound and bound.queue_bytes is not None and bound.queue_bytes < bdp / 2:
        short = {"queue_short": port, "queue_packets": bound.queue_packets or 0}
        extra = queue_change(ctx, port, queue_packets(ctx, bdp))
        if extra is not None:
            figures = {"bdp": bdp, "window": window, "queue_packets": short["queue_packets"]}
            out.append(make(ctx, action, [*changes, extra], "queue", subject=port, figures=figures))
    out.append(
        make(
            ctx,
            action,
            changes,
            "endpoint",
            subject=ctx.flow.id,
            figures=short,
            bdp=bdp,
            window=window,
        )
    )
    if ctx.facts.path:
        upgrade_to = upgrade(ctx, ctx.share.resource)
        out.append(make(ctx, "upgrade_link", upgrade_to, "link", subject=ctx.share.resource))
    return out


def _window_to(ctx: Context, field: str, value: int) -> list[Change]:
    """The buffer `field` raised to `value`, and the other buffer with it when it is set and
    smaller: the flight is the least of both, so raising one alone leaves the other binding
    (a 64 KiB send and receive buffer)."""
    changes = window_changes(ctx, field, value)
    other = "rcv_buf" if field == "snd_buf" else "snd_buf"
    held = getattr(ctx.flow.tcp, other)
    if held is not None and held < value:
        changes += window_changes(ctx, other, value)
    return changes


def ack_clock(ctx: Context) -> list[Remedy | None]:
    """The ACKs' way back clocks the flow: fewer ACKs per segment (delayed ACKs, free at the
    receiver), a faster way back (its port's next product), and the forward link's upgrade
    shown for what it is, no help while the ACKs set the pace."""
    out: list[Remedy | None] = []
    delayed = ctx.flow.tcp.delayed_ack
    if not delayed.enabled:
        path = f"flows.{ctx.flow.id}.tcp.delayed_ack.enabled"
        change = Change(path=path, value=True, was=False)
        out.append(
            make(
                ctx,
                "enable_delayed_ack",
                [change],
                "endpoint",
                subject=ctx.flow.id,
                per_ack=delayed.count,
            )
        )
    port = ctx.facts.ack_port
    if port is not None:
        out.append(make(ctx, "upgrade_link", _upgrade_way(ctx, port), "link", subject=port))
    if is_port(ctx.share.resource):
        forward = upgrade(ctx, ctx.share.resource)
        out.append(make(ctx, "upgrade_link", forward, "link", subject=ctx.share.resource))
    return out


def _upgrade_way(ctx: Context, port: str) -> list[Change]:
    """One direction's rate to the next product of its ladder: `rate_b_to_a` where the link
    has its own for b -> a (ADSL's uplink), else the link's `rate`."""
    link, direction = port_direction(ctx, port)
    field = "rate_b_to_a" if direction == "b_to_a" and link.rate_b_to_a is not None else "rate"
    now = link.rate_b_to_a if field == "rate_b_to_a" else link.rate
    assert now is not None
    above = [t for t in ladder_for(now) if t.bps > now * (1 + 1e-9)]
    if not above:
        return []
    return [Change(path=f"links.{link.id}.{field}", value=above[0].bps, was=now)]


def capacity(ctx: Context) -> list[Remedy | None]:
    out: list[Remedy | None] = []
    resource = ctx.share.resource
    if ctx.share.kind == "shaper":
        out += _shaper(ctx, resource)
    elif resource.startswith("pvc:") and ctx.policing is not None:
        # The contract binds, and its policer discarded TCP's bursts besides: the burst
        # rule's Be, the CIR, and shaping at the contract's rate, as for a policed flow.
        out += policing(ctx)
    elif resource.startswith("pvc:") and ctx.facts.pvc is not None:
        out += _contract(ctx, _pvc(ctx))
    elif is_port(resource):
        changes = upgrade(ctx, resource)
        out.append(make(ctx, "upgrade_link", changes, "link", subject=resource))
        model = ctx.model
        if changes and model is not None:
            after = model.bound({c.path: c.value for c in changes})
            both = changes + window_changes(
                ctx, "rcv_buf", segments(after.bdp_bytes, ctx.flow.tcp.mss)
            )
            if model.bound({c.path: c.value for c in both}).goodput_bps > after.goodput_bps * ROOM:
                out.append(make(ctx, "upgrade_link", both, "link", subject=resource))
    if ctx.share.others_fraction >= words.BUSY_OTHERS:
        out.append(not_ours(ctx, resource, others=ctx.share.others_fraction))
    return out


def _shaper(ctx: Context, resource: str) -> list[Remedy | None]:
    """The router's own shaper binds: shape at a higher rate. On a PVC, at the contract's
    rate (CIR + Be/Tc: the policer then discards nothing), and the contract itself; on an
    interface, at the port's rate, where the shaper no longer holds anything back."""
    if resource.startswith("pvc:") and ctx.facts.pvc is not None:
        pvc = _pvc(ctx)
        return [_shape(ctx, pvc, {}), *_contract(ctx, pvc)]
    port = resource.removeprefix("shaper:")
    link, direction = port_direction(ctx, port)
    shaper = link.shaping_a_to_b if direction == "a_to_b" else link.shaping_b_to_a
    rate = link.rate_from(link.a if direction == "a_to_b" else link.b)
    was = shaper.rate if shaper is not None else None
    change = Change(path=f"links.{link.id}.shaping_{direction}.rate", value=rate, was=was)
    return [make(ctx, "shape", [change], "shaping", subject=resource)]


def _pvc(ctx: Context) -> Pvc:
    assert ctx.scenario.frame_relay is not None and ctx.facts.pvc is not None
    return next(p for p in ctx.scenario.frame_relay.pvcs if p.id == ctx.facts.pvc)


def _contract(ctx: Context, pvc: Pvc) -> list[Remedy | None]:
    """Raise the CIR, or Be, until the contract no longer binds (the port or the window
    does)."""
    values = _unbinding(ctx, pvc)
    if values is None:
        return []
    cir, be = values
    base = f"frame_relay.pvcs.{pvc.id}"
    return [
        make(
            ctx,
            "raise_cir",
            [Change(path=f"{base}.cir", value=cir, was=pvc.cir)],
            "pvc",
            subject=f"pvc:{pvc.id}",
        ),
        make(
            ctx,
            "raise_be",
            [Change(path=f"{base}.be", value=be, was=pvc.be)],
            "pvc",
            subject=f"pvc:{pvc.id}",
        ),
    ]


def _unbinding(ctx: Context, pvc: Pvc) -> tuple[float, int] | None:
    """The CIR, or the Be, at which the contract no longer binds: its long-run rate
    CIR + Be/Tc reaches what the port and the window allow (Be at most `_be_most`)."""
    assert pvc.bc is not None
    model = ctx.model
    if model is None:
        return None
    base = f"frame_relay.pvcs.{pvc.id}"
    unbound = model.bound({f"{base}.cir": _port_rate(ctx, pvc), f"{base}.be": 0})
    want = min(unbound.capacity_bps, unbound.goodput_bps)  # what the port and window allow
    share = model.bound().capacity_bps / (pvc.cir + pvc.be * pvc.cir / pvc.bc)
    need = want / share  # frame bits per second the contract must let through
    cir = min(_port_rate(ctx, pvc), math.ceil(need / (1 + pvc.be / pvc.bc) / 8e3) * 8e3)
    be = math.ceil(max(need - pvc.cir, 0.0) * pvc.bc / pvc.cir / 1e3) * 1000
    return cir, min(be, _be_most(ctx, pvc))


def _pvc_port(ctx: Context, pvc: Pvc) -> Link | None:
    """The first link the PVC carries: the one leaving one of its routers (the access port
    whose frames the policer counts)."""
    for key in ctx.facts.path:
        link, direction = port_direction(ctx, key)
        if (link.a if direction == "a_to_b" else link.b) in (pvc.src, pvc.dst):
            return link
    return None


def _port_rate(ctx: Context, pvc: Pvc) -> float:
    port = _pvc_port(ctx, pvc)
    return port.rate if port is not None else pvc.cir


def _be_most(ctx: Context, pvc: Pvc) -> int:
    """The largest Be a carrier sells, and the largest that can matter: (port - CIR) x Tc,
    where CIR + Be/Tc reaches the access port's rate. The policer then passes everything the
    port can send, whatever the burst; a larger Be is never used (Cisco's `frame-relay be`
    guidance, Be = (AR - CIR) x Tc). Rounded down to whole kbit."""
    assert pvc.bc is not None
    most = (_port_rate(ctx, pvc) - pvc.cir) * pvc.bc / pvc.cir
    return max(int(math.floor(most / 1e3 + 1e-9)) * 1000, 0)


def policing(ctx: Context) -> list[Remedy | None]:
    p = ctx.policing
    if p is None:
        return loss(ctx)
    pvc = p.pvc
    assert pvc.bc is not None
    base = f"frame_relay.pvcs.{pvc.id}"
    subject = f"pvc:{pvc.id}"
    burst = pvc.bc + pvc.be
    figures: dict[str, float | int | str] = {
        "discarded": p.counters.excess_dropped,
        "link_drops": p.link_drops,
        "frame_bits": p.frame_bits,
    }
    if burst < p.frame_bits:
        bc = math.ceil((p.frame_bits - pvc.be) / 1e3) * 1000
        first = _pvc_port(ctx, pvc)
        overhead = link_wire(first, 1000) - 1000 if first is not None else 0
        mss = int(burst // 8) - overhead - TCP_IP_HEADERS
        out = [
            make(
                ctx,
                "raise_bc",
                [Change(path=f"{base}.bc", value=bc, was=pvc.bc)],
                "pvc",
                subject=subject,
                figures=figures,
            )
        ]
        if mss >= 64:
            out.append(
                make(
                    ctx,
                    "lower_mss",
                    [Change(path=tcp_path(ctx, "mss"), value=mss, was=ctx.flow.tcp.mss)],
                    "endpoint",
                    subject=subject,
                    figures=figures,
                )
            )
        return out
    window_bits = (ctx.facts.window_bytes or 0) * 8
    out = []
    # Be covers the window's bursts, and lets the contract's long-run rate reach what the
    # port allows where covering the window alone would leave it binding (a 16 KiB window
    # behind T1 ports: 100 kbit still holds the flow at 1.02 Mbit/s, 161 kbit reaches the
    # port as the CIR's remedy does, at half its price); never past the port.
    most = _be_most(ctx, pvc)
    cover = math.ceil((window_bits - pvc.bc) / 1e3) * 1000
    unbinding = _unbinding(ctx, pvc)
    be = min(max(cover, unbinding[1] if unbinding else 0), most)
    if burst < window_bits and be > pvc.be:
        sized: dict[str, float | int | str] = {"window_bits": window_bits}
        if be == most and be != cover:  # the port, not the window, sizes it
            sized = {"port_bps": _port_rate(ctx, pvc)}
        elif be > cover:  # the contract's long-run rate sizes it
            sized = {}
        out.append(
            make(
                ctx,
                "raise_be",
                [Change(path=f"{base}.be", value=be, was=pvc.be)],
                "pvc",
                subject=subject,
                figures={**figures, **sized},
            )
        )
    out += _contract(ctx, pvc)[:1]  # the CIR; Be is the burst rule's above
    out.append(_shape(ctx, pvc, figures))
    # The discards stay while the contract does: the sender's side can recover from them
    # sooner (SACK; a Linux minimum RTO where its time went to timeouts).
    return out + _recovery(ctx, False) + _lower_min_rto(ctx)


def _shape(ctx: Context, pvc: Pvc, figures: dict[str, float | int | str]) -> Remedy | None:
    """Shaping at the entry router, at a rate that helps: the contract's own, CIR + Be/Tc
    (at most the port), with the contract's Bc, so that the bursts wait in the shaper
    instead of being discarded. Never shaping to the CIR alone: below what a policed flow
    gets, it makes the transfer slower (issue 23's first case, +64%)."""
    base = f"frame_relay.pvcs.{pvc.id}"
    assert pvc.bc is not None
    contract = min(_port_rate(ctx, pvc), pvc.cir + pvc.be * pvc.cir / pvc.bc)
    rate = math.floor(contract / 8e3) * 8e3  # below the contract, never above it
    shaper = pvc.shaping
    now = shaper.rate if shaper is not None and shaper.rate is not None else None
    if now is None and (pvc.becn_shaping or shaper is not None):
        now = pvc.cir  # BECN shaping, and a shaper without a rate, run at the CIR
    if now is not None and now >= rate:
        return None  # already shaped at the contract's rate or above
    changes = [
        Change(path=f"{base}.shaping.rate", value=rate, was=shaper.rate if shaper else None),
        # Bursts no deeper than the contract's committed burst pass the policer.
        Change(path=f"{base}.shaping.bc", value=pvc.bc, was=shaper.bc if shaper else None),
    ]
    if pvc.becn_shaping:
        changes.append(Change(path=f"{base}.becn_shaping", value=False, was=True))
    # It closes the gap under the contract's bound (no discard, no recovery), like a queue.
    return make(
        ctx,
        "shape",
        changes,
        "shaping",
        subject=f"pvc:{pvc.id}",
        raises_bound=False,
        figures=figures,
    )


def _drops(ctx: Context) -> tuple[list[Remedy | None], bool, str | None]:
    """Name every link direction on the path that dropped: a queue that overflowed gets a
    larger queue, a lossy line is said to have no setting. Also whether a line lost packets,
    and the first port whose queue overflowed holding less than one BDP."""
    out: list[Remedy | None] = []
    lossy = False
    shallow: str | None = None
    bdp = path_bdp(ctx)
    for key in ctx.facts.path:
        summary = ctx.result.links.get(key)
        if summary is None:
            continue
        link, direction = port_direction(ctx, key)
        queue = link.queue_of(direction)  # type: ignore[arg-type]
        if summary.drops:
            change = queue_change(ctx, key, queue_packets(ctx, bdp))
            if change is not None and queue.discipline == "droptail":
                shallow = shallow or key
                out.append(
                    make(
                        ctx,
                        "raise_queue",
                        [change],
                        "queue",
                        subject=key,
                        raises_bound=False,
                        drops=summary.drops,
                        bdp=bdp,
                    )
                )
        if summary.error_drops and (link.loss.direction in ("both", direction)):
            lossy = True
            out.append(
                not_ours(ctx, key, error_drops=summary.error_drops, loss_model=link.loss.model)
            )
    return out, lossy, shallow


def _recovery(ctx: Context, random_loss: bool, shallow: str | None = None) -> list[Remedy | None]:
    tcp = ctx.flow.tcp
    cc = variant(tcp.variant)
    out: list[Remedy | None] = []
    if cc.sack_would_add(tcp):
        out.append(
            make(
                ctx,
                "enable_sack",
                [Change(path=tcp_path(ctx, "sack"), value=True, was=tcp.sack)],
                "endpoint",
                subject=ctx.flow.id,
                raises_bound=False,
            )
        )
    # Random loss (line errors, not a full queue) slows a loss-based variant only; one whose
    # rate follows its model of the path (bbr) does not slow down for it. Nor does it need
    # a queue of one BDP to keep the link busy after it backs off, as a loss-based one does
    # behind a shallow queue.
    model_based = [name for name in names() if not variant(name).loss_based]
    if (random_loss or shallow) and cc.loss_based and model_based:
        why: dict[str, float | int | str] = {}
        if not random_loss:
            why["shallow_queue"] = shallow or ""
        to = model_based[0]
        changes = [Change(path=tcp_path(ctx, "variant"), value=to, was=tcp.variant)]
        # With SACK: without it, a burst of losses (its startup's overshoot of a shallow
        # queue) costs BBR one round trip each, or a timeout, and it ends slower than the
        # variant it replaces (200 MB behind 8 packets: CUBIC 27 s, BBR 145 s; with SACK 18 s).
        if variant(to).sack_would_add(tcp):
            changes.append(Change(path=tcp_path(ctx, "sack"), value=True, was=tcp.sack))
        out.append(
            make(
                ctx,
                "change_variant",
                changes,
                "endpoint",
                subject=ctx.flow.id,
                raises_bound=False,
                figures=why,
            )
        )
    return out


def loss(ctx: Context) -> list[Remedy | None]:
    dropped, lossy, shallow = _drops(ctx)
    return [*dropped, *_recovery(ctx, lossy, shallow)]


def timeouts(ctx: Context) -> list[Remedy | None]:
    dropped, lossy, shallow = _drops(ctx)
    return [*dropped, *_recovery(ctx, lossy, shallow), *_lower_min_rto(ctx)]


def _lower_min_rto(ctx: Context) -> list[Remedy | None]:
    """Linux's 200 ms minimum RTO, where the flow waited for timeouts above it."""
    tcp = ctx.flow.tcp
    if tcp.min_rto <= LINUX_MIN_RTO or not ctx.summary.timeouts:
        return []
    change = Change(path=tcp_path(ctx, "min_rto"), value=LINUX_MIN_RTO, was=tcp.min_rto)
    return [
        make(
            ctx,
            "lower_min_rto",
            [change],
            "endpoint",
            subject=ctx.flow.id,
            raises_bound=False,
            timeouts=ctx.summary.timeouts,
        )
    ]


def cwnd(ctx: Context) -> list[Remedy | None]:
    tcp = ctx.flow.tcp
    if not ctx.summary.completed:
        return unfinished(ctx)
    out: list[Remedy | None] = []
    if tcp.initial_cwnd < LINUX_IW and not variant(tcp.variant).own_slow_start:
        growth = 1.5 if tcp.delayed_ack.enabled else 2.0
        rounds = math.log(LINUX_IW / tcp.initial_cwnd) / math.log(growth)
        out.append(
            make(
                ctx,
                "raise_initial_cwnd",
                [Change(path=tcp_path(ctx, "initial_cwnd"), value=LINUX_IW, was=tcp.initial_cwnd)],
                "endpoint",
                subject=ctx.flow.id,
                raises_bound=False,
                rounds_saved=round(rounds, 1),
                rtt=ctx.facts.base_rtt or 0.0,
            )
        )
    if ctx.share.others_fraction >= words.BUSY_OTHERS:
        out.append(not_ours(ctx, ctx.share.resource, others=ctx.share.others_fraction))
    return out


def unfinished(ctx: Context) -> list[Remedy | None]:
    """The run ended before the flow showed its steady state: the experiment, not the
    network, needs the change."""
    duration = ctx.scenario.duration
    return [
        make(
            ctx,
            "lengthen_run",
            [Change(path="duration", value=2 * duration, was=duration)],
            "run",
            subject=ctx.flow.id,
            raises_bound=False,
        )
    ]
