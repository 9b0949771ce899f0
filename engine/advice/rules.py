"""The remedy rules, one per limit the diagnosis names (engine/advice/remedies.py says what
they promise): a window below the BDP, a link or a PVC contract at capacity, a policer
discarding bursts, losses (named where they happened), timeouts, a window still growing."""

from __future__ import annotations

import math
from typing import Any

from engine.advice import contract, words
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
from engine.tcp.cc import variant
from engine.variants import names

LINUX_IW = 10  # RFC 6928, Linux's initial window since 2.6.39
LINUX_MIN_RTO = 0.2  # Linux's TCP_RTO_MIN
# The share of a flow's time spent waiting for its retransmission timer above which the
# timer's backoff is worth ending with timestamps: a quarter, when a few timeouts at the
# minimum RTO cost a few percent and a backoff doubling them cost the run (94% of 300 s).
BACKOFF_SHARE = 0.25

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
        out += contract.raise_contract(ctx, contract.pvc_of(ctx))
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
        pvc = contract.pvc_of(ctx)
        return [contract.shape(ctx, pvc, {}), *contract.raise_contract(ctx, pvc)]
    port = resource.removeprefix("shaper:")
    link, direction = port_direction(ctx, port)
    shaper = link.shaping_a_to_b if direction == "a_to_b" else link.shaping_b_to_a
    rate = link.rate_from(link.a if direction == "a_to_b" else link.b)
    was = shaper.rate if shaper is not None else None
    change = Change(path=f"links.{link.id}.shaping_{direction}.rate", value=rate, was=was)
    return [make(ctx, "shape", [change], "shaping", subject=resource)]


def policing(ctx: Context) -> list[Remedy | None]:
    p = ctx.policing
    if p is None:
        return loss(ctx)
    out, fits = contract.policed(ctx, p)
    if not fits:
        return out  # no frame passes whole: nothing the sender's recovery changes
    # The discards stay while the contract does: the sender's side can recover from them
    # sooner (SACK; a Linux minimum RTO where its time went to timeouts).
    return out + _recovery(ctx, False) + _lower_min_rto(ctx) + _timestamps(ctx)


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


def _sender(
    ctx: Context,
    action: Action,
    field: str,
    value: Any,
    *,
    also: tuple[str, Any] | None = None,
    **figures: float | int | str,
) -> Remedy | None:
    """A change to one of the flow's own TCP settings (and `also` another with it): free at
    the endpoint, and not one the bounds can credit (it changes how losses and slow start
    go, not a path's rate)."""
    tcp = ctx.flow.tcp
    changes = [Change(path=tcp_path(ctx, field), value=value, was=getattr(tcp, field))]
    if also is not None:
        changes.append(
            Change(path=tcp_path(ctx, also[0]), value=also[1], was=getattr(tcp, also[0]))
        )
    return make(
        ctx,
        action,
        changes,
        "endpoint",
        subject=ctx.flow.id,
        raises_bound=False,
        figures=figures,
    )


def _recovery(ctx: Context, random_loss: bool, shallow: str | None = None) -> list[Remedy | None]:
    tcp = ctx.flow.tcp
    cc = variant(tcp.variant)
    out: list[Remedy | None] = []
    if cc.sack_would_add(tcp):
        out.append(_sender(ctx, "enable_sack", "sack", True))
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
        # With SACK: without it, a burst of losses (its startup's overshoot of a shallow
        # queue) costs BBR one round trip each, or a timeout, and it ends slower than the
        # variant it replaces (200 MB behind 8 packets: CUBIC 27 s, BBR 145 s; with SACK 18 s).
        sack = ("sack", True) if variant(to).sack_would_add(tcp) else None
        out.append(_sender(ctx, "change_variant", "variant", to, also=sack, **why))
    return out


def loss(ctx: Context) -> list[Remedy | None]:
    dropped, lossy, shallow = _drops(ctx)
    return [*dropped, *_recovery(ctx, lossy, shallow)]


def timeouts(ctx: Context) -> list[Remedy | None]:
    dropped, lossy, shallow = _drops(ctx)
    return [*dropped, *_recovery(ctx, lossy, shallow), *_lower_min_rto(ctx), *_timestamps(ctx)]


def _timestamps(ctx: Context) -> list[Remedy | None]:
    """Timestamps, where the flow spent a large share of its time waiting for timeouts,
    repeated ones among them: without them the ACK of a retransmission is no RTT sample
    (Karn), so each timeout that follows is backed off again; with them it is one, and the
    RTO falls back (Linux's tcp_ack_update_rtt)."""
    tcp, s = ctx.flow.tcp, ctx.summary
    if tcp.timestamps or s.timeouts < 2 or s.time is None or s.time.duration <= 0:
        return []
    waiting = s.time.timeout / s.time.duration
    if waiting < BACKOFF_SHARE:
        return []
    return [
        _sender(ctx, "enable_timestamps", "timestamps", True, timeouts=s.timeouts, waiting=waiting)
    ]


def _lower_min_rto(ctx: Context) -> list[Remedy | None]:
    """Linux's 200 ms minimum RTO, where the flow waited for timeouts above it."""
    if ctx.flow.tcp.min_rto <= LINUX_MIN_RTO or not ctx.summary.timeouts:
        return []
    timeouts = ctx.summary.timeouts
    return [_sender(ctx, "lower_min_rto", "min_rto", LINUX_MIN_RTO, timeouts=timeouts)]


def cwnd(ctx: Context) -> list[Remedy | None]:
    tcp = ctx.flow.tcp
    if not ctx.summary.completed:
        return unfinished(ctx)
    out: list[Remedy | None] = []
    if tcp.initial_cwnd < LINUX_IW and not variant(tcp.variant).own_slow_start:
        growth = 1.5 if tcp.delayed_ack.enabled else 2.0
        rounds = math.log(LINUX_IW / tcp.initial_cwnd) / math.log(growth)
        saved = round(rounds, 1)
        rtt = ctx.facts.base_rtt or 0.0
        out.append(
            _sender(
                ctx, "raise_initial_cwnd", "initial_cwnd", LINUX_IW, rounds_saved=saved, rtt=rtt
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
