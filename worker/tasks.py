"""Celery tasks: thin, like views. Take an id, delegate, let the decorator hold the policy."""

from __future__ import annotations

import uuid
from functools import cache

from sqlalchemy.exc import OperationalError

from store.config import get_settings
from store.dispatch import TaskName
from worker.celery_app import app
from worker.runner import Runner


@cache
def _runner() -> Runner:
    return Runner(get_settings())


@app.task(
    name=str(TaskName.run_simulation),
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    # Only a database that is briefly away is worth retrying; a failing simulation is not.
    autoretry_for=(OperationalError,),
    retry_backoff=2,
    retry_backoff_max=60,
    max_retries=5,
)
def run_simulation(self, run_id: str) -> str | None:  # type: ignore[no-untyped-def]
    """Simulate one run; a redelivered or duplicate message for a finished run does nothing."""
    status = _runner().run(uuid.UUID(run_id), task_id=self.request.id, worker=self.request.hostname)
    return None if status is None else str(status)
