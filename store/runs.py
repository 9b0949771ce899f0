"""Runs and their status machine: queued → running → succeeded | failed | cancelled.

Every transition is one conditional UPDATE, so two processes racing on a run (a worker
and the reconciler, a redelivered message and the first delivery, a cancel and a finish)
cannot both win. The runs list and its versions are ``store.run_list``'s.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import (
    ColumnElement,
    and_,
    func,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.orm import defer

from store.models import Run, RunResult, RunStatus, Tenant
from store.repository import Repository, affected
from store.results import ResultRepository
from store.run_events import EventKind, RunEventRepository
from store.types import utcnow


class RunRepository(Repository[Run]):
    model = Run

    @property
    def events(self) -> RunEventRepository:
        return RunEventRepository(self.session)

    def create(self, **fields: Any) -> Run:
        run = self.insert(Run(**fields))
        if fields.get("cache_hit"):
            self.events.add(run.id, EventKind.cache_hit, source_run_id=str(run.source_run_id))
        else:
            self.events.add(run.id, EventKind.queued)
        return run

    def owned_with_result(
        self, run_id: uuid.UUID, *, tenant_id: uuid.UUID
    ) -> tuple[Run, RunResult | None] | None:
        """The tenant's run and the result it shows (its own, or its cache source's), in
        one statement: a read of a run is one round trip to the database, not two. The
        scenario is left unread (it loads on first use): the run's document does not show
        it, and a 1,000-flow scenario is 368 KB of JSON, decoded on every poll of the run."""
        stmt = (
            select(Run, RunResult)
            .options(defer(Run.scenario))
            .outerjoin(RunResult, RunResult.run_id == func.coalesce(Run.source_run_id, Run.id))
            .where(Run.id == run_id, Run.tenant_id == tenant_id)
        )
        row = self.session.execute(stmt).first()
        return None if row is None else (row[0], row[1])

    def lock_tenant(self, tenant_id: uuid.UUID) -> None:
        """Serialise this tenant's submissions until the transaction ends: a no-op write to
        its row takes a row lock in PostgreSQL and the write lock in SQLite, so two
        concurrent submissions cannot both pass the active-runs limit."""
        self.session.execute(update(Tenant).where(Tenant.id == tenant_id).values(name=Tenant.name))

    def active_count(self, *, tenant_id: uuid.UUID) -> int:
        """The tenant's runs queued or running."""
        stmt = select(func.count()).where(
            Run.tenant_id == tenant_id, Run.status.in_((RunStatus.queued, RunStatus.running))
        )
        return int(self.session.scalar(stmt) or 0)

    def by_idempotency_key(self, key: str, *, tenant_id: uuid.UUID) -> Run | None:
        """Keys are the client's, so they are unique per tenant only."""
        stmt = select(Run).where(Run.tenant_id == tenant_id, Run.idempotency_key == key)
        return self.session.scalars(stmt).first()

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
                Run.tenant_id == tenant_id if tenant_id is not None else true(),
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

    # -- transitions -------------------------------------------------------------------

    def _transition(self, run_id: uuid.UUID, *where: Any, **values: Any) -> bool:
        stmt = update(Run).where(Run.id == run_id, *where).values(**values)
        return affected(self.session, stmt.execution_options(synchronize_session=False)) == 1

    def mark_enqueued(self, run_id: uuid.UUID, **detail: Any) -> bool:
        """Its message reached the broker (sent by the API, or again by the reconciler)."""
        sent = self._transition(run_id, Run.status == RunStatus.queued, enqueued_at=utcnow())
        if sent:
            self.events.add(run_id, EventKind.enqueued, **detail)
        return sent

    def mark_unsent(self, run_ids: Sequence[uuid.UUID]) -> None:
        """The broker refused these after `mark_enqueued_many`: queued and never sent again,
        so the reconciler's `never_sent` picks them up."""
        chunk = 500
        for i in range(0, len(run_ids), chunk):
            marked = self.session.scalars(
                update(Run)
                .where(Run.id.in_(run_ids[i : i + chunk]), Run.status == RunStatus.queued)
                .values(enqueued_at=None)
                .returning(Run.id)
                .execution_options(synchronize_session=False)
            ).all()
            self.events.add_many(marked, EventKind.unsent)

    def mark_enqueued_many(self, run_ids: Sequence[uuid.UUID]) -> None:
        """`mark_enqueued` for many runs the API is about to send, in a few statements."""
        chunk = 500
        for i in range(0, len(run_ids), chunk):
            marked = self.session.scalars(
                update(Run)
                .where(Run.id.in_(run_ids[i : i + chunk]), Run.status == RunStatus.queued)
                .values(enqueued_at=utcnow())
                .returning(Run.id)
                .execution_options(synchronize_session=False)
            ).all()
            self.events.add_many(marked, EventKind.enqueued)

    def claim(
        self, run_id: uuid.UUID, *, task_id: str, worker: str, lease: float, max_attempts: int
    ) -> bool:
        """Take a run for this task: queued, or running under this same task (a redelivery
        of its message after its worker died) or under a worker whose heartbeat is older
        than the lease. Taking it from a running worker is recorded as a retry; a run
        already started ``max_attempts`` times is failed instead (its retry budget)."""
        now = utcnow()
        prev = self.session.execute(
            select(Run.status, Run.task_id, Run.worker, Run.attempts).where(Run.id == run_id)
        ).first()
        if prev is None:
            return False
        claimable = or_(
            Run.status == RunStatus.queued,
            and_(
                Run.status == RunStatus.running,
                or_(Run.task_id == task_id, Run.heartbeat_at < now - timedelta(seconds=lease)),
            ),
        )
        # Unchanged since we looked, so what we record below is what we took it from.
        unchanged = [Run.status == prev.status, Run.attempts == prev.attempts]
        if prev.attempts >= max_attempts:
            error = {
                "type": "RetryBudgetExceeded",
                "message": f"started {prev.attempts} times (max_attempts={max_attempts}) and "
                f"the worker running it was lost each time, last {prev.worker}: hard time "
                "limit, out of memory, or a crash in the simulator?",
            }
            self.fail(run_id, error=error, where=[claimable, *unchanged])
            return False
        claimed = self._transition(
            run_id,
            claimable,
            *unchanged,
            status=RunStatus.running,
            task_id=task_id,
            worker=worker,
            attempts=Run.attempts + 1,
            started_at=now,
            heartbeat_at=now,
            progress=0.0,
        )
        if not claimed:
            return False
        if prev.status is RunStatus.running:
            reason = (
                "its message was delivered again while it ran: the worker process running "
                "it was lost (or its task was retried)"
                if prev.task_id == task_id
                else "the worker running it stopped beating for longer than the lease"
            )
            self.events.add(
                run_id, EventKind.retried, attempt=prev.attempts, worker=prev.worker, reason=reason
            )
        self.events.add(run_id, EventKind.started, attempt=prev.attempts + 1, worker=worker)
        return True

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
        **detail: Any,
    ) -> bool:
        """The worker that owns the run ends it; ``detail`` goes to the history."""
        values: dict[str, Any] = {"status": status, "finished_at": utcnow(), "error": error}
        if status is RunStatus.succeeded:
            values["progress"] = 1.0
        done = self._transition(
            run_id, Run.status == RunStatus.running, Run.task_id == task_id, **values
        )
        if done and status is not RunStatus.succeeded:
            self._drop_snapshots(run_id)
        if done:
            attempt, worker = self.session.execute(
                select(Run.attempts, Run.worker).where(Run.id == run_id)
            ).one()
            self.events.add(
                run_id,
                EventKind(status.value),
                attempt=attempt,
                worker=worker,
                error=_brief(error),
                **detail,
            )
        return done

    def cancel_queued(self, run_id: uuid.UUID) -> bool:
        done = self._transition(
            run_id,
            Run.status == RunStatus.queued,
            status=RunStatus.cancelled,
            cancel_requested=True,
            finished_at=utcnow(),
        )
        if done:
            self.events.add(run_id, EventKind.cancelled, reason="cancelled while queued")
            self._drop_snapshots(run_id)  # of an attempt taken back from a lost worker
        return done

    def request_cancel(self, run_id: uuid.UUID) -> bool:
        asked = self._transition(
            run_id,
            Run.status == RunStatus.running,
            Run.cancel_requested.is_(False),
            cancel_requested=True,
        )
        if asked:
            self.events.add(run_id, EventKind.cancel_requested)
        return asked

    def fail(self, run_id: uuid.UUID, *, error: dict[str, Any], where: Sequence[Any] = ()) -> bool:
        """Fail a run no worker will finish (the reconciler's verdict), with its reason."""
        done = self._transition(
            run_id,
            Run.status.in_([RunStatus.queued, RunStatus.running]),
            *where,
            status=RunStatus.failed,
            error=error,
            finished_at=utcnow(),
        )
        if done:
            self.events.add(run_id, EventKind.failed, error=_brief(error))
            self._drop_snapshots(run_id)
        return done

    def _drop_snapshots(self, run_id: uuid.UUID) -> None:
        """A run that ends without succeeding shows no series (`api.series.service.READABLE`):
        the snapshots written while it ran go in the transaction that ends it, whoever ends it
        (its worker, a cancel, the reconciler, a claim past the retry budget)."""
        ResultRepository(self.session).drop_series(run_id)

    # -- reconciliation ----------------------------------------------------------------

    def _oldest(self, *where: ColumnElement[bool], limit: int) -> Sequence[Run]:
        """The first `limit` runs that match, oldest first (ids are UUIDv7), without their
        scenario documents (the reconciler, their one reader, needs their state only)."""
        stmt = select(Run).options(defer(Run.scenario, raiseload=True))
        return self.session.scalars(stmt.where(*where).order_by(Run.id).limit(limit)).all()

    def never_sent(self, *, limit: int = 100) -> Sequence[Run]:
        """Queued runs whose message never reached the broker (down at submit time, or
        taken back by the reconciler and not sent yet). Young ones are left to the API,
        which sends right after its commit."""
        return self._oldest(
            Run.status == RunStatus.queued,
            Run.enqueued_at.is_(None),
            Run.created_at < utcnow() - timedelta(seconds=5),
            limit=limit,
        )

    def unclaimed(self, *, queued_lease: float, limit: int = 100) -> Sequence[Run]:
        """Queued runs sent longer than the lease ago that no worker has taken."""
        return self._oldest(
            Run.status == RunStatus.queued,
            Run.enqueued_at < utcnow() - timedelta(seconds=queued_lease),
            limit=limit,
        )

    def silent(self, *, run_lease: float, limit: int = 100) -> Sequence[Run]:
        """Running runs whose heartbeat is older than the lease: their worker is gone."""
        return self._oldest(
            Run.status == RunStatus.running,
            Run.heartbeat_at < utcnow() - timedelta(seconds=run_lease),
            limit=limit,
        )

    def requeue(self, run: Run, *, reason: str, run_lease: float) -> bool:
        """Put a stale run back in the queue, to be sent again, unless someone moved it
        since the reconciler looked. Its ``enqueued_at`` is cleared until the send works."""
        guard: list[Any] = [Run.status == run.status, Run.attempts == run.attempts]
        if run.status is RunStatus.running:
            guard.append(Run.heartbeat_at < utcnow() - timedelta(seconds=run_lease))
        else:
            guard.append(Run.enqueued_at == run.enqueued_at)
        done = self._transition(run.id, *guard, status=RunStatus.queued, enqueued_at=None)
        if done:
            self.events.add(
                run.id,
                EventKind.requeued,
                attempt=run.attempts,
                worker=run.worker if run.status is RunStatus.running else None,
                reason=reason,
            )
        return done


def _brief(error: dict[str, Any] | None) -> dict[str, Any] | None:
    """An error as the history keeps it: type and message, not the traceback."""
    if not error:
        return None
    return {"type": error.get("type"), "message": error.get("message")}
