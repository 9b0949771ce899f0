"""Comparing any runs: grouped by scenario (runs of one scenario with different seeds are
its replications), their differences found in the scenarios themselves, then the same
comparison as a sweep's; and one series of several runs on a common time axis."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from api.compare import report, stats
from api.compare.points import Observation, PointData
from api.compare.schemas import RunComparison
from api.exceptions import Conflict, Unprocessable, field_error, found
from api.series import axis, downsample
from api.series import service as series
from engine.study import NOT_SIMULATED, flatten
from store.models import Run, RunStatus
from store.results import ResultRepository
from store.runs import RunRepository
from store.sweeps import SweepRepository

MAX_RUNS = 200
#: More differing paths than this and two scenarios are not variations of one another.
MAX_NAMED_PATHS = 8
MAX_LISTED_PATHS = 50


def parse_runs(raw: str, *, loc: list[str | int], limit: int = MAX_RUNS) -> list[uuid.UUID]:
    """`a,b,c` as run ids, in order, repeats dropped; a 422 naming the bad entry."""
    parts = [p.strip() for p in raw.split(",")]
    if not any(parts):
        raise Unprocessable(
            "no run ids given", errors=[field_error(loc, "give run ids, comma-separated")]
        )
    ids: list[uuid.UUID] = []
    for i, part in enumerate(parts):
        try:
            run_id = uuid.UUID(part)
        except ValueError:
            raise Unprocessable(
                f"runs: entry {i} ({part[:40]!r}) is not a run id",
                errors=[field_error([*loc, i], f"not a UUID: {part[:40]!r}", "uuid_parsing")],
            ) from None
        if run_id not in ids:
            ids.append(run_id)
    if len(ids) > limit:
        raise Unprocessable(
            f"at most {limit} runs can be compared, got {len(ids)}",
            errors=[field_error(loc, f"at most {limit} runs")],
        )
    return ids


def succeeded_runs(session: Session, ids: list[uuid.UUID], *, tenant_id: uuid.UUID) -> list[Run]:
    repo = RunRepository(session)
    runs = []
    for run_id in ids:
        run = found(repo.owned(run_id, tenant_id=tenant_id), "run", run_id)
        if run.status is not RunStatus.succeeded:
            raise Conflict(
                f"run {run_id} is {run.status.value}; runs are compared once they have succeeded",
                status_value=run.status.value,
            )
        runs.append(run)
    return runs


def compare(session: Session, runs: list[Run], *, baseline: uuid.UUID | None) -> RunComparison:
    run_ids = [r.id for r in runs]
    if baseline is not None and baseline not in run_ids:
        raise Unprocessable(
            "the baseline must be one of the compared runs",
            errors=[field_error(["query", "baseline"], "not in `runs`")],
        )
    base_id = baseline or run_ids[0]
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(run.scenario_hash, []).append(run)
    flat = [flatten(g[0].scenario, skip=NOT_SIMULATED) for g in groups.values()]
    paths = list(dict.fromkeys(p for f in flat for p in f))
    varied = [p for p in paths if len({stats.level_key(f.get(p)) for f in flat}) > 1]
    # Scenarios with different parts (ids of nodes, links, flows) or many differences are
    # not variations of one another: compare them as wholes, by name, and say so.
    shapes = {frozenset(f) for f in flat}
    apart = len(shapes) > 1 or len(varied) > MAX_NAMED_PATHS
    labels = _labels([g[0] for g in groups.values()])
    note = _apart_note(labels, varied, len(shapes) > 1) if apart else None
    results = SweepRepository(session).results(r.result_run_id for r in runs)
    points = []
    for i, (group, f) in enumerate(zip(groups.values(), flat, strict=True)):
        point = PointData(
            index=i,
            parameters={"scenario": labels[i]} if apart else {p: f.get(p) for p in varied},
            is_baseline=any(r.id == base_id for r in group),
            runs=len(group),
            run_ids=[r.id for r in group],
        )
        for r in group:
            res = results.get(r.result_run_id)
            if res is not None:
                point.observations.append(
                    Observation(r.id, r.source_run_id, r.seed, res.flows, res.diagnosis)
                )
        points.append(point)
    comparison = report.build(points, ["scenario"] if apart else varied, partial_note=note)
    return RunComparison(
        **dict(comparison),
        runs=run_ids,
        baseline=base_id,
        scenarios_differ=apart,
        differing_paths=varied[:MAX_LISTED_PATHS],
        differing_path_count=len(varied),
    )


def _labels(runs: list[Run]) -> list[str]:
    """Each scenario's name; with its hash's start where two differ under one name."""
    names = [r.scenario_name or "scenario" for r in runs]
    return [
        n if names.count(n) == 1 else f"{n} ({r.scenario_hash.removeprefix('sha256:')[:8]})"
        for n, r in zip(names, runs, strict=True)
    ]


def _apart_note(labels: list[str], varied: list[str], shapes_differ: bool) -> str:
    shown = ", ".join(varied[:3]) + (f" and {len(varied) - 3} more" if len(varied) > 3 else "")
    why = (
        "they have different nodes, links or flows"
        if shapes_differ
        else f"they differ in {len(varied)} settings ({shown})"
    )
    return (
        f"These runs are of {len(labels)} different scenarios ({', '.join(labels[:6])}"
        f"{' …' if len(labels) > 6 else ''}): {why}, so they are compared as wholes, one "
        "point per scenario, and no setting is credited with the difference."
    )


def common_series(
    session: Session,
    runs: list[Run],
    *,
    key: str,
    max_points: int,
    start: float | None,
    end: float | None,
    agg: str | None = None,
    time_axis: axis.Axis = "sim",
) -> dict[str, Any]:
    """One series of several runs on one time axis (`time_axis`; `start` and `end` on it):
    with `epoch_ms` each run's simulated time is laid from the moment it started, so runs
    that ran one after the other sit side by side. With `agg` (a rate series' default:
    `mean`), every run is aggregated over the same equal-width time buckets; otherwise each
    run is downsampled with MinMaxLTTB and the runs are step-held onto the union of times."""
    agg = agg if agg is not None else downsample.default_agg(key)
    span = _Span(start, end, time_axis)
    if agg is not None:
        return _bucketed_series(session, runs, key=key, max_points=max_points, span=span, agg=agg)
    per_run = (max_points - len(runs)) // len(runs)
    if per_run < 3:
        raise Unprocessable(
            f"max_points {max_points} is too few for {len(runs)} runs",
            errors=[field_error(["query", "max_points"], f"must be at least {4 * len(runs)}")],
        )
    results = ResultRepository(session)
    loaded = [_load(session, results, run, key, span, per_run, None) for run in runs]
    windows = [_held(c) for c in loaded]
    columns = series.frame(windows, "wide")
    grid = np.asarray(columns["t"])
    for w, c in zip(windows, loaded, strict=True):
        col = np.asarray(columns[w.key], dtype=float)
        col[grid > c.until] = np.nan  # the run was over
        columns[w.key] = col
    return {
        "key": key,
        "unit": windows[0].unit if windows else "",
        "runs": [c.meta(len(w.t)) for w, c in zip(windows, loaded, strict=True)],
        "points": len(grid),
        "agg": None,
        "method": "each run downsampled with MinMaxLTTB to its share of max_points and held "
        "at its last value until the run's end; then every run step-held (last value at or "
        "before t) onto the union of their times; null before a run's first sample and after "
        "its end",
        "columns": columns,
    }


@dataclass(frozen=True, slots=True)
class _Span:
    """The window asked for, on the answer's time axis."""

    start: float | None
    end: float | None
    axis: axis.Axis


@dataclass(frozen=True, slots=True)
class _Column:
    """One run's window of the series with its times on the answer's axis, where its column
    ends on that axis (`until`: its simulated end, cut at the window's end) and in simulated
    seconds (`sim_end`), and its last sample's simulated time (`sim_last`)."""

    run: Run
    w: series.Window
    until: float
    sim_end: float
    sim_last: float

    def meta(self, points: int, sim_end: float | None = None) -> dict[str, Any]:
        """What the answer says of this run."""
        return {
            "id": self.run.id,
            "unit": self.w.unit,
            "sim_time": self.sim_end if sim_end is None else sim_end,
            "length": self.w.length,
            "points": points,
            "downsampled": self.w.downsampled,
        }


def _held(c: _Column) -> series.Window:
    """One run's downsampled window, held at its last value until the run's end, under the
    run's id."""
    t, v = c.w.t, c.w.v
    # A change-driven series stops at its last change: it still holds until the run ends.
    if len(t) and t[-1] < c.until:
        t, v = np.append(t, c.until), np.append(v, v[-1])
    return series.Window(str(c.run.id), c.w.unit, c.w.length, t, v, c.w.downsampled)


def _load(
    session: Session,
    results: ResultRepository,
    run: Run,
    key: str,
    span: _Span,
    max_points: int,
    agg: str | None,
) -> _Column:
    """One run's window of the series, read in simulated seconds and answered on the span's
    axis; its column ends at the run's simulated end (its last sample's time if the result
    is gone), cut at the window's end."""
    origin = axis.origin_ms(run, span.axis)
    start, end = axis.sim_window(span.start, span.end, origin)
    (w,) = series.load(
        session,
        run,
        [key],
        start=start,
        end=end,
        max_points=max_points,
        loc=["query", "key"],
        agg=agg,
    )
    result = results.get(run.result_run_id)
    until = result.sim_time if result is not None else (float(w.t[-1]) if len(w.t) else 0.0)
    if end is not None:
        until = min(until, end)
    last = float(w.t[-1]) if len(w.t) else 0.0
    on_axis = replace(w, t=axis.on_axis(w.t, origin))
    return _Column(run, on_axis, float(axis.on_axis(until, origin)), until, last)


def _bucket_column(
    w: series.Window, edges: np.ndarray, a: float, b: float, *, rate: bool, agg: str
) -> np.ndarray:
    """One run's column over the buckets `edges`; the run covers [a, b]."""
    if not len(w.t):
        return np.full(len(edges) - 1, np.nan)
    if rate:
        return downsample.rate_buckets(w.t, w.v, edges, agg)
    # Held at its last value until the run's end; nothing outside [first sample, end].
    t, v = w.t, w.v
    if t[-1] < b:
        t, v = np.append(t, b), np.append(v, v[-1])
    col = downsample.step_buckets(t, v, edges, agg)
    return np.where((edges[1:] > a) & (edges[:-1] < b), col, np.nan)


def _bucketed_series(
    session: Session,
    runs: list[Run],
    *,
    key: str,
    max_points: int,
    span: _Span,
    agg: str,
) -> dict[str, Any]:
    rate = downsample.is_rate(key)
    results = ResultRepository(session)
    loaded = []
    for run in runs:
        c = _load(session, results, run, key, span, 2**62, agg)
        t = c.w.t
        if rate:
            lo, hi = downsample.rate_cover(t), float(t[-1]) if len(t) else 0.0
        else:
            lo, hi = (float(t[0]) if len(t) else c.until), c.until
        loaded.append((c, lo, hi))
    lo = min((x[1] for x in loaded), default=0.0)
    hi = max((x[2] for x in loaded), default=0.0)
    edges = np.linspace(lo, hi, max_points + 1)
    grid = edges[1:] if rate else edges[:-1]
    columns: dict[str, Any] = {"t": grid}
    info = []
    for c, a, b in loaded:
        col = _bucket_column(c.w, edges, a, b, rate=rate, agg=agg)
        columns[str(c.run.id)] = col
        # A rate's column ends at its last sample; a step series' at the run's end.
        sim_end = max(c.sim_last, 0.0) if rate else c.sim_end
        info.append(c.meta(int(np.count_nonzero(~np.isnan(col))), sim_end))
        info[-1]["downsampled"] = c.w.length > len(grid)
    where = "end" if rate else "start"
    return {
        "key": key,
        "unit": loaded[0][0].w.unit if loaded else "",
        "runs": info,
        "points": len(grid),
        "agg": agg,
        "method": f"every run aggregated ({agg}) over the same {len(grid)} equal-width time "
        f"buckets, each row at its bucket's {where}"
        + (
            "; a rate's mean is time-weighted (its integral is kept)"
            if rate and agg == "mean"
            else ""
        )
        + "; null where a run does not cover the bucket",
        "columns": columns,
    }
