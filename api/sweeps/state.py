"""A sweep's state, from its runs' counts: its status, fraction done and time left, and
the version its polled documents are cached by."""

from __future__ import annotations

import math
from typing import Literal

from api.sweeps import speed
from api.sweeps.schemas import (
    RunCounts,
    SweepProgress,
    SweepStatus,
)
from settings import Settings
from store.models import RunStatus, Sweep
from store.sweeps import Progress, SweepHead


def status_of(progress: Progress, total: int, *, cancel_requested: bool = False) -> SweepStatus:
    """From the runs' states. A sweep the client cancelled is `cancelled` once its runs
    have stopped, whatever finished before (its counts say how many succeeded)."""
    c = progress.counts
    done = c[RunStatus.succeeded] + c[RunStatus.failed] + c[RunStatus.cancelled]
    if done >= total:
        if c[RunStatus.succeeded] == total:
            return "succeeded"
        if cancel_requested and c[RunStatus.cancelled]:
            return "cancelled"
        if c[RunStatus.succeeded] == 0:
            return "failed" if c[RunStatus.failed] else "cancelled"
        return "partial"
    if done == 0 and c[RunStatus.running] == 0:
        return "queued"
    return "running"


def status_while_active(active: bool, started: bool) -> SweepStatus | None:
    """The status of a sweep from whether it has runs still to go (`active`: queued or
    running) and whether any has started (`started`: any not queued), as status_of gives
    it from the counts; None once none is to go, when the counts decide between the final
    statuses."""
    if not active:
        return None
    return "running" if started else "queued"


def progress_of(
    sweep: Sweep, progress: Progress, settings: Settings, measured: speed.Speed | None = None
) -> SweepProgress:
    c = progress.counts
    finished = c[RunStatus.succeeded] + c[RunStatus.failed] + c[RunStatus.cancelled]
    total = max(sweep.run_count, 1)
    fraction = min((finished + progress.running_progress) / total, 1.0)
    remaining = c[RunStatus.queued] + c[RunStatus.running] - progress.running_progress
    eta = method = None
    if finished < sweep.run_count:
        workers = max(settings.worker_concurrency, 1)
        if progress.mean_run_seconds is not None and progress.simulated_done > 0:
            # What is left, in runs, at what a run of this sweep has taken, as many at a
            # time as run now (the workers it has; none running: the workers, at most the
            # runs left). Not the rate since the first run started: that counts the time
            # the workers spent on other work or starting up, and measured early it said
            # 209 s for a sweep that took 94.
            parallel = c[RunStatus.running] or min(workers, c[RunStatus.queued]) or 1
            eta = remaining * progress.mean_run_seconds / parallel
            method = "run_time"
        else:
            per_run = sum(p.get("est_events", 0) for p in sweep.points) / max(len(sweep.points), 1)
            measured = measured or speed.setting(settings)
            runs = max(0, math.ceil(remaining))
            _, eta = speed.wall_seconds(int(per_run * remaining), runs, workers, measured)
            method = "estimate"
    return SweepProgress(
        counts=RunCounts(**{s.value: c[s] for s in RunStatus}),
        finished=finished,
        fraction=fraction,
        eta_seconds=None if eta is None else round(max(eta, 0.0), 3),
        eta_method=method,
    )


#: What a sweep's documents show: the sweep (`detail`), its state alone (`progress`), its
#: summary (`summary`, which only finished runs change).
View = Literal["detail", "progress", "summary"]
ACTIVE = ("queued", "running")


def version(sweep: Sweep | SweepHead, progress: Progress, view: View) -> str:
    """What a document of `view` depends on, as a string: equal versions, equal documents
    (but for the time-left estimate, recomputed when the runs' state changes)."""
    c = progress.counts
    status = status_of(progress, sweep.run_count, cancel_requested=sweep.cancel_requested)
    parts: tuple[object, ...]
    if view == "summary":
        finished = (c[RunStatus.succeeded], c[RunStatus.failed], c[RunStatus.cancelled])
        parts = (status, finished, progress.last_finished_at)
    else:
        parts = (
            status,
            sweep.cancel_requested,
            tuple(c[s] for s in RunStatus),
            progress.cache_hits,
            round(progress.running_progress, 4),
            progress.first_started_at,
            progress.last_finished_at,
        )
    return "|".join(map(str, parts))


def settled(sweep: Sweep | SweepHead, progress: Progress) -> bool:
    """Every run has finished: the sweep's documents will not change any more."""
    return progress.finished >= sweep.run_count
