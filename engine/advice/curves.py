"""Curves, as QuickPredict draws them (issue 23 scope 4): for each lever of an advice, the
target's metric against the lever's value, the analytic bound curve beside the measured
points (the advisor's own runs of that lever alone, no extra simulation).

One long table, the shape dashboards read: a row per lever and value, with the metric's
name, the measured mean (null where nothing was run) and its interval, and the bound (the
best the bounds allow: a completion time's lower bound, a goodput's upper bound).
`to_csv()` writes it with a header.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from engine.advice import tracks
from engine.advice.levers import show
from engine.advice.options import Lever
from engine.advice.search import Advisor

GRID = 12  # analytic points per numeric lever, besides the measured ones


class CurvePoint(BaseModel):
    model_config = ConfigDict(extra="forbid")

    lever: str
    paths: list[str]
    value: Any = Field(description="The lever's value, base units")
    label: str = Field(description="The value for an axis: '35,040 B', 'T3 (44.736 Mbit/s)'")
    metric: str
    measured: float | None = Field(description="Mean of the runs at this value; null: not run")
    ci_low: float | None
    ci_high: float | None
    bound: float | None = Field(description="The analytic bound at this value")


def curves(advisor: Advisor) -> list[CurvePoint]:
    out: list[CurvePoint] = []
    for lever in advisor.levers:
        for value in _values(advisor, lever):
            changes = lever.changes(value) if value != lever.current else {}
            m = advisor.measured(changes)
            bound = advisor.bound_value(changes)
            out.append(
                CurvePoint(
                    lever=lever.name,
                    paths=lever.paths,
                    value=value,
                    label=show(lever.paths[0], value),
                    metric=advisor.target.metric,
                    measured=_finite(m.mean) if m else None,
                    ci_low=m.ci95[0] if m and m.ci95 else None,
                    ci_high=m.ci95[1] if m and m.ci95 else None,
                    bound=_finite(bound),
                )
            )
    return out


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _values(advisor: Advisor, lever: Lever) -> list[Any]:
    """The lever's current value, every value it was measured at alone, and for a numeric
    lever a geometric grid up to the highest value worth trying."""
    values: list[Any] = [lever.current]
    for changes in advisor.tried():
        v = changes.get(lever.paths[0])
        if v is not None and lever.changes(v) == changes:
            values.append(v)
    if lever.shape == "numeric":
        hi = tracks.top(lever, {}, advisor.bounds)
        k = tracks.knee(lever, {}, advisor.bounds, hi)
        lo = max(float(lever.current), lever.step())
        if k is not None:
            hi = min(hi, max(2 * float(k), 2 * lo))  # the bound is flat past the knee
        if hi > lo:
            ratio = (hi / lo) ** (1 / GRID)
            values += [lever.grid(lo * ratio**i) for i in range(1, GRID + 1)]
    elif lever.shape == "ordered":
        values += lever.ordered()
    else:
        values += lever.choices()
    unique = {json_key(v): v for v in values}
    if lever.shape == "choice":
        return list(unique.values())
    return sorted(unique.values(), key=float)


def json_key(v: Any) -> str:
    return repr(float(v)) if isinstance(v, int | float) and not isinstance(v, bool) else repr(v)


def to_csv(rows: list[CurvePoint]) -> str:
    """lever,value,label,metric,measured,ci_low,ci_high,bound: one row per point."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["lever", "value", "label", "metric", "measured", "ci_low", "ci_high", "bound"])
    for r in rows:
        w.writerow(
            [
                r.lever,
                r.value,
                r.label,
                r.metric,
                *(
                    "" if x is None else f"{x:.6g}"
                    for x in (r.measured, r.ci_low, r.ci_high, r.bound)
                ),
            ]
        )
    return buf.getvalue()
