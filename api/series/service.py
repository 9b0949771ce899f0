"""Series: decode the stored arrays, cut the time window, downsample for a chart."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy.orm import Session

from api import csv_text
from api.exceptions import Conflict, NotFound, Unprocessable, field_error
from api.runs import service as runs
from api.series import downsample
from store.codec import decode
from store.models import Run, RunStatus
from store.results import ResultRepository

Array = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Window:
    key: str
    unit: str
    length: int
    t: Array
    v: Array
    downsampled: bool
    method: str = "none"


#: Runs whose series are shown: a running run's as far as its last snapshot goes (the
#: worker's, see worker.runner.Snapshots), a succeeded run's final ones. Queued runs have
#: none yet; a failed or cancelled run's snapshots are deleted when it ends.
READABLE = (RunStatus.running, RunStatus.succeeded)


@dataclass(frozen=True, slots=True)
class Readable:
    """A run whose series can be read, and, while it runs, how far its stored ones go
    (`version`: their points and latest time; None once the run has succeeded)."""

    run: Run
    version: tuple[int, float] | None

    @property
    def partial(self) -> bool:
        return self.version is not None


def readable_run(session: Session, run_id: uuid.UUID, *, tenant_id: uuid.UUID) -> Readable:
    """The tenant's running or succeeded run. A succeeded run's series may be its cache
    source's, which the per-tenant cache guarantees is the same tenant's."""
    run = runs.get(session, run_id, tenant_id=tenant_id)
    if run.status not in READABLE:
        raise Conflict(
            f"run {run_id} is {run.status.value}; series exist while it runs and once it "
            "has succeeded",
            status_value=run.status.value,
        )
    if run.status is RunStatus.running:
        return Readable(run, ResultRepository(session).series_version(run.id))
    return Readable(run, None)


def stored_version(session: Session, run_id: uuid.UUID) -> tuple[int, float]:
    """How far a running run's stored series go now (Readable.version, read again)."""
    return ResultRepository(session).series_version(run_id)


def index(session: Session, run: Run) -> list[tuple[Any, ...]]:
    return list(ResultRepository(session).series_index(run.result_run_id))


def load(
    session: Session,
    run: Run,
    keys: Sequence[str],
    *,
    start: float | None,
    end: float | None,
    max_points: int,
    loc: list[str | int],
    agg: str | None = None,
    partial: bool = False,
) -> list[Window]:
    """The series' windows; `agg` None is each key's default (`downsample.default_agg`).
    `partial` (a running run): a key not stored yet is an empty series, not a 404, since
    the next snapshot may bring it."""
    if start is not None and end is not None and start > end:
        raise Unprocessable(
            "start is after end", errors=[field_error(["query", "start"], "must be <= end")]
        )
    # A key holding NUL names no series, and PostgreSQL cannot compare text holding one.
    rows = ResultRepository(session).series(run.result_run_id, [k for k in keys if "\x00" not in k])
    missing = [k for k in keys if k not in rows]
    if missing and not partial:
        raise NotFound(
            f"run {run.id} has no series {', '.join(map(repr, missing))}; GET /v1/runs/{run.id}/series lists them",
            errors=[field_error(loc, f"unknown series key {k!r}", "not_found") for k in missing],
        )
    return [
        Window(k, "", 0, np.empty(0), np.empty(0), downsampled=False)
        if k not in rows
        else _window(
            rows[k].key,
            rows[k].unit,
            decode(rows[k].t, rows[k].codec),
            decode(rows[k].v, rows[k].codec),
            start,
            end,
            max_points,
            agg if agg is not None else downsample.default_agg(k),
        )
        for k in keys
    ]


def _window(
    key: str,
    unit: str,
    t: Array,
    v: Array,
    start: float | None,
    end: float | None,
    max_points: int,
    agg: str | None,
) -> Window:
    lo = 0 if start is None else int(np.searchsorted(t, start, side="left"))
    hi = len(t) if end is None else int(np.searchsorted(t, end, side="right"))
    n = hi - lo
    if not downsample.is_rate(key):
        t, v = _held(t, v, lo, hi, start, end)
    else:
        t, v = t[lo:hi], v[lo:hi]
    if len(t) <= max_points:
        return Window(key, unit, n, t, v, downsampled=False)
    t, v = downsample.downsample(key, t, v, max_points, agg)
    return Window(key, unit, n, t, v, downsampled=True, method=downsample.method(key, agg))


def _held(
    t: Array, v: Array, lo: int, hi: int, start: float | None, end: float | None
) -> tuple[Array, Array]:
    """A step series' points in [start, end], bounded by the values it holds there: a
    change before `start` holds at `start`, and the value the window ends on holds to
    `end` when the series changes again after it. A zoom into a stretch without a change
    then draws the held value (a window of recorded points alone would be empty)."""
    ts, vs = [t[lo:hi]], [v[lo:hi]]
    if start is not None and lo > 0 and (lo == len(t) or t[lo] > start):
        ts.insert(0, np.array([start]))
        vs.insert(0, v[lo - 1 : lo])
    if end is not None and 0 < hi < len(t) and t[hi - 1] < end:
        ts.append(np.array([end]))
        vs.append(v[hi - 1 : hi])
    if len(ts) == 1:
        return ts[0], vs[0]
    return np.concatenate(ts), np.concatenate(vs)


def frame(windows: Sequence[Window], shape: str) -> dict[str, np.ndarray | list]:
    """Columns of the wide or long frame (see ``SeriesFrame``)."""
    if shape == "long":
        return {
            "t": np.concatenate([w.t for w in windows]) if windows else np.empty(0),
            "key": [w.key for w in windows for _ in range(len(w.t))],
            "value": np.concatenate([w.v for w in windows]) if windows else np.empty(0),
        }
    t = np.unique(np.concatenate([w.t for w in windows])) if windows else np.empty(0)
    columns: dict[str, np.ndarray | list] = {"t": t}
    for w in windows:
        at = np.searchsorted(w.t, t, side="right") - 1
        col = w.v[np.clip(at, 0, None)] if len(w.t) else np.full(len(t), np.nan)
        col = np.where(at >= 0, col, np.nan)
        columns[w.key] = col
    return columns


def to_csv(columns: dict[str, np.ndarray | list]) -> str:
    """Columns of equal length as CSV: a header of their names, a line per index."""
    cols = [c.tolist() if isinstance(c, np.ndarray) else c for c in columns.values()]
    return csv_text.write(list(columns), zip(*cols, strict=True))
