"""The Celery app: ``celery -A worker.celery_app worker`` starts a worker."""

from __future__ import annotations

import logging
import os

from celery import signals

from messaging import make_celery
from settings import get_settings
from worker.memory import limit_this_process, replace_above

settings = get_settings()
logging.basicConfig(
    level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
)

app = make_celery(settings, name="tcpfr-worker")
app.conf.include = ["worker.tasks"]


@signals.worker_process_init.connect
def _memory_ceiling(**_: object) -> None:
    """Each pool process, as it starts: a run's memory ceiling (worker.memory), and its
    niceness: simulations yield the CPU to the API's requests (settings.worker_nice)."""
    limit_this_process(settings.max_run_memory)
    os.nice(settings.worker_nice)


app.conf.worker_max_memory_per_child = replace_above(settings.max_run_memory)
