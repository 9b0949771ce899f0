"""The sentences of a comparison, rendered from its typed parts (report.py builds them): what
explains the variance and how the main move changes the metric, or where it matters when
another factor interacts with it (interactions.py), the best point, what limits each flow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from api.compare import interactions, stats
from api.compare.schemas import (
    BestPoint,
    EffectsOut,
    InteractionOut,
    LimitCount,
    MetricInfo,
    PointRow,
)
from engine.units import format_rate

if TYPE_CHECKING:
    from api.compare.points import PointData

# What limits a transfer, in words that fit "At the baseline, ___ is what limits <flow>".
LIMITS = {
    "receive_window": "the receive window, not the link,",
    "send_buffer": "the send buffer (the sender's window), not the link,",
    "congestion_window": "the congestion window, not the link,",
    "link_capacity": "the link's capacity",
    "loss": "packet loss",
    "timeouts": "retransmission timeouts",
    "application": "the application's own rate",
    "pvc_policing": "the PVC's policer (its CIR, Bc and Be), not the links,",
}


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit == "s":
        return f"{value:,.1f} s" if abs(value) >= 1 else f"{value * 1e3:,.1f} ms"
    if unit == "bit/s":
        return format_rate(value, digits=3)
    if unit == "fraction":
        return f"{value * 100:.2f}%"
    return f"{value:,.1f} {unit}"


def _val(v: Any) -> str:
    return v if isinstance(v, str) else stats.level_key(v)


def _params(parameters: dict[str, Any], limit: int = 4) -> str:
    shown = [f"{k}={_val(v)}" for k, v in list(parameters.items())[:limit]]
    more = len(parameters) - limit
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _share(x: float) -> str:
    return f"{x:.1%}" if x < 0.01 else f"{x:.0%}"


def _pct(x: float) -> str:
    return f"{x:+.0f}%".replace("-", "−")


def conclusions(
    points: Sequence[PointData],
    rows: list[PointRow],
    metrics: list[MetricInfo],
    des: stats.Design,
    effects: list[EffectsOut],
    best: list[BestPoint],
    conditional: Sequence[InteractionOut],
    partial_note: str | None,
) -> list[str]:
    out = [partial_note] if partial_note else []
    if not metrics:
        return [*out, "No run has results yet."]
    out.extend(_variance_sentences(rows, metrics))
    by_key = {(e.flow, e.metric): e for e in effects}
    best_by = {(b.flow, b.metric): b for b in best}
    base_i = next((i for i, p in enumerate(points) if p.is_baseline), None)
    for fid in dict.fromkeys(info.flow for info in metrics):
        info = _primary(fid, metrics, rows)
        m, unit, label = info.metric, info.unit, info.label
        eff = by_key.get((fid, m))
        if eff is not None and any(f.share is not None for f in eff.factors):
            out.extend(_effect_sentences(fid, info, eff, des, points, rows, base_i, conditional))
        elif eff is not None and eff.note:
            out.append(f"No split of the variance in {fid}'s {label} yet: {eff.note}.")
        b = best_by.get((fid, m))
        # A best among one: no comparison (a flow only one of the scenarios has).
        having = sum(
            (cell := r.metrics.get(fid, {}).get(m)) is not None and cell.mean is not None
            for r in rows
        )
        if b is not None and having > 1:
            row = rows[[p.index for p in points].index(b.point_index)]
            delta = row.metrics[fid][m].delta
            against = (
                f", {_pct(delta.pct)} against the baseline"
                if delta and delta.pct is not None
                else " (the baseline itself)"
                if row.is_baseline
                else ""
            )
            if b.ties:
                out.append(_tie_sentence(fid, label, unit, b, points, against))
            else:
                where = _params(b.parameters) or f"point {b.point_index}"
                out.append(
                    f"The best {label} of {fid} is at {where}: {fmt(b.mean, unit)}{against}."
                )
        out.extend(_limit_sentences(fid, rows, base_i, b))
    return out


def _tie_sentence(
    fid: str,
    label: str,
    unit: str,
    b: BestPoint,
    points: Sequence[PointData],
    against: str,
) -> str:
    """Several points share the best mean: name them all (what differs between them)."""
    tied = [p for p in points if p.index in set(b.ties)]
    paths = list(dict.fromkeys(k for p in tied for k in p.parameters))
    differ = [k for k in paths if len({stats.level_key(p.parameters.get(k)) for p in tied}) > 1]
    same = {k: tied[0].parameters.get(k) for k in paths if k not in differ}
    if len(differ) == 1:
        values = ", ".join(_val(p.parameters.get(differ[0])) for p in tied)
        where = f"{differ[0]} = {values}"
    elif differ:
        where = "; ".join(_params({k: p.parameters.get(k) for k in differ}) for p in tied[:5])
        if len(tied) > 5:
            where += f" and {len(tied) - 5} more"
    else:
        where = ", ".join(f"point {p.index}" for p in tied)
    also = f" (with {_params(same)})" if same else ""
    return (
        f"The best {label} of {fid}, {fmt(b.mean, unit)}{against}, is a tie between "
        f"{len(tied)} points: {where}{also}; any of them is as good."
    )


def _variance_sentences(rows: list[PointRow], metrics: list[MetricInfo]) -> list[str]:
    """Replications that all gave the same figures: say so, since their intervals then
    have zero width and tell nothing about uncertainty."""
    cells = [
        cell
        for row in rows
        for info in metrics
        if (cell := row.metrics.get(info.flow, {}).get(info.metric)) is not None
    ]
    replicated = [c for c in cells if c.n >= 2 and c.sd is not None]
    if not replicated or any(
        c.sd is not None and c.sd > 1e-12 * max(abs(c.mean or 0), 1) for c in replicated
    ):
        return []
    n = sorted({c.n for c in replicated})
    return [
        f"Every replication of a point gave identical results ({'/'.join(map(str, n))} "
        "seeds, sd 0): nothing in these scenarios depends on the seed (no random loss or "
        "traffic), so the intervals have zero width and more replications add nothing."
    ]


def _primary(fid: str, metrics: list[MetricInfo], rows: list[PointRow]) -> MetricInfo:
    """Completion time when every replication of every point finished the transfer,
    otherwise goodput (or a UDP flow's throughput)."""
    mine = {info.metric: info for info in metrics if info.flow == fid}
    if "completion_time" in mine and all(
        r.metrics[fid]["completion_time"].n == r.succeeded for r in rows
    ):
        return mine["completion_time"]
    for m in ("goodput_bps", "throughput_bps"):
        if m in mine:
            return mine[m]
    return next(iter(mine.values()))


def _effect_sentences(
    fid: str,
    info: MetricInfo,
    eff: EffectsOut,
    des: stats.Design,
    points: Sequence[PointData],
    rows: list[PointRow],
    base_i: int | None,
    conditional: Sequence[InteractionOut],
) -> list[str]:
    label, unit, m = info.label, info.unit, info.metric
    shares = [f.share or 0.0 for f in eff.factors]
    ranked = sorted(range(len(des.factors)), key=lambda j: -shares[j])
    out = []
    for rank, j in enumerate(ranked[:3]):
        f = des.factors[j]
        name = f.name if len(f.paths) == 1 else f"{f.name}, moved together,"
        verb = "explains" if len(f.paths) == 1 else "explain"
        if rank == 0:
            lead = f"{name} {verb} {_share(shares[j])} of the variance in {fid}'s {label}"
            if eff.basis == "sequential":
                lead = (
                    "The parameters do not cross as a full factorial, so each is credited "
                    f"with what it adds to those before it: {lead}"
                )
        elif eff.basis == "sequential":
            lead = f"{f.name} adds {_share(shares[j])}"
        else:
            lead = f"{name} {verb} {_share(shares[j])}"
        change = _change(j, fid, m, unit, des, points, rows, base_i, conditional)
        out.append(f"{lead}{': ' + change if change else ''}.")
    if len(ranked) > 3:
        others = math.fsum(shares[j] for j in ranked[3:])
        n = len(ranked) - 3
        out.append(
            f"The other factor adds {_share(others)}."
            if n == 1
            else f"The other {n} factors add {_share(others)} together."
        )
    rest = []
    if eff.interaction_share is not None and len(des.factors) > 1:
        rest.append(f"interactions {_share(eff.interaction_share)}")
    if eff.within_share is not None:
        rest.append(f"replication noise {_share(eff.within_share)}")
    if rest:
        out.append(f"The rest: {' and '.join(rest)}.")
    return out


def _change(
    j: int,
    fid: str,
    m: str,
    unit: str,
    des: stats.Design,
    points: Sequence[PointData],
    rows: list[PointRow],
    base_i: int | None,
    conditional: Sequence[InteractionOut] = (),
) -> str:
    """Moving factor j away from the baseline, everything else held at the baseline; or,
    when another factor interacts with it, what it does at each of that factor's levels."""
    factor = des.factors[j]
    if base_i is None:
        means: dict[int, list[float]] = {}
        for cell, row in zip(des.cells, rows, strict=True):
            mean = row.metrics[fid][m].mean
            if mean is not None:
                means.setdefault(cell[j], []).append(mean)
        parts = [
            f"{_level_words(factor.levels[k])} averages {fmt(sum(v) / len(v), unit)}"
            for k, v in sorted(means.items())
        ]
        return "; ".join(parts)
    base_cell = des.cells[base_i]
    found = interactions.baseline_move(j, fid, m, des, rows, base_i)
    if found is None:
        return ""
    i, delta = found
    depends = [
        x for x in conditional if x.flow == fid and x.metric == m and x.paths == factor.paths
    ]
    if depends:
        # Measured at the baseline only, the move would read as a general truth; the grid
        # shows another factor decides what it does (issue 23 scope 5).
        return "; ".join(interactions.sentence(x, fmt, unit, _val, _pct) for x in depends)
    frm, to = factor.levels[base_cell[j]], factor.levels[des.cells[i][j]]
    moves = _move_words(factor.paths, frm, to)
    base_mean = delta.baseline_mean
    new_mean = base_mean + delta.mean
    if delta.mean == 0:
        return f"{moves} leaves it at {fmt(base_mean, unit)}"
    verb = "cuts" if delta.mean < 0 else "raises"
    text = f"{moves} {verb} it from {fmt(base_mean, unit)} to {fmt(new_mean, unit)}"
    if delta.pct is None:
        return text
    ci = delta.pct_ci95
    if ci is not None and stats.same(ci.low, ci.high):
        return f"{text} ({_pct(delta.pct)}, the same in every replication)"
    if ci is not None:
        lo, hi = ci.low, ci.high
        sure = "" if lo > 0 or hi < 0 else "; the interval includes no change"
        return f"{text} ({_pct(delta.pct)}, 95% CI {_pct(lo)} to {_pct(hi)}{sure})"
    why = "one replication" if delta.n <= 1 else "no interval"
    return f"{text} ({_pct(delta.pct)}; {why}, so no interval)"


def _level_words(level: Any) -> str:
    if isinstance(level, dict):
        return ", ".join(f"{k}={_val(v)}" for k, v in level.items())
    return _val(level)


def _move_words(paths: list[str], frm: Any, to: Any) -> str:
    if len(paths) == 1:
        return f"{paths[0]} {_val(frm)} → {_val(to)}"
    return " with ".join(f"{p} {_val(frm[p])} → {_val(to[p])}" for p in paths)


def _limit_sentences(
    fid: str, rows: list[PointRow], base_i: int | None, best: BestPoint | None
) -> list[str]:
    out = []
    at = rows[base_i] if base_i is not None else (rows[0] if len(rows) == 1 else None)
    if at is not None and fid in at.limits:
        lim = at.limits[fid]
        where = "At the baseline" if base_i is not None else "Here"
        if at.parameters and base_i is not None:
            where += f" ({_params(at.parameters)})"
        out.append(_limit_sentence(where, fid, lim))
    if best is not None and at is not None and fid in at.limits:
        row = next(r for r in rows if r.index == best.point_index)
        if row is not at and fid in row.limits and row.limits[fid].limit != at.limits[fid].limit:
            out.append(_limit_sentence("At the best point", fid, row.limits[fid]))
    return out


def _limit_sentence(where: str, fid: str, lim: LimitCount) -> str:
    limit = lim.limit
    share = f"(diagnosis {limit} in {lim.count} of {lim.of} replications)"
    if limit == "incomplete":
        return f"{where}, {fid} does not complete, so no limit is diagnosed {share}."
    return f"{where}, {LIMITS.get(limit, limit)} is what limits {fid} {share}."
