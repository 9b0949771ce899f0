"""The Celery app: ``celery -A worker.celery_app worker`` starts a worker."""

from __future__ import annotations

import logging
import os
from pathlib import Path

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
    yield_session(settings.worker_nice)


AUTOGROUP = Path("/proc/self/autogroup")


def yield_session(nice: int) -> bool:
    """Give the worker's session the niceness too, where it is the worker's own. Linux's
    autogroups (sched(7), on by default) weigh each session as one: a process's nice counts
    only against the others of its session, so a worker in a session of its own (`make run`
    starts it so, as does a service manager) competed with the API as an equal whatever its
    nice. Measured (bench/api_streams_load.py's running run, 2 cores, embedded): GET of a
    running run at 10 connections 187-242 req/s, p99 319-401 ms with the session at nice 0;
    534-572 req/s, p99 49-125 ms at 10. Only when the worker leads its session (this pool
    process's parent is the session's leader): a worker started from a shell shares the
    shell's session, and its nice stays its own. True when the session took it."""
    if os.getsid(0) != os.getppid():
        return False
    try:
        AUTOGROUP.write_text(str(nice))
    except OSError:  # no autogroups (a kernel without them, or not Linux): nice alone applies
        return False
    return True


app.conf.worker_max_memory_per_child = replace_above(settings.max_run_memory)
