"""Multi-run workflows (advice, remedy checks) and the runs they made: the row lock each step
takes, the finished runs a workflow has not been told about, the links that make a
candidate's run once, counts and cancel over the workflow's runs, and the workflows a
finished run (or the reconciler) should wake."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, func, select, update
from sqlalchemy.orm import defer

from store import run_groups
from store.models import Run, RunResult, RunStatus, StoredWorkflow, WorkflowRun, WorkflowStatus
from store.repository import Page, Repository, decode_cursor, encode_cursor
from store.run_groups import Progress
from store.types import utcnow

ACTIVE_RUN = (RunStatus.queued, RunStatus.running)
ACTIVE_WORKFLOW = (WorkflowStatus.queued, WorkflowStatus.running)


@dataclass(frozen=True, slots=True)
class Outcome:
    """A finished run of a workflow that the workflow has not observed yet."""

    link: WorkflowRun
    status: RunStatus
    result: RunResult | None  # when it succeeded: its result (its cache source's for a hit)


def summary_of(result: RunResult) -> dict[str, Any]:
    """The ``Result.summary()`` (everything but the series) a stored result holds: its
    columns and the fields kept in `extra` (``worker.runner`` splits them so)."""
    return {
        "engine_version": result.engine_version,
        "scenario_hash": result.scenario_hash,
        "seed": result.seed,
        "sim_time": result.sim_time,
        "wall_time": result.wall_time,
        "events": result.events,
        "warnings": result.warnings,
        "flows": result.flows,
        "links": result.links,
        "pvcs": result.pvcs,
        "diagnosis": result.diagnosis,
        "cancelled": False,  # a stored result is a succeeded run's
        **(result.extra or {}),
    }


class WorkflowRepository(Repository[StoredWorkflow]):
    model = StoredWorkflow

    def create(self, **fields: Any) -> StoredWorkflow:
        return self.insert(StoredWorkflow(**fields))

    def by_idempotency_key(self, key: str, *, tenant_id: uuid.UUID) -> StoredWorkflow | None:
        stmt = select(StoredWorkflow).where(
            StoredWorkflow.tenant_id == tenant_id, StoredWorkflow.idempotency_key == key
        )
        return self.session.scalars(stmt).first()

    def list(
        self, *, tenant_id: uuid.UUID, kind: str | None, cursor: str | None, limit: int
    ) -> Page[StoredWorkflow]:
        stmt = (
            self.select()
            .options(
                defer(StoredWorkflow.scenario),
                defer(StoredWorkflow.state),
                defer(StoredWorkflow.curves),
            )
            .where(StoredWorkflow.tenant_id == tenant_id)
        )
        if kind is not None:
            stmt = stmt.where(StoredWorkflow.kind == kind)
        return self.page(stmt, cursor=cursor, limit=limit)

    def latest_for_run(self, run_id: uuid.UUID, *, kind: str) -> StoredWorkflow | None:
        """The newest workflow of `kind` asked about this run (a run's remedy check)."""
        stmt = (
            select(StoredWorkflow)
            .where(StoredWorkflow.base_run_id == run_id, StoredWorkflow.kind == kind)
            .order_by(StoredWorkflow.id.desc())
            .limit(1)
        )
        return self.session.scalars(stmt).first()

    # -- one step ----------------------------------------------------------------------

    def lock(self, workflow_id: uuid.UUID) -> StoredWorkflow | None:
        """The workflow, held until the transaction ends: a write to its row (the step
        count) takes the row lock in PostgreSQL and the write lock in SQLite, so two steps
        of one workflow (a redelivered message, two runs ending at once) run one after
        the other, the second seeing what the first committed."""
        self.session.execute(
            update(StoredWorkflow)
            .where(StoredWorkflow.id == workflow_id)
            .values(steps=StoredWorkflow.steps + 1)
            .execution_options(synchronize_session=False)
        )
        return self.session.get(StoredWorkflow, workflow_id, populate_existing=True)

    def to_observe(self, workflow_id: uuid.UUID) -> Sequence[Outcome]:
        """Its finished runs not observed yet, in the order they were made, with the
        result of those that succeeded."""
        stmt = (
            select(WorkflowRun, Run.status, RunResult)
            .join(Run, Run.id == WorkflowRun.run_id)
            .outerjoin(RunResult, RunResult.run_id == func.coalesce(Run.source_run_id, Run.id))
            .where(
                WorkflowRun.workflow_id == workflow_id,
                WorkflowRun.observed.is_(False),
                Run.status.not_in(ACTIVE_RUN),
            )
            .order_by(Run.id)
        )
        return [
            Outcome(link, status, result if status is RunStatus.succeeded else None)
            for link, status, result in self.session.execute(stmt).all()
        ]

    def links(self, workflow_id: uuid.UUID) -> set[tuple[str, int]]:
        """The (candidate key, seed) pairs it has made runs for."""
        stmt = select(WorkflowRun.key, WorkflowRun.seed).where(
            WorkflowRun.workflow_id == workflow_id
        )
        return {(key, seed) for key, seed in self.session.execute(stmt).all()}

    def add_links(self, links: Sequence[WorkflowRun]) -> None:
        self.session.add_all(links)
        self.session.flush()

    # -- its runs ----------------------------------------------------------------------

    @staticmethod
    def members(workflow_id: uuid.UUID) -> ColumnElement[bool]:
        """The condition on ``Run`` that selects this workflow's runs."""
        return Run.id.in_(select(WorkflowRun.run_id).where(WorkflowRun.workflow_id == workflow_id))

    def progress(self, workflow_id: uuid.UUID) -> Progress:
        return run_groups.progress(self.session, self.members(workflow_id))

    def unobserved_runs(self, workflow_id: uuid.UUID) -> int:
        """Its runs it has not observed yet: queued, running, or finished since the step
        that is looking read its outcomes (another step will observe them)."""
        stmt = select(func.count()).where(
            WorkflowRun.workflow_id == workflow_id, WorkflowRun.observed.is_(False)
        )
        return int(self.session.scalar(stmt) or 0)

    def active_runs(self, workflow_id: uuid.UUID) -> int:
        """Its runs queued or running."""
        stmt = select(func.count()).where(self.members(workflow_id), Run.status.in_(ACTIVE_RUN))
        return int(self.session.scalar(stmt) or 0)

    def run_page(
        self,
        workflow_id: uuid.UUID,
        *,
        cursor: str | None,
        limit: int,
        status: RunStatus | None = None,
    ) -> Page[Any]:
        """Its runs in the order they were made, each with the candidate it answers."""
        stmt = (
            select(WorkflowRun, Run)
            .join(Run, Run.id == WorkflowRun.run_id)
            .options(defer(Run.scenario))
            .where(WorkflowRun.workflow_id == workflow_id)
        )
        if status is not None:
            stmt = stmt.where(Run.status == status)
        if cursor is not None:
            stmt = stmt.where(Run.id > decode_cursor(cursor))
        rows = self.session.execute(stmt.order_by(Run.id).limit(limit + 1)).all()
        items = [(link, run) for link, run in rows[:limit]]
        more = len(rows) > limit
        return Page(items=items, next_cursor=encode_cursor(items[-1][1].id) if more else None)

    def cancel(self, workflow_id: uuid.UUID, *, what: str) -> bool:
        """Cancel it and its runs (queued ones at once, running ones at their next
        heartbeat). False when it had finished already: nothing changes then."""
        ended = self.session.execute(
            update(StoredWorkflow)
            .where(StoredWorkflow.id == workflow_id, StoredWorkflow.status.in_(ACTIVE_WORKFLOW))
            .values(
                status=WorkflowStatus.cancelled,
                cancel_requested=True,
                finished_at=utcnow(),
                updated_at=utcnow(),
            )
            .returning(StoredWorkflow.id)
            .execution_options(synchronize_session=False)
        ).first()
        if ended is None:
            return False
        run_groups.cancel(self.session, self.members(workflow_id), what=what)
        return True

    # -- who to wake -------------------------------------------------------------------

    def waiting_on(self, run_id: uuid.UUID) -> Sequence[uuid.UUID]:
        """The unfinished workflows this run was made for (one, in practice)."""
        stmt = (
            select(WorkflowRun.workflow_id)
            .join(StoredWorkflow, StoredWorkflow.id == WorkflowRun.workflow_id)
            .where(WorkflowRun.run_id == run_id, StoredWorkflow.status.in_(ACTIVE_WORKFLOW))
        )
        return self.session.scalars(stmt).all()

    def stalled(self, *, quiet_for: float, limit: int = 100) -> Sequence[uuid.UUID]:
        """Unfinished workflows untouched for `quiet_for` seconds with no run queued or
        running: a step's message was lost (or a run ended without its worker saying so,
        failed by the reconciler, say). Another step is harmless, so they are sent one."""
        busy = exists().where(
            WorkflowRun.workflow_id == StoredWorkflow.id,
            Run.id == WorkflowRun.run_id,
            Run.status.in_(ACTIVE_RUN),
        )
        stmt = (
            select(StoredWorkflow.id)
            .where(
                and_(
                    StoredWorkflow.status.in_(ACTIVE_WORKFLOW),
                    StoredWorkflow.updated_at < utcnow() - timedelta(seconds=quiet_for),
                    ~busy,
                )
            )
            .order_by(StoredWorkflow.id)
            .limit(limit)
        )
        return self.session.scalars(stmt).all()
