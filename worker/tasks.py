"""Celery tasks: thin, like views. Take an id, delegate, let the decorator hold the policy."""

from __future__ import annotations

import os
import uuid
from functools import cache
from typing import Any

from sqlalchemy.exc import InterfaceError, OperationalError

from messaging import TaskName
from settings import get_settings
from store.db import make_engine, make_sessionmaker
from worker.celery_app import app
from worker.runner import Runner
from worker.workflows.orchestrator import Orchestrator


@cache
def _orchestrator() -> Orchestrator:
    settings = get_settings()
    return Orchestrator(settings, make_sessionmaker(make_engine(settings)), app)


@cache
def _runner() -> Runner:
    orchestrator = _orchestrator()
    return Runner(
        orchestrator.settings,
        sessions=orchestrator.sessions,
        on_finished=orchestrator.run_finished,
    )


#: Every task's policy. Acknowledged when done, given back to the queue when the process
#: running it dies (messaging says why): the database decides who may do what, so a message
#: delivered twice, or redelivered after its worker died, finds nothing new to do. Only a
#: database that is away is worth retrying: before the claim (nothing is lost), or after the
#: runner's own store retries gave up. A failing simulation is not.
DATABASE_DECIDES: dict[str, Any] = dict(
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=2,
    retry_backoff_max=60,
    max_retries=5,
)


@app.task(name=str(TaskName.run_simulation), bind=True, **DATABASE_DECIDES)
def run_simulation(self, run_id: str) -> str | None:
    """Simulate one run; a redelivered or duplicate message for a finished run does nothing."""
    # The pool process, not only the node: one node runs several simulations at once.
    worker = f"{self.request.hostname}:{os.getpid()}"
    status = _runner().run(uuid.UUID(run_id), task_id=self.request.id, worker=worker)
    return None if status is None else str(status)


@app.task(name=str(TaskName.advance_workflow), **DATABASE_DECIDES)
def advance_workflow(workflow_id: str) -> int:
    """Take a workflow's next steps (``worker.workflows``); returns how many did something."""
    return _orchestrator().advance(uuid.UUID(workflow_id))
