"""A comparison's input: each point's parameters and the figures of its succeeded runs.
Its own module, as the report and its sentences both read it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Observation:
    """One succeeded run's figures."""

    run_id: uuid.UUID
    source_run_id: uuid.UUID | None
    seed: int
    flows: dict[str, Any]
    diagnosis: dict[str, Any]
    #: Its figures by (flow, metric) as read so far (``report.figure``): a succeeded run's
    #: figures never change, so a running sweep's summary, rebuilt as runs finish from the
    #: observations it keeps, reads each run's figures once, not once per rebuild.
    figures: dict[tuple[str, str], float | None] = field(
        default_factory=dict, repr=False, compare=False
    )


@dataclass
class PointData:
    index: int
    parameters: dict[str, Any]
    is_baseline: bool
    runs: int  # runs the point has, finished or not
    run_ids: list[uuid.UUID] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
