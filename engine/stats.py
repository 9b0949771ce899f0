"""Estimates from replications, free of any service: a metric's mean, sample standard
deviation (n-1) and 95% t-interval mean ± t(0.975, n-1)·sd/√n (one replication has no
interval), and a point's difference from a baseline: paired per seed when they share seeds
(common random numbers), Welch's interval otherwise. Sweep comparisons (api/compare)
and the advisor (engine/advice) both read them from here.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

CONFIDENCE = 0.95


@dataclass(frozen=True, slots=True)
class Estimate:
    n: int
    mean: float | None
    sd: float | None
    ci95: tuple[float, float] | None


@dataclass(frozen=True, slots=True)
class Difference:
    n: int  # paired seeds, or the two sample sizes added for an unpaired difference
    paired: bool
    mean: float
    sd: float | None  # of the per-seed differences (paired only)
    ci95: tuple[float, float] | None
    baseline_mean: float
    pct: float | None
    pct_ci95: tuple[float, float] | None


@functools.lru_cache(maxsize=1024)
def t_quantile(df: float) -> float:
    """Kept by degrees of freedom: scipy's ppf costs ~100 us a call (its argument checks and
    broadcasting), and a 500-point sweep summary asks it for the same few df once per
    point and metric, 40% of the summary's build (py-spy, a dashboard polling a sweep)."""
    return float(sps.t.ppf(0.5 + CONFIDENCE / 2, df))


def estimate(values: Sequence[float] | np.ndarray) -> Estimate:
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n == 0:
        return Estimate(0, None, None, None)
    mean = float(x.mean())
    if n == 1:
        return Estimate(1, mean, None, None)
    sd = float(x.std(ddof=1))
    half = t_quantile(n - 1) * sd / math.sqrt(n)
    return Estimate(n, mean, sd, (mean - half, mean + half))


def difference(point: Mapping[int, float], baseline: Mapping[int, float]) -> Difference | None:
    """Point minus baseline; `point` and `baseline` map seed -> value."""
    common = sorted(set(point) & set(baseline))
    if common:
        d = np.array([point[s] - baseline[s] for s in common])
        base_mean = float(np.mean([baseline[s] for s in common]))
        est = estimate(d)
        assert est.mean is not None
        return _with_pct(
            Difference(len(d), True, est.mean, est.sd, est.ci95, base_mean, None, None)
        )
    if not point or not baseline:
        return None
    # No seed in common (runs compared across seeds): Welch's unpaired interval.
    a, b = np.array(list(point.values())), np.array(list(baseline.values()))
    mean = float(a.mean() - b.mean())
    ci = None
    if len(a) > 1 and len(b) > 1:
        va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
        se = math.sqrt(va + vb)
        if se > 0:
            df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
            half = float(sps.t.ppf(0.5 + CONFIDENCE / 2, df)) * se
            ci = (mean - half, mean + half)
        else:
            ci = (mean, mean)
    return _with_pct(
        Difference(len(a) + len(b), False, mean, None, ci, float(b.mean()), None, None)
    )


def _with_pct(d: Difference) -> Difference:
    # The interval of the % change treats the baseline mean as known: the difference's
    # interval divided by it.
    if d.baseline_mean == 0:
        return d
    scale = 100.0 / d.baseline_mean
    pct_ci = None
    if d.ci95 is not None:
        lo, hi = d.ci95[0] * scale, d.ci95[1] * scale
        pct_ci = (min(lo, hi), max(lo, hi))
    return Difference(d.n, d.paired, d.mean, d.sd, d.ci95, d.baseline_mean, d.mean * scale, pct_ci)
