"""Progress reads like 0.1 in JSON, not 0.09999999999999999: rounded to 4 decimals where a
run's progress is reported (the worker's heartbeat) and a sweep's is made (SweepProgress)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from api.sweeps.schemas import RunCounts, SweepProgress
from worker.runner import Heartbeat

pytestmark = pytest.mark.integration


def test_a_runs_reported_progress_is_rounded() -> None:
    beat = Heartbeat(sessions=Any, run_id=uuid.uuid4(), task_id="t", interval=1.0)  # type: ignore[arg-type]
    fraction = 0.7 - 0.6  # 0.09999999999999998, as the simulated clock's sums give
    assert json.dumps(fraction) != "0.1"
    beat.report(fraction)
    assert json.dumps(beat.progress) == "0.1"
    beat.report(2 / 3)
    assert beat.progress == 0.6667
    beat.report(1.5)
    assert beat.progress == 1.0  # still clamped


def test_a_sweeps_progress_fraction_is_rounded_in_its_json() -> None:
    counts = RunCounts(queued=0, running=3, succeeded=0, failed=0, cancelled=0)
    fraction = (0 + 0.3) / 3
    assert repr(fraction) == "0.09999999999999999"
    progress = SweepProgress(
        counts=counts, finished=0, fraction=fraction, eta_seconds=None, eta_method=None
    )
    assert json.loads(progress.model_dump_json())["fraction"] == 0.1
    assert '"fraction":0.1,' in progress.model_dump_json()
