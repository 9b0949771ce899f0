"""Building one remedy: what the rules of engine/advice/rules.py share. `Context` is what
they read about a diagnosed flow; `make()` drops the changes the scenario already has,
predicts the effect from the bounds (engine/advice/whatif.py), judges whether it can help
and renders the sentence (engine/advice/words.py); the helpers turn a figure into a change
(a window of whole segments, a queue in its own unit, the next tier of a link).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from engine.advice import words
from engine.advice.context import Context
from engine.advice.levers import ladder_for
from engine.advice.model import Action, Change, CostClass, Effect, Remedy, WhyNot
from engine.protocol import TCP_IP_HEADERS
from engine.scenario import Link

ROOM = 1.05  # a bound this much above what the flow achieves leaves room to gain


# --- building one remedy -------------------------------------------------------------------


def make(
    ctx: Context,
    action: Action,
    changes: list[Change],
    cost: CostClass | None,
    *,
    subject: str | None = None,
    raises_bound: bool = True,
    figures: Mapping[str, float | int | str] | None = None,
    **more: float | int | str,
) -> Remedy | None:
    """A remedy with its predicted effect and verdict, or None when every change is what
    the scenario already has. `figures` and `more` are the figures its sentence quotes."""
    fresh = [c for c in changes if not _same(c.value, c.was)]
    if changes and not fresh:
        return None
    effect = _effect(ctx, fresh)
    helps, why = _verdict(ctx, effect, raises_bound) if fresh else (False, "no_setting")
    remedy = Remedy(
        action=action,
        changes=fresh,
        cost_class=cost,
        subject=subject,
        figures={**(figures or {}), **more},
        predicted=effect,
        helps=helps,
        why_not=why,
        text="",
    )
    remedy.text = words.render(remedy, ctx)
    return remedy


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=1e-12)
    return bool(a == b)


def _effect(ctx: Context, changes: list[Change]) -> Effect | None:
    if ctx.model is None or not changes:
        return None
    b = ctx.model.bound({c.path: c.value for c in changes})
    limit = b.limit if b.limit in ("link", "pvc", "shaper", "window", "ack") else None
    return Effect(
        goodput_bps=b.goodput_bps,
        completion_time=b.completion_time,
        limit=limit,  # type: ignore[arg-type]
        resource=b.resource,
    )


def _verdict(ctx: Context, effect: Effect | None, raises_bound: bool) -> tuple[bool, WhyNot | None]:
    """A change that raises a bound helps when the flow's bound after it is clear (ROOM) of
    both the bound that binds now and what the flow got, whichever bound binds then: a
    faster link lifts a window-limited flow's bound through the shorter round trip, and
    when that is more than ROOM (T1 to T3 under an 8 KB window: +9%, measured +11%, the
    seed paper's own 11-15%) it helps, a little, and says how much. One that closes the
    gap below an unchanged bound (a queue, SACK) helps when the bound leaves room above
    what the flow got."""
    if effect is None or effect.goodput_bps is None or ctx.model is None:
        return True, None
    achieved = ctx.summary.goodput_bps
    before = ctx.model.bound()
    if effect.goodput_bps < achieved:
        # Below what the flow got: a lower bound than now's, or now's own where the flow
        # beat it (a first window's head start past an ACK clock) and nothing moved.
        lowers = effect.goodput_bps < before.goodput_bps * (1 - 1e-9)
        return False, "lowers_bound" if lowers else "bound_unchanged"
    if not raises_bound:
        room = effect.goodput_bps > achieved * ROOM
        return room, None if room else "bound_unchanged"
    if effect.goodput_bps > max(achieved, before.goodput_bps) * ROOM:
        return True, None
    return False, "bound_unchanged"


# --- shared pieces ----------------------------------------------------------------------------


def tcp_path(ctx: Context, field: str) -> str:
    return f"flows.{ctx.flow.id}.tcp.{field}"


def path_bdp(ctx: Context) -> float:
    if ctx.model is not None:
        return ctx.model.bound().bdp_bytes
    return ctx.facts.bdp_bytes or 0.0


def segments(nbytes: float, mss: int) -> int:
    return max(1, math.ceil(nbytes / mss - 1e-9)) * mss


def window_changes(ctx: Context, field: str, value: int) -> list[Change]:
    tcp = ctx.flow.tcp
    out = [Change(path=tcp_path(ctx, field), value=value, was=getattr(tcp, field))]
    if field == "rcv_buf" and value > 65535 and not tcp.window_scaling:
        out.append(Change(path=tcp_path(ctx, "window_scaling"), value=True, was=False))
    return out


def port_direction(ctx: Context, port: str) -> tuple[Link, str]:
    link_id, ends = port.split(":")
    link = ctx.links[link_id]
    return link, "a_to_b" if ends.split(">")[0] == link.a else "b_to_a"


def queue_change(ctx: Context, port: str, packets: int) -> Change | None:
    """The change that makes the egress queue of `port` hold `packets` full segments (in its
    own unit), or None when it already holds as many."""
    link, direction = port_direction(ctx, port)
    own = link.queue_a_to_b if direction == "a_to_b" else link.queue_b_to_a
    field = f"queue_{direction}" if own is not None else "queue"
    queue = link.queue_of(direction)  # type: ignore[arg-type]
    if queue.limit_bytes is not None:
        value = packets * (ctx.flow.tcp.mss + TCP_IP_HEADERS)
        if value <= queue.limit_bytes:
            return None
        return Change(
            path=f"links.{link.id}.{field}.limit_bytes", value=value, was=queue.limit_bytes
        )
    if queue.limit_packets is not None and packets <= queue.limit_packets:
        return None
    return Change(
        path=f"links.{link.id}.{field}.limit_packets", value=packets, was=queue.limit_packets
    )


def queue_packets(ctx: Context, bdp: float) -> int:
    """Full segments a queue needs: one BDP keeps a loss-based flow's link busy after it
    halves, and absorbs slow start's bursts at twice the bottleneck's rate. Never the
    window's excess over the BDP: a window past two BDPs is never what holds a flow back
    behind a queue of one (BDP + queue is below it), and a queue that holds the whole excess
    only adds delay (a 4 MiB window over 100 Mbit/s and 50 ms: 2,463 packets and 247 ms of
    queueing against 412 packets and 35 ms, the same 17.16 s)."""
    return math.ceil(bdp / ctx.flow.tcp.mss) + 1


def is_port(resource: str) -> bool:
    """A link direction '<link>:<from>><to>', not a PVC 'pvc:<id>' nor an interface's shaper
    'shaper:<link>:<from>><to>'."""
    return ":" in resource and not resource.startswith(("pvc:", "shaper:"))


def upgrade(ctx: Context, resource: str) -> list[Change]:
    """Every link of the path at the bottleneck's rate to the next product of its ladder
    (both access links of a Frame Relay path: one alone moves the bottleneck next door);
    behind a PVC, the path's slowest links."""
    if is_port(resource):
        link, _ = port_direction(ctx, resource)
    else:
        link = min((ctx.links[k.split(":")[0]] for k in ctx.facts.path), key=lambda lk: lk.rate)
    ladder = ladder_for(link.rate)
    above = [t for t in ladder if t.bps > link.rate * (1 + 1e-9)]
    if not above:
        return []
    tier = above[0]
    seen: dict[str, Link] = {}
    for key in ctx.facts.path:
        other = ctx.links[key.split(":")[0]]
        if math.isclose(other.rate, link.rate, rel_tol=1e-9):
            seen[other.id] = other
    return [Change(path=f"links.{i}.rate", value=tier.bps, was=lk.rate) for i, lk in seen.items()]


def not_ours(ctx: Context, subject: str, **figures: float | int | str) -> Remedy | None:
    return make(ctx, "no_setting", [], None, subject=subject, figures=figures)
