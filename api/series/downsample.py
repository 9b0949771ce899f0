"""Downsampling a series for a chart without changing what it says.

Two kinds of series, told apart by their key (the engine's rate-type traces are the sampled
`*_bps` and `*utilization` series):

- a **rate** sample at `t` is the mean rate over the sampling interval that ends at `t`;
  its first sample covers one interval before it. Downsampled by time buckets of equal
  width, each point at its bucket's end holding the time-weighted mean over the bucket
  (the exact integral, so the mean rate over any span of buckets is unchanged), or the
  bucket's `min`, `max` or `last` sample.
- a **step** (change-driven) series holds each value from its time until the next point.
  By default MinMaxLTTB (a chart's shape), with the window's greatest and least values
  always among the points; with `agg`, time buckets of equal
  width, each point at its bucket's start holding the mean of the held value over the
  bucket, or its min, max or value at the bucket's end (`last`); the last sample is kept.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt
from tsdownsample import MinMaxLTTBDownsampler, NaNMinMaxLTTBDownsampler

Array = npt.NDArray[np.float64]
Agg = Literal["mean", "min", "max", "last"]


def is_rate(key: str) -> bool:
    """A sampled rate (goodput, utilisation): its integral is what it means."""
    return key.endswith("_bps") or key.endswith("utilization")


def default_agg(key: str) -> Agg | None:
    return "mean" if is_rate(key) else None


def method(key: str, agg: str | None) -> str:
    """The `method` a response names."""
    if agg is None:
        return "minmax-lttb"
    return f"{'rate' if is_rate(key) else 'step'}-{agg}"


def rate_cover(t: Array) -> float:
    """Where the first rate sample's interval starts (one sampling interval before it)."""
    if len(t) < 2:
        return float(t[0]) if len(t) else 0.0
    return float(t[0] - (t[1] - t[0]))


def rate_integral(t: Array, v: Array, at: Array, *, lo: float | None = None) -> Array:
    """∫ rate dt from the start of coverage to each time in `at` (clipped to the coverage)."""
    lo = rate_cover(t) if lo is None else lo
    knots = np.concatenate(([lo], t))
    vals = np.nan_to_num(v, nan=0.0)
    cum = np.concatenate(([0.0], np.cumsum(vals * np.diff(knots))))
    return np.interp(at, knots, cum)


def rate_buckets(t: Array, v: Array, edges: Array, agg: str, *, lo: float | None = None) -> Array:
    """Per bucket (edges[k], edges[k+1]] the aggregate of the rate series; NaN where the
    series does not cover the bucket."""
    lo = rate_cover(t) if lo is None else lo
    hi = float(t[-1]) if len(t) else lo
    a, b = np.maximum(edges[:-1], lo), np.minimum(edges[1:], hi)
    covered = b > a
    out = np.full(len(edges) - 1, np.nan)
    if not len(t):
        return out
    if agg == "mean":
        area = rate_integral(t, v, b, lo=lo) - rate_integral(t, v, a, lo=lo)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(covered, area / np.where(covered, b - a, 1.0), np.nan)
        return out
    # A sample belongs to the bucket its interval ends in.
    which = np.searchsorted(edges, t, side="left") - 1
    return _reduce(which, v, len(edges) - 1, agg)


def step_buckets(t: Array, v: Array, edges: Array, agg: str) -> Array:
    """Per bucket [edges[k], edges[k+1]) the aggregate of the held (step) value."""
    nb = len(edges) - 1
    if agg == "mean":
        knots = t
        cum = np.concatenate(([0.0], np.cumsum(v[:-1] * np.diff(knots))))

        def integral(x: Array) -> Array:
            i = np.clip(np.searchsorted(knots, x, side="right") - 1, 0, len(knots) - 1)
            return cum[i] + v[i] * (x - knots[i])

        width = np.diff(edges)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(width > 0, (integral(edges[1:]) - integral(edges[:-1])) / width, v[0])
    held_in = v[np.clip(np.searchsorted(t, edges[:-1], side="right") - 1, 0, len(v) - 1)]
    if agg == "last":
        return v[np.clip(np.searchsorted(t, edges[1:], side="left") - 1, 0, len(v) - 1)]
    which = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, nb - 1)
    inside = _reduce(which, v, nb, agg)
    pick = np.fmin if agg == "min" else np.fmax
    return pick(inside, held_in)


def _reduce(which: npt.NDArray[np.intp], v: Array, nb: int, agg: str) -> Array:
    ok = (which >= 0) & (which < nb) & ~np.isnan(v)
    which, v = which[ok], v[ok]
    out = np.full(nb, np.nan)
    if agg == "last":
        out[which] = v  # later samples overwrite earlier ones
    elif agg == "min":
        np.fmin.at(out, which, v)
    else:
        np.fmax.at(out, which, v)
    return out


def with_extremes(idx: npt.NDArray[np.intp], v: Array) -> npt.NDArray[np.intp]:
    """`idx` (sorted indices into `v`) holding the greatest and least of `v`: LTTB picks one
    of each bucket's min and max by the triangle it makes with its neighbours, so the
    series' own peak can be left out. A missing extreme takes the place of its nearer
    neighbour in `idx` (the first or last index only when nothing else is left, never the
    other extreme), so the count stays what was asked for."""
    if len(idx) < 2 or np.isnan(v).all():
        return idx
    extremes = {int(np.nanargmax(v)), int(np.nanargmin(v))}
    out = idx.astype(np.intp, copy=True)
    ends = {int(out[0]), int(out[-1])}
    for e in sorted(extremes):
        p = int(np.searchsorted(out, e))
        if p < len(out) and out[p] == e:
            continue
        near = [q for q in range(len(out)) if int(out[q]) not in extremes]
        q = min(near, key=lambda q: (int(out[q]) in ends, abs(int(out[q]) - e)))
        out[q] = e
        out.sort()
    return out


def downsample(
    key: str, t: Array, v: Array, max_points: int, agg: str | None
) -> tuple[Array, Array]:
    """At most `max_points` points of the series (callers pass series longer than that)."""
    if agg is None:
        # MinMaxLTTB keeps the peaks a chart must show (LTTB on min/max preselected buckets).
        sampler = NaNMinMaxLTTBDownsampler() if np.isnan(v).any() else MinMaxLTTBDownsampler()
        t, v = (np.require(a, np.float64, ["C_CONTIGUOUS", "ALIGNED"]) for a in (t, v))
        idx = with_extremes(sampler.downsample(t, v, n_out=max_points), v)
        return t[idx], v[idx]
    if is_rate(key):
        edges = np.linspace(rate_cover(t), float(t[-1]), max_points + 1)
        return edges[1:], rate_buckets(t, v, edges, agg)
    edges = np.linspace(float(t[0]), float(t[-1]), max_points)
    values = step_buckets(t, v, edges, agg)
    return edges, np.append(values, v[-1])
