"""A succeeded run written straight to the database, for the benches that serve stored
results (series_bench.py, export_bench.py): the run and its result with no flows or links;
the bench adds the series it measures."""

from __future__ import annotations

import uuid
from typing import Any

BENCH = {"engine_version": "bench", "scenario_hash": "sha256:bench", "seed": 1}


def add_succeeded_run(s: Any, run_id: uuid.UUID, sim_time: float) -> None:
    """The run and its result in session `s` (the store's models are imported here, once
    the bench has set the database it uses)."""
    from store.models import Run, RunResult, RunStatus

    s.add(
        Run(
            id=run_id,
            status=RunStatus.succeeded,
            scenario_name="bench",
            scenario={},
            progress=1.0,
            **BENCH,
        )
    )
    s.flush()
    s.add(
        RunResult(
            run_id=run_id, **BENCH, sim_time=sim_time, wall_time=0, events=0, warnings=[],
            flows={}, links={}, pvcs={}, diagnosis={}, extra={},
        )
    )  # fmt: skip
