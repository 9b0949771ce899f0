"""A sweep's status and the version its polled documents are cached by (api.sweeps.service):
a cancelled sweep says so, and a summary's version moves only when a run finishes."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from api.sweeps import service
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
    assert service.status_of(halfway, 6, cancel_requested=True) == "cancelled"
    # Runs cancelled one by one (not the sweep): some succeeded, so partial.
    assert service.status_of(halfway, 6, cancel_requested=False) == "partial"
    # Asked to stop, but the runs finished first: nothing was cancelled.
    assert service.status_of(progress(succeeded=6), 6, cancel_requested=True) == "succeeded"
    # Still stopping: running until the workers have.
    stopping = progress(succeeded=3, cancelled=2, running=1)
    assert service.status_of(stopping, 6, cancel_requested=True) == "running"


def test_the_summary_version_moves_only_when_a_run_finishes() -> None:
    s = sweep()
    a = progress(running_progress=0.1, succeeded=1, running=2, queued=3, last=T0)
    b = progress(running_progress=0.7, succeeded=1, running=2, queued=3, last=T0)
    c = progress(running_progress=0.1, succeeded=2, running=2, queued=2, last=T0)
    assert service.version(s, a, "summary") == service.version(s, b, "summary")
    assert service.version(s, a, "summary") != service.version(s, c, "summary")
    # The sweep's state shows the running runs' progress: it moves with them.
    assert service.version(s, a, "progress") != service.version(s, b, "progress")
    assert service.version(s, a, "detail") == service.version(s, a, "progress")
    # A cancel request changes the state even before any run has stopped.
    assert service.version(s, a, "progress") != service.version(
        sweep(cancel_requested=True), a, "progress"
    )


def test_settled_once_every_run_has_finished() -> None:
    assert not service.settled(sweep(), progress(succeeded=5, running=1))
    assert service.settled(sweep(), progress(succeeded=4, failed=1, cancelled=1))
