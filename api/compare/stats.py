"""The statistics of a comparison, in textbook form and free of the database.

- A point's metric over its replications, and its difference from the baseline (paired
  per seed, or Welch's): engine/stats.py, shared with the advisor, re-exported here.
- Main effects: a one-way (or balanced factorial) analysis of variance. A factor's share
  is SS_factor / SS_total with SS_factor = Σ_levels n_l (ȳ_l - ȳ)²; what the factors leave
  is the interaction (between points) and replication noise (within points). Factors that
  do not cross as a full factorial get sequential (type I) sums of squares of the additive
  least-squares model instead, entered greedily by what each adds.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import orjson

from engine.stats import (  # noqa: F401 (re-exported: the comparison's statistics)
    CONFIDENCE,
    Difference,
    Estimate,
    difference,
    estimate,
    t_quantile,
)


def same(a: float, b: float) -> bool:
    """Equal as results are: the same up to floating-point noise."""
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


# --- the design and its main effects ---------------------------------------------------


def level_key(value: Any) -> str:
    """Values compared as canonical JSON, so lists and objects can be levels too."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


@dataclass(frozen=True, slots=True)
class Factor:
    name: str
    paths: list[str]
    levels: list[Any]  # one entry per level: {path: value} when the factor has several paths


@dataclass(frozen=True, slots=True)
class Design:
    """Swept parameters grouped into factors, and each point's level of each factor."""

    factors: list[Factor]
    cells: list[tuple[int, ...]]  # per point: level index of each factor
    factorial: bool  # the factors cross completely and evenly: their effects separate
    note: str | None


def design(points: Sequence[Mapping[str, Any]], paths: Sequence[str]) -> Design:
    """Paths whose values move together over the points (as in `mode: zip`, where
    access1 and access2 change at once) are one factor: their effects cannot be told apart."""
    if not points or not paths:
        return Design([], [() for _ in points], False, "nothing is varied")
    codes: dict[str, tuple[int, ...]] = {}
    for path in paths:
        seen: dict[str, int] = {}
        codes[path] = tuple(seen.setdefault(level_key(p.get(path)), len(seen)) for p in points)
    groups: dict[tuple[int, ...], list[str]] = {}
    for path in paths:
        groups.setdefault(codes[path], []).append(path)
    varied = [(code, ps) for code, ps in groups.items() if len(set(code)) > 1]
    if not varied:
        return Design([], [() for _ in points], False, "every point has the same parameters")
    factors, columns = [], []
    for code, ps in varied:
        first = {c: i for i, c in reversed(list(enumerate(code)))}
        levels = [_level(points[first[c]], ps) for c in sorted(first)]
        factors.append(Factor(" + ".join(ps), ps, levels))
        columns.append(code)
    cells = list(zip(*columns, strict=True))
    counts = Counter(cells)
    full = math.prod(len(f.levels) for f in factors)
    factorial = len(factors) == 1 or (len(counts) == full and len(set(counts.values())) == 1)
    notes = []
    if sum(len(ps) for _, ps in varied) > len(factors):
        notes.append("parameters that always change together are one factor")
    if not factorial:
        notes.append(
            "the factors do not cross as a full factorial, so their shares are sequential "
            "sums of squares: each factor, taken in order of importance, is credited with "
            "what it adds to those before it"
        )
    return Design(factors, cells, factorial, "; ".join(notes) or None)


def _level(point: Mapping[str, Any], paths: Sequence[str]) -> Any:
    return point.get(paths[0]) if len(paths) == 1 else {p: point.get(p) for p in paths}


@dataclass(frozen=True, slots=True)
class Effects:
    # "replications": every observation, orthogonal main effects; "point_means": one mean
    # per point (unequal replications); "sequential": every observation, sequential SS.
    basis: Literal["replications", "point_means", "sequential"]
    shares: list[float | None]  # per factor, in the design's order; None: no variation
    interaction: float | None  # between-point variance the main effects leave
    within: float | None  # replication noise (null without replications)
    ss_total: float
    note: str | None


def main_effects(des: Design, values: Sequence[Sequence[float]]) -> Effects | None:
    """Shares of the total sum of squares; `values` holds each point's observations."""
    if not des.factors:
        return None
    cells: dict[tuple[int, ...], list[float]] = {}
    for cell, seen in zip(des.cells, values, strict=True):
        cells.setdefault(cell, []).extend(seen)
    cells = {c: v for c, v in cells.items() if v}
    if len(cells) < 2:
        return None
    full = math.prod(len(f.levels) for f in des.factors)
    sizes = {len(v) for v in cells.values()}
    note = None
    basis: Literal["replications", "point_means", "sequential"]
    obs: dict[tuple[int, ...], list[float]]
    if des.factorial and (len(des.factors) == 1 or len(cells) == full):
        if len(des.factors) == 1 or len(sizes) == 1:
            basis, obs = "replications", cells
        else:
            # Unequal replications break the orthogonality of a factorial: the cell means
            # (one per point) keep it.
            basis = "point_means"
            obs = {c: [float(np.mean(v))] for c, v in cells.items()}
            note = "unequal replications per point: shares computed on point means"
    else:
        basis, obs = "sequential", cells
        if des.factorial:
            note = "some points have no results yet: shares are sequential until they do"
    y = np.concatenate([np.asarray(v, float) for v in obs.values()])
    grand = float(y.mean())
    ss_total = float(((y - grand) ** 2).sum())
    if np.allclose(y, grand, rtol=1e-12, atol=0.0):
        return Effects(basis, [None] * len(des.factors), None, None, 0.0, "no variation at all")
    ss_cells = sum(len(v) * (float(np.mean(v)) - grand) ** 2 for v in obs.values())
    if basis == "sequential":
        ss = _sequential(list(obs.items()), len(des.factors), grand)
    else:
        ss = []
        for j in range(len(des.factors)):
            by_level: dict[int, list[float]] = {}
            for cell, v in obs.items():
                by_level.setdefault(cell[j], []).extend(v)
            ss.append(sum(len(v) * (float(np.mean(v)) - grand) ** 2 for v in by_level.values()))
    shares = [min(max(x / ss_total, 0.0), 1.0) for x in ss]
    interaction = max(ss_cells / ss_total - math.fsum(shares), 0.0)
    replicated = basis != "point_means" and max(len(v) for v in obs.values()) > 1
    within = max(1.0 - ss_cells / ss_total, 0.0) if replicated else None
    return Effects(basis, list(shares), interaction, within, ss_total, note)


def _sequential(
    cells: list[tuple[tuple[int, ...], list[float]]], k: int, grand: float
) -> list[float]:
    """Type I sums of squares of an additive model (dummy-coded factors, least squares),
    the factors entered greedily by what each adds: they sum to the model's SS."""
    rows = [(cell, v) for cell, obs in cells for v in obs]
    y = np.array([v for _, v in rows])
    dummies = []
    for j in range(k):
        levels = sorted({cell[j] for cell, _ in rows})
        dummies.append(
            np.array([[cell[j] == lv for lv in levels[1:]] for cell, _ in rows], dtype=float)
        )

    def explained(chosen: list[int]) -> float:
        x = np.hstack([np.ones((len(y), 1)), *(dummies[j] for j in chosen)])
        beta, *_ = np.linalg.lstsq(x, y, rcond=None)
        return float(((x @ beta - grand) ** 2).sum())

    ss, chosen, base = [0.0] * k, list[int](), 0.0
    while len(chosen) < k:
        gains = {j: explained([*chosen, j]) - base for j in range(k) if j not in chosen}
        j = max(gains, key=gains.__getitem__)
        ss[j] = max(gains[j], 0.0)
        base += ss[j]
        chosen.append(j)
    return ss


def best(means: Sequence[float | None], direction: str) -> int | None:
    """Index of the best mean ("lower" or "higher" is better); the first of ties."""
    found = None
    for i, m in enumerate(means):
        if m is None or math.isnan(m):
            continue
        if found is None or (m < means[found] if direction == "lower" else m > means[found]):  # type: ignore[operator]
            found = i
    return found
