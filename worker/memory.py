"""A worker's memory ceiling for one run (`max_run_memory`): each pool process may hold at
most that much, so a run that outgrows it fails with its reason and harms nothing else.

The ceiling is an rlimit on the process's data (RLIMIT_DATA: its heap and every private
writable mapping), less what it already has resident of files (the interpreter, numpy's
libraries), which count towards resident memory but not towards data: resident memory
stays under the ceiling. An allocation past it fails, Python raises MemoryError in the run,
and the runner records the run as failed (`RunOverMemory`); the process frees the run's
memory and takes the next one. Celery replaces a process that keeps more than a quarter of
the ceiling after a run (`worker_max_memory_per_child`), so every run starts with nearly
its whole allowance.
"""

from __future__ import annotations

import logging
import resource

log = logging.getLogger(__name__)


def _status_bytes(*fields: str) -> int:
    """The sum of /proc/self/status fields (kB) in bytes."""
    total = 0
    with open("/proc/self/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in fields:
                total += int(value.split()[0]) * 1024
    return total


def limit_this_process(ceiling: int) -> int:
    """Cap this process's data so its resident memory stays under `ceiling`; returns the
    data limit set (0 where the platform has no such rlimit)."""
    if not hasattr(resource, "RLIMIT_DATA"):
        return 0
    files = _status_bytes("RssFile", "RssShmem")
    limit = max(ceiling - files, 64 << 20)
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    log.info("a run may use %d MiB of this process's memory", ceiling >> 20)
    return limit


def replace_above(ceiling: int) -> int:
    """Celery's `worker_max_memory_per_child` (KiB): a quarter of the ceiling."""
    return ceiling // 4 // 1024


class RunOverMemory(MemoryError):
    """The run needed more memory than a worker allows one run."""

    def __init__(self, ceiling: int) -> None:
        super().__init__(
            f"the run needed more than the {ceiling / 2**20:,.0f} MiB of memory a worker "
            "allows one run (TCPFR_MAX_RUN_MEMORY) and was stopped; POST /v1/scenarios/"
            "validate estimates a run's memory (cost.estimate.memory_bytes): raise "
            "sample_interval, shorten duration, or use fewer flows, smaller queues or "
            "fewer captured packets"
        )
