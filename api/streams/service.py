"""What a stream reports: a run's, a sweep's or an advice's state as events with ids that grow strictly
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
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from api.advice import present
from api.advice import service as advice
from api.runs import service as runs
from api.runs.present import run_fields
from api.streams.sse import Event
from api.sweeps import present as sweep_present
from api.sweeps import service as sweeps
from settings import Settings
from store.models import Run, RunEvent, RunStatus
from store.run_events import EventKind, RunEventRepository
from store.workflows import WorkflowRepository

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
    item = sweep_present.item(session, sweep, settings)
    out: list[Event] = []
    counts = {s.value: 0 for s in RunStatus}
    step = 0
    for ending in _endings(session, Run.sweep_id == sweep.id):
        counts[ending.status.value] += 1
        step = ending.row_id
        done = sum(counts.values())
        # The sweep's status right after this run ended, as GET /v1/sweeps/{id} says it.
        state = "running" if done < sweep.run_count else _final(counts, sweep.run_count)
        out.append(
            Event(
                ending.row_id * STEP,
                "status",
                {
                    "sweep_id": str(sweep.id),
                    "status": state,
                    "finished": done,
                    "run_count": sweep.run_count,
                    "run": {
                        "id": str(ending.run_id),
                        "point_index": ending.point_index,
                        "replication": ending.replication,
                        "status": ending.status.value,
                        "cache_hit": ending.cache_hit,
                        "finished_at": ending.at,
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


@dataclass(frozen=True, slots=True)
class Ending:
    row_id: int  # of the history row that ended the run
    at: datetime
    run_id: uuid.UUID
    point_index: int | None
    replication: int | None
    status: RunStatus
    cache_hit: bool


def _endings(session: Session, members: ColumnElement[bool]) -> list[Ending]:
    """The row that ended each run of a group (a cache hit is born finished), one per run,
    in the order written."""
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
        .where(members, RunEvent.event.in_(ENDINGS))
        .order_by(RunEvent.id)
    ).all()
    seen: set[uuid.UUID] = set()
    out = []
    for row in ended:
        if row[2] not in seen:
            seen.add(row[2])
            out.append(Ending(*row))
    return out


def advice_events(
    session: Session, advice_id: uuid.UUID, *, tenant_id: uuid.UUID
) -> tuple[list[Event], bool]:
    """An advice's stream: a `status` event as each of its runs ends, `progress`, and `done`
    once the advice has finished (its own status, not its runs': the last step comes after
    the last run)."""
    wf = advice.get(session, advice_id, tenant_id=tenant_id)
    doc = present.item(session, wf)
    out: list[Event] = []
    step = 0
    for finished, ending in enumerate(_endings(session, WorkflowRepository.members(wf.id)), 1):
        step = ending.row_id
        out.append(
            Event(
                ending.row_id * STEP,
                "status",
                {
                    "advice_id": str(wf.id),
                    "status": "running",
                    "finished": finished,
                    "run": {
                        "id": str(ending.run_id),
                        "status": ending.status.value,
                        "cache_hit": ending.cache_hit,
                        "finished_at": ending.at,
                    },
                },
            )
        )
    # A new round (a step) moves the reading on even when no run has ended since the last
    # event; the first steps count in thousands, the fraction in permille.
    reading = min(wf.steps, 8) * 1000 + _permille(doc["progress"]["fraction"])
    out.append(
        Event(
            step * STEP + 1 + reading,
            "progress",
            {"advice_id": str(wf.id), "status": doc["status"], **doc["progress"]},
        )
    )
    if wf.status.finished:
        out.append(Event(step * STEP + DONE, "done", doc))
    return out, wf.status.finished


def _final(counts: dict[str, int], total: int) -> str:
    ok = counts[RunStatus.succeeded.value]
    if ok == total:
        return "succeeded"
    if ok == 0:
        return "failed" if counts[RunStatus.failed.value] else "cancelled"
    return "partial"
