"""A comparison of points (a sweep's, or runs grouped by scenario): per point and metric the
mean and its interval, the change against the baseline, the best point, the main effects,
and a few sentences that say what the numbers say. Shared by sweeps and /v1/compare."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeGuard

from api.compare import interactions, stats, words
from api.compare.points import Observation, PointData
from api.compare.schemas import (
    BestPoint,
    Comparison,
    Delta,
    DesignOut,
    EffectsOut,
    FactorOut,
    FactorShare,
    InteractionOut,
    Interval,
    LimitCount,
    MetricInfo,
    MetricStat,
    PointRow,
)
from engine.accounting import FIELDS as TIME_STATES

# (metric, unit, better when) per flow kind: the figures a comparison is about.
METRICS: dict[str, list[tuple[str, str, Literal["lower", "higher"]]]] = {
    "tcp": [
        ("completion_time", "s", "lower"),
        ("goodput_bps", "bit/s", "higher"),
        ("retransmissions", "packets", "lower"),
        ("timeouts", "count", "lower"),
        ("rtt_mean", "s", "lower"),
        ("plr", "fraction", "lower"),
        ("pdr", "fraction", "higher"),
        ("delay_mean", "s", "lower"),
    ],
    "udp": [
        ("throughput_bps", "bit/s", "higher"),
        ("plr", "fraction", "lower"),
        ("pdr", "fraction", "higher"),
        ("delay_mean", "s", "lower"),
        ("jitter", "s", "lower"),
    ],
}
# Where a TCP flow's time went (its summary's `time`), state by state: compared where some
# point spent time in the state.
TIME_METRICS: list[tuple[str, str, Literal["lower", "higher"]]] = [
    (f"time.{state}", "s", "lower") for state in TIME_STATES
]
LABELS = {
    **{f"time.{state}": f"time in {state.replace('_', ' ')}" for state in TIME_STATES},
    "completion_time": "completion time",
    "goodput_bps": "goodput",
    "throughput_bps": "throughput",
    "rtt_mean": "mean round-trip time",
    "plr": "packet loss rate",
    "pdr": "packet delivery ratio",
    "delay_mean": "mean one-way delay",
}
METHOD = {
    "interval": "95% t-interval over replications: mean ± t(0.975, n-1)·sd/√n (sd with n-1); "
    "null with one replication. Kept inside the values the metric can take (fractions in "
    "[0, 1], every other metric >= 0): an end beyond a bound is moved to it and the "
    "interval says `clipped`. A change's interval likewise: at most bound minus the "
    "baseline mean each way (so >= -100% for a metric that cannot go below 0)",
    "delta": "point minus baseline. Seeds shared with the baseline (common random numbers) make "
    "the differences paired: mean, sd and t-interval of the per-seed differences; without "
    "common seeds, Welch's interval. pct = difference / baseline mean; its interval is the "
    "difference's divided by the baseline mean",
    "effects": "share of the total sum of squares of all replications explained by each "
    "factor's level means, SS_factor/SS_total (basis `replications`; `point_means` when a "
    "factorial's points have unequal replications). Parameters that always change together "
    "form one factor. When the factors do not cross as a full factorial (basis "
    "`sequential`), sequential (type I) sums of squares of the additive model, the factors "
    "entered by what each adds to those before it. interaction = between-point share the "
    "main effects leave, within = replication noise. Shares sum to at most 1",
    "best": "the point with the best mean, per the metric's direction",
    "limits": "per point and flow the diagnosis' most common limit over its replications",
}


def _finite(x: Any) -> TypeGuard[float]:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def metrics_of(kind: str) -> list[tuple[str, str, Literal["lower", "higher"]]]:
    """The metrics compared for a flow of `kind`: its figures, then (TCP) its time."""
    return METRICS.get(kind, []) + (TIME_METRICS if kind == "tcp" else [])


def value(flow: Any, metric: str) -> Any:
    """A flow summary's `metric`, a dotted path into it (`time.busy`), or None."""
    for part in metric.split("."):
        flow = flow.get(part) if isinstance(flow, dict) else None
    return flow


def figure(obs: Observation, flow: str, metric: str) -> float | None:
    """A run's `metric` of `flow` when it is a finite number, read once per run."""
    key = (flow, metric)
    try:
        return obs.figures[key]
    except KeyError:
        v = value(obs.flows.get(flow), metric)
        found = obs.figures[key] = float(v) if _finite(v) else None
        return found


def _values(point: PointData, flow: str, metric: str) -> dict[int, float]:
    """seed -> value (a seed is one simulation, whatever number of runs served it)."""
    out = {}
    for obs in point.observations:
        if (v := figure(obs, flow, metric)) is not None:
            out[obs.seed] = v
    return out


#: A build's `_values`, each point's metric read once (the metric list, the point's row,
#: every other point's row when it is the baseline, and the main effects all ask for it).
#: What it returns is shared: read only.
Values = Callable[[PointData, str, str], dict[int, float]]


def _kept_values() -> Values:
    kept: dict[tuple[int, str, str], dict[int, float]] = {}

    def values(point: PointData, flow: str, metric: str) -> dict[int, float]:
        key = (id(point), flow, metric)  # the points outlive the build
        found = kept.get(key)
        if found is None:
            found = kept[key] = _values(point, flow, metric)
        return found

    return values


def _compared(points: Sequence[PointData], flow: str, metric: str, values: Values) -> bool:
    """Some point has the metric (a state of the time: some point spent time in it)."""
    found = [values(p, flow, metric) for p in points]
    if metric.startswith("time."):
        return any(v for values in found for v in values.values())
    return any(found)


def domain(unit: str) -> tuple[float, float]:
    """The values a metric in `unit` can take: a fraction's are in [0, 1]; every other
    metric compared (times, rates, packets, counts) is >= 0."""
    return (0.0, 1.0) if unit == "fraction" else (0.0, math.inf)


def _interval(
    ci: tuple[float, float] | None, bounds: tuple[float, float] = (-math.inf, math.inf)
) -> Interval | None:
    """`ci` kept inside `bounds`, saying whether an end had to move."""
    if ci is None:
        return None
    low, high = max(ci[0], bounds[0]), min(ci[1], bounds[1])
    return Interval(low=low, high=high, clipped=(low, high) != ci)


#: Each point's last row and what it was built from (``build``'s `kept`), by point index.
KeptRows = dict[int, tuple[tuple[object, ...], PointRow]]


def build(
    points: Sequence[PointData],
    paths: Sequence[str],
    *,
    partial_note: str | None = None,
    kept: KeptRows | None = None,
) -> Comparison:
    """The comparison of these points. `kept`: the rows of an earlier build of the same
    points (a running sweep's summary, rebuilt as its runs finish), each reused while its
    point and the baseline have the same observations and the metrics are the same, and
    replaced by the new rows: a rebuild recomputes only the points whose runs finished
    since (most of a 500-run sweep's rebuild was its unchanged rows)."""
    kinds: dict[str, str] = {}
    for p in points:
        for obs in p.observations:
            for fid, f in obs.flows.items():
                kinds.setdefault(fid, f.get("kind", "tcp"))
    baseline = next((p for p in points if p.is_baseline), None)
    values = _kept_values()
    metrics = [
        MetricInfo(flow=fid, metric=m, kind=kind, unit=unit, direction=d, label=LABELS.get(m, m))
        for fid, kind in kinds.items()
        for m, unit, d in metrics_of(kind)
        if _compared(points, fid, m, values)
    ]
    des = stats.design([p.parameters for p in points], paths)
    rows = [_kept_row(p, metrics, baseline, values, kept) for p in points]
    best: list[BestPoint] = []
    effects: list[EffectsOut] = []
    for info in metrics:
        fid, m = info.flow, info.metric
        top = _best(info, points, rows)
        if top is not None:
            best.append(top)
        eff = stats.main_effects(des, [list(values(p, fid, m).values()) for p in points])
        if eff is not None:
            effects.append(_effects(info, des, eff))
    found = _interactions(des, rows, metrics, effects, points)
    texts = words.conclusions(points, rows, metrics, des, effects, best, found, partial_note)
    return Comparison(
        metrics=metrics,
        points=rows,
        best=best,
        design=DesignOut(
            factors=[FactorOut(name=f.name, paths=f.paths, levels=f.levels) for f in des.factors],
            factorial=des.factorial,
            note=des.note,
        ),
        effects=effects,
        interactions=found,
        conclusions=texts,
        text=" ".join(texts),
        method=METHOD,
    )


def _best(info: MetricInfo, points: Sequence[PointData], rows: list[PointRow]) -> BestPoint | None:
    """The point with the best mean of the metric (the baseline when it ties), and the ties."""
    fid, m = info.flow, info.metric
    means = [r.metrics[fid][m].mean for r in rows]
    i = stats.best(means, info.direction)
    b = next((k for k, p in enumerate(points) if p.is_baseline), None)
    if i is not None and b is not None and means[b] == means[i]:
        i = b  # a tie with the baseline: no change is the best
    top = means[i] if i is not None else None
    if i is None or top is None:
        return None
    ties = [points[k].index for k, mk in enumerate(means) if mk is not None and stats.same(mk, top)]
    return BestPoint(
        flow=fid,
        metric=m,
        direction=info.direction,
        point_index=points[i].index,
        mean=top,
        parameters=points[i].parameters,
        ties=ties if len(ties) > 1 else [],
    )


def _interactions(
    des: stats.Design,
    rows: list[PointRow],
    metrics: list[MetricInfo],
    effects: list[EffectsOut],
    points: Sequence[PointData],
) -> list[InteractionOut]:
    """For each metric with effects, each factor's move at the baseline checked at the other
    factors' levels (interactions.py)."""
    base_i = next((i for i, p in enumerate(points) if p.is_baseline), None)
    if base_i is None or len(des.factors) < 2:
        return []
    out = []
    measured = {(e.flow, e.metric) for e in effects}
    for info in metrics:
        if (info.flow, info.metric) not in measured:
            continue
        for j in range(len(des.factors)):
            move = interactions.baseline_move(j, info.flow, info.metric, des, rows, base_i)
            if move is not None:
                frm, to = des.cells[base_i][j], des.cells[move[0]][j]
                out += interactions.find(
                    des, rows, info.flow, info.metric, j, frm, to, des.cells[base_i]
                )
    return out


def _kept_row(
    p: PointData,
    metrics: list[MetricInfo],
    baseline: PointData | None,
    values: Values,
    kept: KeptRows | None,
) -> PointRow:
    """The point's row, from `kept` when nothing it shows has changed (a succeeded run's
    figures never do: its id stands for them)."""
    if kept is None:
        return _row(p, metrics, baseline, values)
    shown = tuple((m.flow, m.metric, m.unit) for m in metrics)
    key = (p.runs, _observed(p), None if baseline is None else _observed(baseline), shown)
    found = kept.get(p.index)
    if found is not None and found[0] == key:
        return found[1]
    row = _row(p, metrics, baseline, values)
    kept[p.index] = (key, row)
    return row


def _observed(p: PointData) -> tuple[object, ...]:
    return (p.is_baseline, tuple(obs.run_id for obs in p.observations))


def _row(
    p: PointData, metrics: list[MetricInfo], baseline: PointData | None, values: Values
) -> PointRow:
    cells: dict[str, dict[str, MetricStat]] = {}
    for info in metrics:
        fid, m = info.flow, info.metric
        own = values(p, fid, m)
        est = stats.estimate(list(own.values()))
        lo, hi = domain(info.unit)
        delta = None
        if baseline is not None and not p.is_baseline:
            d = stats.difference(own, values(baseline, fid, m))
            if d is not None:
                # The point's mean lies in [lo, hi]: its difference from the baseline's
                # mean in [lo - base, hi - base], and in % that over base (>= 0 here).
                base = d.baseline_mean
                moves = (lo - base, hi - base)
                pct = (-math.inf, math.inf)
                if base > 0:
                    pct = (100.0 * moves[0] / base, 100.0 * moves[1] / base)
                delta = Delta(
                    n=d.n,
                    paired=d.paired,
                    mean=d.mean,
                    sd=d.sd,
                    ci95=_interval(d.ci95, moves),
                    baseline_mean=base,
                    pct=d.pct,
                    pct_ci95=_interval(d.pct_ci95, pct),
                )
        cells.setdefault(fid, {})[m] = MetricStat(
            n=est.n, mean=est.mean, sd=est.sd, ci95=_interval(est.ci95, (lo, hi)), delta=delta
        )
    limits = {}
    for fid in {info.flow for info in metrics}:
        seen = Counter(
            str(obs.diagnosis[fid]["limit"])
            for obs in p.observations
            if isinstance(obs.diagnosis.get(fid), dict) and "limit" in obs.diagnosis[fid]
        )
        if seen:
            limit, count = seen.most_common(1)[0]
            limits[fid] = LimitCount(
                limit=limit, count=count, of=sum(seen.values()), counts=dict(seen)
            )
    return PointRow(
        index=p.index,
        parameters=p.parameters,
        is_baseline=p.is_baseline,
        runs=p.runs,
        succeeded=len(p.observations),
        run_ids=p.run_ids,
        metrics=cells,
        limits=limits,
    )


def _effects(info: MetricInfo, des: stats.Design, eff: stats.Effects) -> EffectsOut:
    return EffectsOut(
        flow=info.flow,
        metric=info.metric,
        basis=eff.basis,
        factors=[
            FactorShare(factor=f.name, paths=f.paths, share=s)
            for f, s in zip(des.factors, eff.shares, strict=True)
        ],
        interaction_share=eff.interaction,
        within_share=eff.within,
        note=eff.note,
    )
