"""A sweep's status and the version its polled documents are cached by (api.sweeps.state):
a cancelled sweep says so, and a summary's version moves only when a run finishes."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from api.sweeps import state
from store.models import RunStatus
from store.run_groups import Progress

pytestmark = pytest.mark.unit
T0 = datetime(2026, 11, 26, 20, 0, tzinfo=UTC)


def progress(running_progress: float = 0.0, last: datetime | None = None, **n: int) -> Progress:
    counts = {s: n.get(s.value, 0) for s in RunStatus}
    done = counts[RunStatus.succeeded] + counts[RunStatus.failed]
    return Progress(counts, 0, running_progress, done, T0, last)


def sweep(run_count: int = 6, cancel_requested: bool = False) -> Any:
    return SimpleNamespace(run_count=run_count, cancel_requested=cancel_requested)


def test_a_sweep_cancelled_halfway_is_cancelled_not_partial() -> None:
    halfway = progress(succeeded=3, cancelled=3)
    assert state.status_of(halfway, 6, cancel_requested=True) == "cancelled"
    # Runs cancelled one by one (not the sweep): some succeeded, so partial.
    assert state.status_of(halfway, 6, cancel_requested=False) == "partial"
    # Asked to stop, but the runs finished first: nothing was cancelled.
    assert state.status_of(progress(succeeded=6), 6, cancel_requested=True) == "succeeded"
    # Still stopping: running until the workers have.
    stopping = progress(succeeded=3, cancelled=2, running=1)
    assert state.status_of(stopping, 6, cancel_requested=True) == "running"


def test_the_summary_version_moves_only_when_a_run_finishes() -> None:
    s = sweep()
    a = progress(running_progress=0.1, succeeded=1, running=2, queued=3, last=T0)
    b = progress(running_progress=0.7, succeeded=1, running=2, queued=3, last=T0)
    c = progress(running_progress=0.1, succeeded=2, running=2, queued=2, last=T0)
    assert state.version(s, a, "summary") == state.version(s, b, "summary")
    assert state.version(s, a, "summary") != state.version(s, c, "summary")
    # The sweep's state shows the running runs' progress: it moves with them.
    assert state.version(s, a, "progress") != state.version(s, b, "progress")
    assert state.version(s, a, "detail") == state.version(s, a, "progress")
    # A cancel request changes the state even before any run has stopped.
    assert state.version(s, a, "progress") != state.version(
        sweep(cancel_requested=True), a, "progress"
    )


def test_settled_once_every_run_has_finished() -> None:
    assert not state.settled(sweep(), progress(succeeded=5, running=1))
    assert state.settled(sweep(), progress(succeeded=4, failed=1, cancelled=1))


def test_time_left_is_the_runs_left_at_their_measured_time_over_those_running() -> None:
    # 8 runs of 10 s on 2 workers: 2 done, 2 half done, 4 queued. The running ones end in
    # 5 s, then two waves of two: 25 s.
    from datetime import timedelta

    from settings import Settings

    s = SimpleNamespace(run_count=8, cancel_requested=False, points=[{"est_events": 1000}])
    settings = Settings(_env_file=None, worker_concurrency=2)

    def at(started_ago: float) -> Progress:
        p = progress(running_progress=1.0, succeeded=2, running=2, queued=4)
        first = T0 - timedelta(seconds=started_ago)
        return Progress(p.counts, 0, 1.0, 2, first, T0, mean_run_seconds=10.0)

    found = state.progress_of(s, at(15.0), settings)  # type: ignore[arg-type]
    assert found.eta_method == "run_time" and found.eta_seconds == pytest.approx(25.0)
    # The same state with a minute more since the first run started (one worker started
    # late): the time left is the same. (Runs done per second since the first start said
    # 5 x 75 / 3 = 125 s here, where at 15 s it said 25 s.)
    late = state.progress_of(s, at(75.0), settings)  # type: ignore[arg-type]
    assert late.eta_seconds == pytest.approx(25.0)
    # Nothing running now (the workers on other work): the workers' number at a time.
    idle = Progress(
        {**at(15.0).counts, RunStatus.running: 0, RunStatus.queued: 6},
        0,
        0.0,
        2,
        T0,
        T0,
        mean_run_seconds=10.0,
    )
    assert state.progress_of(s, idle, settings).eta_seconds == pytest.approx(30.0)  # type: ignore[arg-type]
