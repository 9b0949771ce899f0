"""What a stream reports: a run's or a sweep's state as events with ids that grow strictly
with the state (so the same state always gets the same id, on any connection).

An id is ``step * STEP + offset``. For a run, ``step`` is the number of rows in its history
(``store.run_events``: queued, enqueued, started, ... succeeded), each row being one
``status`` event at ``offset`` 0; between two rows, ``progress`` is at ``1 + permille`` and
``done`` at ``DONE``. For a sweep, ``step`` counts its finished runs, each finish being one
``status`` event. History rows and finishes are a log: a reconnecting client is sent every
one after its ``Last-Event-ID``. Progress is a reading, not a log: it sends the latest.
"""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.runs import service as runs
from api.runs.endpoints import run_fields
from api.streams.sse import Event
from api.sweeps import service as sweeps
from store.config import Settings
from store.models import Run, RunStatus
from store.run_events import EventKind, RunEventRepository

STEP = 10_000
DONE = STEP - 1
FINISHED = (RunStatus.succeeded, RunStatus.failed, RunStatus.cancelled)
STATUS_AFTER = {
    EventKind.queued: RunStatus.queued,
    EventKind.enqueued: RunStatus.queued,
    EventKind.requeued: RunStatus.queued,
    EventKind.cache_hit: RunStatus.succeeded,
    EventKind.started: RunStatus.running,
    EventKind.retried: RunStatus.running,
    EventKind.succeeded: RunStatus.succeeded,
    EventKind.failed: RunStatus.failed,
    EventKind.cancelled: RunStatus.cancelled,
}


def _permille(fraction: float) -> int:
    return max(0, min(1000, int(fraction * 1000)))


def run_events(
    session: Session, run_id: uuid.UUID, *, tenant_id: uuid.UUID
) -> tuple[list[Event], bool]:
    run = runs.get(session, run_id, tenant_id=tenant_id)
    history = RunEventRepository(session).history(run.id)
    out: list[Event] = []
    for step, row in enumerate(history, 1):
        status = STATUS_AFTER.get(row.event)  # type: ignore[call-overload]
        out.append(
            Event(
                step * STEP,
                "status",
                {
                    "run_id": str(run.id),
                    "event": row.event,
                    "status": status.value if status else None,
                    "at": row.at,
                    "attempt": row.attempt,
                    "worker": row.worker,
                    "detail": row.detail,
                },
            )
        )
    step = len(history)
    out.append(
        Event(
            step * STEP + 1 + _permille(run.progress),
            "progress",
            {
                "run_id": str(run.id),
                "status": run.status.value,
                "progress": run.progress,
                "attempts": run.attempts,
                "heartbeat_at": run.heartbeat_at,
            },
        )
    )
    finished = run.status.finished
    if finished:
        out.append(Event(step * STEP + DONE, "done", run_fields(run)))
    return out, finished


def sweep_events(
    session: Session, sweep_id: uuid.UUID, *, tenant_id: uuid.UUID, settings: Settings
) -> tuple[list[Event], bool]:
    sweep = sweeps.get(session, sweep_id, tenant_id=tenant_id)
    item = sweeps.item(session, sweep, settings)
    done_runs = session.execute(
        select(Run.id, Run.point_index, Run.replication, Run.status, Run.cache_hit, Run.finished_at)
        .where(Run.sweep_id == sweep.id, Run.status.in_(FINISHED))
        .order_by(Run.finished_at, Run.id)
    ).all()
    out: list[Event] = []
    counts = {s.value: 0 for s in RunStatus}
    counts[RunStatus.queued.value] = sweep.run_count
    for step, row in enumerate(done_runs, 1):
        counts[RunStatus.queued.value] -= 1
        counts[row.status.value] += 1
        # The sweep's status right after this run finished, as GET /v1/sweeps/{id} says it.
        status = "running" if step < sweep.run_count else _final(counts, sweep.run_count)
        out.append(
            Event(
                step * STEP,
                "status",
                {
                    "sweep_id": str(sweep.id),
                    "status": status,
                    "finished": step,
                    "run_count": sweep.run_count,
                    "run": {
                        "id": str(row.id),
                        "point_index": row.point_index,
                        "replication": row.replication,
                        "status": row.status.value,
                        "cache_hit": row.cache_hit,
                        "finished_at": row.finished_at,
                    },
                },
            )
        )
    step = len(done_runs)
    out.append(
        Event(
            step * STEP + 1 + _permille(item["progress"]["fraction"]),
            "progress",
            {"sweep_id": str(sweep.id), "status": item["status"], **item["progress"]},
        )
    )
    finished = step >= sweep.run_count
    if finished:
        out.append(Event(step * STEP + DONE, "done", item))
    return out, finished


def _final(counts: dict[str, int], total: int) -> str:
    ok = counts[RunStatus.succeeded.value]
    if ok == total:
        return "succeeded"
    if ok == 0:
        return "failed" if counts[RunStatus.failed.value] else "cancelled"
    return "partial"
