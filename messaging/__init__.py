"""The message contract between the API and the workers: which queue, which task, one id
(a run to simulate, or a workflow to advance).

Both sides build their Celery app here from the same settings, so the API can send a
run without importing the worker (and the simulator behind it).
"""

from __future__ import annotations

import enum
import logging
import uuid
from collections.abc import Sequence

from celery import Celery

from messaging import filesystem  # noqa: F401  (registers the embedded broker's transport)
from settings import Settings

log = logging.getLogger(__name__)


class TaskName(enum.StrEnum):
    run_simulation = "tcpfr.run_simulation"
    advance_workflow = "tcpfr.advance_workflow"


def make_celery(settings: Settings, *, name: str = "tcpfr") -> Celery:
    settings.ensure_dirs()
    app = Celery(name, broker=settings.celery_broker_url, set_as_current=False)
    app.conf.update(
        broker_transport_options=settings.celery_transport_options,
        broker_connection_retry_on_startup=True,
        broker_connection_timeout=5,
        task_default_queue=settings.queue,
        task_routes={str(name): {"queue": settings.queue} for name in TaskName},
        task_serializer="json",
        accept_content=["json"],
        # The database is the truth about a run; Celery keeps no result anywhere.
        task_ignore_result=True,
        task_store_errors_even_if_ignored=False,
        # No run may be lost with the process running it, so a message is acknowledged
        # when its run is finished (acks_late), not when it is received; and when the pool
        # process dies under it (SIGKILL, out of memory), the worker gives the message back
        # to the queue for another process (reject_on_worker_lost) instead of acking it as
        # failed. A whole worker gone (host lost) acks nothing: Redis hands its message out
        # again after the visibility timeout (settings), and long before that the
        # reconciler sees the run's heartbeat stop and sends it again. Redelivery can
        # therefore repeat a run, never lose one; the database's conditional claim makes
        # the repeat a no-op (see store.runs).
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        # One message per process: a simulation takes seconds to minutes, so a prefetched
        # second run would wait behind the first while another worker sits idle, and would
        # sit unacknowledged in a process that might die.
        worker_prefetch_multiplier=1,
        # A lost broker connection must not stop simulations in progress: their results go
        # to the database, which does not care about the broker. (Celery 6 flips this
        # default; said here so it stays put.)
        worker_cancel_long_running_tasks_on_connection_loss=False,
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


def send_runs(celery: Celery, run_ids: Sequence[uuid.UUID]) -> list[uuid.UUID]:
    """`send_run` for each run in order, until the broker refuses one: the runs sent."""
    sent = []
    for run_id in run_ids:
        try:
            send_run(celery, run_id)
        except Exception:
            log.warning("could not send run %s; the reconciler will", run_id, exc_info=True)
            break
        sent.append(run_id)
    return sent


def send_advance(celery: Celery, workflow_id: uuid.UUID) -> None:
    """Ask a worker to take the workflow's next step (``worker.workflows``). Call only after
    what the step should see is committed; a step with nothing new to see does nothing."""
    celery.send_task(
        str(TaskName.advance_workflow),
        args=[str(workflow_id)],
        retry=True,
        retry_policy={"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5},
    )


def queue_depth(celery: Celery, queue: str) -> int:
    """Messages waiting in the queue (not those a worker holds). Raises if the broker is away."""
    with celery.connection_for_read() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)
        return int(conn.default_channel.queue_declare(queue=queue).message_count)
