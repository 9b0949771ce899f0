"""Runs and their status machine: queued → running → succeeded | failed | cancelled.

Every transition is one conditional UPDATE, so two processes racing on a run (a worker
and the reconciler, a redelivered message and the first delivery, a cancel and a finish)
cannot both win.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import and_, or_, select, update
from sqlalchemy.orm import Session

from store.db import BINARY_RESULTS
from store.models import Run, RunResult, RunSeries, RunStatus
from store.repository import Page, Repository
from store.types import utcnow


class RunRepository(Repository[Run]):
    model = Run

    def create(self, **fields: Any) -> Run:
        run = Run(**fields)
        self.session.add(run)
        self.session.flush()
        return run

    def by_idempotency_key(self, key: str) -> Run | None:
        return self.session.scalars(select(Run).where(Run.idempotency_key == key)).first()

    def find_cached(
        self,
        *,
        scenario_hash: str,
        seed: int,
        engine_version: str,
        tenant_id: uuid.UUID | None = None,
    ) -> Run | None:
        """The newest succeeded run that owns a result for this (scenario, seed, engine),
        among the tenant's runs when `tenant_id` is given."""
        stmt = (
            select(Run)
            .where(
                Run.tenant_id == tenant_id if tenant_id is not None else True,
                Run.scenario_hash == scenario_hash,
                Run.seed == seed,
                Run.engine_version == engine_version,
                Run.status == RunStatus.succeeded,
                Run.source_run_id.is_(None),
            )
            .order_by(Run.id.desc())
            .limit(1)
        )
        return self.session.scalars(stmt).first()

    def list(
        self,
        *,
        cursor: str | None,
        limit: int,
        status: RunStatus | None = None,
        scenario_id: uuid.UUID | None = None,
        preset: str | None = None,
    ) -> Page[Run]:
        stmt = self.select()
        if status is not None:
            stmt = stmt.where(Run.status == status)
        if scenario_id is not None:
            stmt = stmt.where(Run.scenario_id == scenario_id)
        if preset is not None:
            stmt = stmt.where(Run.preset == preset)
        return self.page(stmt, cursor=cursor, limit=limit)

    # -- transitions -------------------------------------------------------------------

    def _transition(self, run_id: uuid.UUID, *where: Any, **values: Any) -> bool:
        stmt = update(Run).where(Run.id == run_id, *where).values(**values)
        return self.session.execute(stmt.execution_options(synchronize_session=False)).rowcount == 1

    def mark_enqueued(self, run_id: uuid.UUID) -> None:
        self._transition(run_id, Run.status == RunStatus.queued, enqueued_at=utcnow())

    def claim(self, run_id: uuid.UUID, *, task_id: str, worker: str, lease: float) -> bool:
        """Take a run for this task: queued, or running under this same task (a redelivery
        of its message) or under a worker whose heartbeat is older than the lease."""
        now = utcnow()
        return self._transition(
            run_id,
            or_(
                Run.status == RunStatus.queued,
                and_(
                    Run.status == RunStatus.running,
                    or_(Run.task_id == task_id, Run.heartbeat_at < now - timedelta(seconds=lease)),
                ),
            ),
            status=RunStatus.running,
            task_id=task_id,
            worker=worker,
            attempts=Run.attempts + 1,
            started_at=now,
            heartbeat_at=now,
            progress=0.0,
        )

    def heartbeat(self, run_id: uuid.UUID, *, task_id: str, progress: float) -> bool | None:
        """Record liveness and progress; returns whether a cancel was requested, or None when
        the run is no longer this task's (taken back, or finished elsewhere)."""
        owned = self._transition(
            run_id,
            Run.status == RunStatus.running,
            Run.task_id == task_id,
            heartbeat_at=utcnow(),
            progress=progress,
        )
        if not owned:
            return None
        return bool(self.session.scalar(select(Run.cancel_requested).where(Run.id == run_id)))

    def finish(
        self,
        run_id: uuid.UUID,
        *,
        task_id: str,
        status: RunStatus,
        error: dict[str, Any] | None = None,
    ) -> bool:
        values: dict[str, Any] = {"status": status, "finished_at": utcnow(), "error": error}
        if status is RunStatus.succeeded:
            values["progress"] = 1.0
        return self._transition(
            run_id, Run.status == RunStatus.running, Run.task_id == task_id, **values
        )

    def cancel_queued(self, run_id: uuid.UUID) -> bool:
        return self._transition(
            run_id,
            Run.status == RunStatus.queued,
            status=RunStatus.cancelled,
            cancel_requested=True,
            finished_at=utcnow(),
        )

    def request_cancel(self, run_id: uuid.UUID) -> bool:
        return self._transition(run_id, Run.status == RunStatus.running, cancel_requested=True)

    def fail(self, run_id: uuid.UUID, *, error: dict[str, Any], where: Sequence[Any] = ()) -> bool:
        return self._transition(
            run_id,
            Run.status.in_([RunStatus.queued, RunStatus.running]),
            *where,
            status=RunStatus.failed,
            error=error,
            finished_at=utcnow(),
        )

    # -- reconciliation ----------------------------------------------------------------

    def stale(self, *, run_lease: float, queued_lease: float, limit: int = 100) -> Sequence[Run]:
        """Runs a worker should have but does not: queued and never or long ago sent, or
        running with a heartbeat older than the lease."""
        now = utcnow()
        stmt = (
            select(Run)
            .where(
                or_(
                    and_(
                        Run.status == RunStatus.queued,
                        or_(
                            Run.enqueued_at.is_(None),
                            Run.enqueued_at < now - timedelta(seconds=queued_lease),
                        ),
                        Run.created_at < now - timedelta(seconds=5),
                    ),
                    and_(
                        Run.status == RunStatus.running,
                        Run.heartbeat_at < now - timedelta(seconds=run_lease),
                    ),
                )
            )
            .order_by(Run.id)
            .limit(limit)
        )
        return self.session.scalars(stmt).all()

    def requeue(self, run: Run, *, run_lease: float) -> bool:
        """Put a stale run back in the queue, unless someone moved it meanwhile."""
        guard: list[Any] = [Run.status == run.status]
        if run.status is RunStatus.running:
            guard.append(Run.heartbeat_at < utcnow() - timedelta(seconds=run_lease))
        return self._transition(run.id, *guard, status=RunStatus.queued, enqueued_at=utcnow())


class ResultRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def get(self, run_id: uuid.UUID) -> RunResult | None:
        return self.session.get(RunResult, run_id)

    def add(self, result: RunResult, series: Sequence[RunSeries]) -> None:
        self.session.add(result)
        self.session.add_all(series)
        self.session.flush()

    def series_index(
        self, run_id: uuid.UUID
    ) -> Sequence[tuple[str, str, int, float | None, float | None]]:
        stmt = (
            select(
                RunSeries.key, RunSeries.unit, RunSeries.length, RunSeries.t_start, RunSeries.t_end
            )
            .where(RunSeries.run_id == run_id)
            .order_by(RunSeries.key)
        )
        return [tuple(row) for row in self.session.execute(stmt).all()]  # type: ignore[misc]

    def series(self, run_id: uuid.UUID, keys: Sequence[str]) -> dict[str, RunSeries]:
        stmt = select(RunSeries).where(RunSeries.run_id == run_id, RunSeries.key.in_(keys))
        rows = self.session.scalars(stmt, execution_options={BINARY_RESULTS: True})
        return {row.key: row for row in rows}
