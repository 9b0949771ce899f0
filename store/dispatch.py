"""The message contract between the API and the workers: which queue, which task, one run id.

Both sides build their Celery app here from the same settings, so the API can send a
run without importing the worker (and the simulator behind it).
"""

from __future__ import annotations

import enum
import uuid

from celery import Celery

from store.config import Settings


class TaskName(enum.StrEnum):
    run_simulation = "tcpfr.run_simulation"


def make_celery(settings: Settings, *, name: str = "tcpfr") -> Celery:
    settings.ensure_dirs()
    app = Celery(name, broker=settings.celery_broker_url, set_as_current=False)
    app.conf.update(
        broker_transport_options=settings.celery_transport_options,
        broker_connection_retry_on_startup=True,
        broker_connection_timeout=5,
        task_default_queue=settings.queue,
        task_routes={str(TaskName.run_simulation): {"queue": settings.queue}},
        task_serializer="json",
        accept_content=["json"],
        # The database is the truth about a run; Celery keeps no result anywhere.
        task_ignore_result=True,
        task_store_errors_even_if_ignored=False,
        # A run is acknowledged when it is finished, and handed to another worker when the
        # one running it dies; each worker process takes one run at a time.
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_soft_time_limit=settings.task_soft_time_limit,
        task_time_limit=settings.task_time_limit,
        worker_max_tasks_per_child=200,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        worker_enable_remote_control=settings.broker_url is not None,
        timezone="UTC",
    )
    return app


def send_run(celery: Celery, run_id: uuid.UUID) -> None:
    """Put one run id on the queue. Call only after the run row is committed."""
    celery.send_task(
        str(TaskName.run_simulation),
        args=[str(run_id)],
        retry=True,
        retry_policy={"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5},
    )
