"""Sending committed runs (and workflows' first steps) to the workers from the event loop.

kombu's publish blocks (and retries for seconds when the broker is away), so sends run in
threads of their own, under a small limiter of their own that nothing on the read path
shares. A broker that refuses leaves the rest queued and unsent: the reconciler sends runs
that were never sent.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence

import anyio
from celery import Celery
from sqlalchemy.orm import Session

from api.db import Db
from messaging import send_advance, send_runs
from store.runs import RunRepository

log = logging.getLogger(__name__)

#: Threads that may be publishing at once (each holds a broker connection from kombu's pool).
SENDERS = anyio.CapacityLimiter(4)


def _mark(session: Session, run_ids: list[uuid.UUID]) -> None:
    RunRepository(session).mark_enqueued_many(run_ids)
    session.commit()


def _unmark(session: Session, run_ids: list[uuid.UUID]) -> None:
    RunRepository(session).mark_unsent(run_ids)
    session.commit()


async def enqueue(db: Db, celery: Celery, run_ids: Sequence[uuid.UUID]) -> None:
    """Send runs whose rows are committed, in this order. Each is recorded as enqueued just
    before it is handed over (a worker may claim it the moment the broker has it, and its
    history must read queued, enqueued, started); those the broker refuses are recorded
    `unsent` and left to the reconciler. Should that record fail too, the reconciler still
    sends them once their lease shows no worker took them."""
    if not run_ids:
        return
    ids = list(run_ids)
    await db(_mark, ids)
    sent = await anyio.to_thread.run_sync(send_runs, celery, ids, limiter=SENDERS)
    if len(sent) < len(ids):
        await db(_unmark, ids[len(sent) :])


async def wake(celery: Celery, workflow_id: uuid.UUID) -> None:
    """Ask a worker for a committed workflow's first step. A broker that refuses is logged:
    the reconciler sends a step to a workflow that stays quiet (``workflow_lease``)."""
    try:
        await anyio.to_thread.run_sync(send_advance, celery, workflow_id, limiter=SENDERS)
    except Exception:
        log.warning("could not wake workflow %s; the reconciler will", workflow_id, exc_info=True)
