"""A run's history: what happened to it and when, one ``RunEvent`` row per step.

The run's transitions (``store.runs.RunRepository``) write these in the same transaction as
the status change they describe, so the history never claims a step the row did not take.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from store.models import RunEvent


class EventKind(enum.StrEnum):
    queued = "queued"  # created, waiting for a worker
    cache_hit = "cache_hit"  # created finished, serving another run's result
    enqueued = "enqueued"  # handed to the broker (recorded just before, so it precedes
    # `started`; when the broker refuses, `unsent` follows and the reconciler sends it)
    unsent = "unsent"  # the broker refused its message; the reconciler will send it
    requeued = "requeued"  # the reconciler sent it again (detail.reason says why)
    retried = "retried"  # a worker took it from one that was lost (detail.previous_worker)
    started = "started"  # a worker claimed it (attempt, worker)
    cancel_requested = "cancel_requested"
    succeeded = "succeeded"
    failed = "failed"  # detail.error
    cancelled = "cancelled"


class RunEventRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def add(
        self,
        run_id: uuid.UUID,
        event: EventKind,
        *,
        attempt: int | None = None,
        worker: str | None = None,
        **detail: Any,
    ) -> None:
        """Record one step; flushed with the transaction that made it."""
        self.session.add(
            RunEvent(
                run_id=run_id,
                event=str(event),
                attempt=attempt,
                worker=worker,
                detail={k: v for k, v in detail.items() if v is not None} or None,
            )
        )

    def add_many(self, run_ids: Sequence[uuid.UUID], event: EventKind, **detail: Any) -> None:
        """The same step for many runs at once (a sweep's runs queued, sent or cancelled)."""
        if run_ids:
            rows = [
                {"run_id": run_id, "event": str(event), "detail": detail or None}
                for run_id in run_ids
            ]
            self.session.execute(insert(RunEvent), rows)

    def history(self, run_id: uuid.UUID) -> Sequence[RunEvent]:
        """Oldest first (ids grow with time, timestamps of one transaction may tie)."""
        stmt = select(RunEvent).where(RunEvent.run_id == run_id).order_by(RunEvent.id)
        return self.session.scalars(stmt).all()

    def count(self, run_id: uuid.UUID, event: EventKind) -> int:
        return self.counts([run_id], event).get(run_id, 0)

    def counts(self, run_ids: Sequence[uuid.UUID], event: EventKind) -> dict[uuid.UUID, int]:
        """How many of this event each run has had, in one statement (runs without one are
        left out)."""
        if not run_ids:
            return {}
        stmt = (
            select(RunEvent.run_id, func.count())
            .where(RunEvent.run_id.in_(run_ids), RunEvent.event == str(event))
            .group_by(RunEvent.run_id)
        )
        return {run_id: int(n) for run_id, n in self.session.execute(stmt)}
