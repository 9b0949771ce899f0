"""Interactions a conclusion must not hide (issue 23 scope 5): a factor's move measured at the
baseline is generalised only when the grid shows it does the same at the other levels of
every other factor.

For the move of factor j the conclusions quote (baseline level -> another level, every other
factor at its baseline level), the same move is looked up at each level of each other factor
k, the rest still at the baseline. When its effect differs by at least SPREAD between two of
those levels, the move interacts with k, and the conclusion says where it matters
("limit_packets matters only once rcv_buf ≥ 1000000") instead of what it did at the
baseline alone. Point means are compared (replication noise within a point is in the
effects' `within_share`); a level of k matters when the move changes the metric by at least
MATTERS there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from api.compare import stats
from api.compare.schemas import ConditionalEffect, Delta, InteractionOut, PointRow

MATTERS = 0.10  # a move that changes the metric by 10% or more matters at that level
SPREAD = 0.10  # effects this far apart (as fractions of the mean) are not the same effect


def baseline_move(
    j: int, fid: str, metric: str, des: stats.Design, rows: Sequence[PointRow], base_i: int
) -> tuple[int, Delta] | None:
    """The point that moves factor j away from the baseline, every other factor at its
    baseline level, with the largest change of the metric: the move a conclusion quotes."""
    base_cell = des.cells[base_i]
    found: tuple[int, Delta] | None = None
    for i, cell in enumerate(des.cells):
        same_elsewhere = all(cell[k] == base_cell[k] for k in range(len(cell)) if k != j)
        stat = rows[i].metrics.get(fid, {}).get(metric)
        delta = stat.delta if stat is not None else None
        if (
            cell[j] != base_cell[j]
            and same_elsewhere
            and delta is not None
            and (found is None or abs(delta.mean) > abs(found[1].mean))
        ):
            found = (i, delta)
    return found


def find(
    des: stats.Design,
    rows: Sequence[PointRow],
    fid: str,
    metric: str,
    j: int,
    frm: int,
    to: int,
    base_cell: tuple[int, ...],
) -> list[InteractionOut]:
    """The other factors with which factor j's move frm -> to interacts."""
    out = []
    factor = des.factors[j]
    for k, other in enumerate(des.factors):
        if k == j:
            continue
        at = []
        for level in range(len(other.levels)):
            a = _mean(des, rows, fid, metric, base_cell, {j: frm, k: level})
            b = _mean(des, rows, fid, metric, base_cell, {j: to, k: level})
            if a is None or b is None:
                continue
            pct = (b - a) / a * 100 if a else None
            at.append((level, a, b, pct))
        pcts = [p for *_, p in at if p is not None]
        if len(pcts) < 2 or (max(pcts) - min(pcts)) < SPREAD * 100:
            continue
        matters = [lv for lv, *_, p in at if p is not None and abs(p) >= MATTERS * 100]
        low, high = _threshold(other.levels, [lv for lv, *_ in at], matters)
        out.append(
            InteractionOut(
                flow=fid,
                metric=metric,
                factor=factor.name,
                paths=factor.paths,
                move_from=factor.levels[frm],
                move_to=factor.levels[to],
                other=other.name,
                other_paths=other.paths,
                baseline_level=other.levels[base_cell[k]],
                at=[
                    ConditionalEffect(level=other.levels[lv], from_mean=a, to_mean=b, pct=p)
                    for lv, a, b, p in at
                ],
                matters_at_least=None if low is None else other.levels[low],
                matters_at_most=None if high is None else other.levels[high],
            )
        )
    return out


def _mean(
    des: stats.Design,
    rows: Sequence[PointRow],
    fid: str,
    metric: str,
    base: tuple[int, ...],
    fixed: dict[int, int],
) -> float | None:
    want = tuple(fixed.get(i, base[i]) for i in range(len(base)))
    for cell, row in zip(des.cells, rows, strict=True):
        if cell == want:
            stat = row.metrics.get(fid, {}).get(metric)
            if stat is not None and stat.mean is not None and math.isfinite(stat.mean):
                return stat.mean
    return None


def _number(level: Any) -> float | None:
    if isinstance(level, bool) or not isinstance(level, int | float):
        return None
    return float(level)


def _threshold(
    levels: list[Any], measured: list[int], matters: list[int]
) -> tuple[int | None, int | None]:
    """When the levels are numbers and the move matters exactly on the upper (or lower)
    ones, the first level where it does: "only once k ≥ X" (or "only while k ≤ X")."""
    values = [(_number(levels[i]), i) for i in measured]
    if not matters or len(matters) == len(measured) or any(v is None for v, _ in values):
        return None, None
    ordered = [i for _, i in sorted(values, key=lambda t: t[0])]  # type: ignore[arg-type, return-value]
    flags = [i in matters for i in ordered]
    cut = flags.index(True)
    if all(flags[cut:]) and not any(flags[:cut]):
        return ordered[cut], None
    last = len(flags) - 1 - flags[::-1].index(True)
    if all(flags[: last + 1]) and not any(flags[last + 1 :]):
        return None, ordered[last]
    return None, None


def sentence(i: InteractionOut, fmt: Any, unit: str, val: Any, pct: Any) -> str:
    """ "limit_packets 100 → 1000 leaves it at 192.1 s at the baseline's rcv_buf = 65535, but
    cuts it from 112.0 s to 24.0 s (−79%) at rcv_buf = 1000000: limit_packets matters only
    once rcv_buf ≥ 1000000"."""
    move = f"{_name(i.paths)} {val(i.move_from)} → {val(i.move_to)}"
    other = _name(i.other_paths)
    parts = []
    base_key = stats.level_key(i.baseline_level)
    ordered = sorted(i.at, key=lambda c: stats.level_key(c.level) != base_key)
    for c in ordered:
        where = f"{other} = {val(c.level)}"
        if stats.level_key(c.level) == base_key:
            where = f"the baseline's {where}"
        if c.pct is not None and abs(c.pct) < MATTERS * 100:
            parts.append(f"leaves it near {fmt(c.from_mean, unit)} at {where}")
        else:
            verb = "cuts" if c.to_mean < c.from_mean else "raises"
            change = f" ({pct(c.pct)})" if c.pct is not None else ""
            parts.append(
                f"{verb} it from {fmt(c.from_mean, unit)} to {fmt(c.to_mean, unit)}{change} "
                f"at {where}"
            )
    text = f"{move} " + ", but ".join(parts[:2]) + "".join(f"; {p}" for p in parts[2:])
    if i.matters_at_least is not None:
        text += f": {_name(i.paths)} matters only once {other} ≥ {val(i.matters_at_least)}"
    elif i.matters_at_most is not None:
        text += f": {_name(i.paths)} matters only while {other} ≤ {val(i.matters_at_most)}"
    else:
        text += f": its effect depends on {other}"
    return text


def _name(paths: list[str]) -> str:
    return paths[0] if len(paths) == 1 else " + ".join(paths)
