"""What a stream reports: a run's or a sweep's state as events with ids that grow strictly
with the state (so the same state always gets the same id, on any connection).

``status`` events are rows of the runs' history (``store.run_events``): for a run, every row
(queued, enqueued, started, ..., succeeded); for a sweep, the row that ended each of its runs.
A row's event id is ``row id * STEP``: the row's own identity, not its position in the list,
so a reconnecting client is sent the rows after its ``Last-Event-ID`` and none twice. After
the last row, ``progress`` (a reading, not a log: the latest is sent) is at
``last row * STEP + 1 + permille`` and ``done`` at ``last row * STEP + DONE``.
"""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.runs import service as runs
from api.runs.endpoints import run_fields
from api.streams.sse import Event
from api.sweeps import service as sweeps
from settings import Settings
from store.models import Run, RunEvent, RunStatus
from store.run_events import EventKind, RunEventRepository

STEP = 10_000
DONE = STEP - 1
ENDINGS = [
    str(k)
    for k in (EventKind.succeeded, EventKind.failed, EventKind.cancelled, EventKind.cache_hit)
]
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
    for row in history:
        status = STATUS_AFTER.get(row.event)  # type: ignore[call-overload]
        out.append(
            Event(
                row.id * STEP,
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
    step = history[-1].id if history else 0
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
    # The row that ended each run (a cache hit is born finished), in the order written.
    ended = session.execute(
        select(
            RunEvent.id,
            RunEvent.at,
            Run.id,
            Run.point_index,
            Run.replication,
            Run.status,
            Run.cache_hit,
        )
        .join(Run, Run.id == RunEvent.run_id)
        .where(Run.sweep_id == sweep.id, RunEvent.event.in_(ENDINGS))
        .order_by(RunEvent.id)
    ).all()
    out: list[Event] = []
    counts = {s.value: 0 for s in RunStatus}
    seen: set[uuid.UUID] = set()
    step = 0
    for row_id, at, run_id, point_index, replication, status, cache_hit in ended:
        if run_id in seen:  # one ending per run
            continue
        seen.add(run_id)
        counts[status.value] += 1
        step = row_id
        done = len(seen)
        # The sweep's status right after this run ended, as GET /v1/sweeps/{id} says it.
        state = "running" if done < sweep.run_count else _final(counts, sweep.run_count)
        out.append(
            Event(
                row_id * STEP,
                "status",
                {
                    "sweep_id": str(sweep.id),
                    "status": state,
                    "finished": done,
                    "run_count": sweep.run_count,
                    "run": {
                        "id": str(run_id),
                        "point_index": point_index,
                        "replication": replication,
                        "status": status.value,
                        "cache_hit": cache_hit,
                        "finished_at": at,
                    },
                },
            )
        )
    out.append(
        Event(
            step * STEP + 1 + _permille(item.progress.fraction),
            "progress",
            {"sweep_id": str(sweep.id), "status": item.status, **item.progress.model_dump()},
        )
    )
    # Finished by the runs' own states, not by counting history rows: a stream ends even
    # over runs older than the history table.
    finished = item.status not in ("queued", "running")
    if finished:
        out.append(Event(step * STEP + DONE, "done", item.model_dump()))
    return out, finished


def _final(counts: dict[str, int], total: int) -> str:
    ok = counts[RunStatus.succeeded.value]
    if ok == total:
        return "succeeded"
    if ok == 0:
        return "failed" if counts[RunStatus.failed.value] else "cancelled"
    return "partial"
