"""A group of runs made together (a sweep's, a workflow's): their counts by status, the
progress of those running, and cancelling them all at once. The group is a condition on
``Run`` (``Run.sweep_id == id``, or membership in a workflow's links), so sweeps and
workflows count and cancel their runs the same way."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, func, select, update
from sqlalchemy.orm import Session

from store.models import Run, RunStatus
from store.run_events import EventKind, RunEventRepository
from store.types import utcnow


@dataclass(frozen=True, slots=True)
class Progress:
    """What a group's status and its time-left estimate are computed from."""

    counts: dict[RunStatus, int]
    cache_hits: int
    running_progress: float  # sum of the running runs' progress fractions
    simulated_done: int  # runs finished by a worker (not served from the cache)
    first_started_at: datetime | None
    last_finished_at: datetime | None
    #: Mean seconds from start to finish of the runs a worker simulated to success
    #: (load, simulate, store): what a run still to go will take.
    mean_run_seconds: float | None = None

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def finished(self) -> int:
        return sum(n for s, n in self.counts.items() if s.finished)


def progress(session: Session, members: ColumnElement[bool]) -> Progress:
    """The counts of the runs `members` selects, in one statement grouped by status and
    cache hit: a running sweep's poll reads them every time, and each statement cost the
    API about a millisecond of its own CPU (compiling, executing, reading the rows)."""
    stmt = select(*columns(session)).where(members).group_by(Run.status, Run.cache_hit)
    return fold(session.connection().execute(stmt))


def columns(session: Session) -> tuple[Any, ...]:
    """What `fold` reads of each (status, cache hit) group of runs, in its order."""
    took: ColumnElement[Any]
    if session.get_bind().dialect.name == "postgresql":
        took = func.extract("epoch", Run.finished_at - Run.started_at)
    else:  # SQLite: days between Julian dates
        took = (func.julianday(Run.finished_at) - func.julianday(Run.started_at)) * 86400.0
    return (
        Run.status,
        Run.cache_hit,
        func.count(Run.id),
        func.sum(Run.progress),
        func.min(Run.started_at),
        func.max(Run.finished_at),
        func.avg(took).filter(Run.started_at.is_not(None)),
    )


def fold(rows: Iterable[Sequence[Any]]) -> Progress:
    """A group's Progress from its rows of `columns` (a row without a status, from an
    outer join, counts nothing). The first start and last finish are over the runs a
    worker simulated (not cache hits), the mean run time over those that succeeded (a
    failure may end early)."""
    counts = {s: 0 for s in RunStatus}
    cache_hits = simulated_done = 0
    running_progress = 0.0
    starts: list[datetime] = []
    finishes: list[datetime] = []
    mean: float | None = None
    for status, cache_hit, n, progress_sum, first, last, took_mean in rows:
        if status is None:
            continue
        counts[status] += n
        if status is RunStatus.running:
            running_progress += float(progress_sum or 0.0)
        if cache_hit:
            cache_hits += n
            continue
        if status.finished:
            simulated_done += n
        starts += [first] if first is not None else []
        finishes += [last] if last is not None else []
        if status is RunStatus.succeeded and took_mean is not None:
            mean = float(took_mean)
    return Progress(
        counts,
        cache_hits,
        running_progress,
        simulated_done,
        min(starts, default=None),
        max(finishes, default=None),
        mean,
    )


def cancel(session: Session, members: ColumnElement[bool], *, what: str) -> tuple[int, int]:
    """Cancel the queued runs of the group at once and flag the running ones for their
    worker; `what` names the group in their history ("sweep", "advice"). Returns
    (cancelled, flagged). In this order, a run that starts between the two statements is
    still flagged."""
    cancelled = session.scalars(
        update(Run)
        .where(members, Run.status == RunStatus.queued)
        .values(status=RunStatus.cancelled, cancel_requested=True, finished_at=utcnow())
        .returning(Run.id)
        .execution_options(synchronize_session=False)
    ).all()
    flagged = session.scalars(
        update(Run)
        .where(members, Run.status == RunStatus.running, Run.cancel_requested.is_(False))
        .values(cancel_requested=True)
        .returning(Run.id)
        .execution_options(synchronize_session=False)
    ).all()
    events = RunEventRepository(session)
    events.add_many(cancelled, EventKind.cancelled, reason=f"{what} cancelled while queued")
    events.add_many(flagged, EventKind.cancel_requested, reason=f"{what} cancelled")
    return len(cancelled), len(flagged)
