"""The reconciler: sends again the runs a worker should have but does not.

Queued runs never sent (the broker was down at submit time) or not picked up within
``queued_lease``, and running runs whose heartbeat is older than ``run_lease`` (their
worker died). A run taken back ``max_attempts`` times fails instead of looping. Every
step is a conditional update, so several API processes can reconcile at once.
"""

from __future__ import annotations

import asyncio
import logging

from celery import Celery
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from store.config import Settings
from store.db import session_scope
from store.dispatch import send_run
from store.models import Run, RunStatus
from store.runs import RunRepository

log = logging.getLogger(__name__)


def reconcile_once(sessions: sessionmaker[Session], celery: Celery, settings: Settings) -> int:
    """One pass; returns how many runs were sent again."""
    sent = 0
    with session_scope(sessions) as session:
        stale = RunRepository(session).stale(
            run_lease=settings.run_lease, queued_lease=settings.queued_lease
        )
    for run in stale:
        with session_scope(sessions) as session:
            runs = RunRepository(session)
            if run.status is RunStatus.running and run.attempts >= settings.max_attempts:
                error = {
                    "type": "WorkerLost",
                    "message": f"no worker finished it in {run.attempts} attempts",
                }
                runs.fail(run.id, error=error, where=[Run.heartbeat_at == run.heartbeat_at])
                log.warning("run %s failed: worker lost %d times", run.id, run.attempts)
                continue
            if not runs.requeue(run, run_lease=settings.run_lease):
                continue
        try:
            send_run(celery, run.id)
            sent += 1
            log.info("run %s (%s) sent again", run.id, run.status.value)
        except Exception:
            log.warning("reconciler could not reach the broker", exc_info=True)
            break
    return sent


async def reconcile_forever(
    sessions: sessionmaker[Session], celery: Celery, settings: Settings
) -> None:
    while True:
        await asyncio.sleep(settings.reconcile_interval)
        try:
            await run_in_threadpool(reconcile_once, sessions, celery, settings)
        except Exception:
            log.warning("reconciler pass failed", exc_info=True)
