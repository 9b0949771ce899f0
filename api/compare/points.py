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


@dataclass
class PointData:
    index: int
    parameters: dict[str, Any]
    is_baseline: bool
    runs: int  # runs the point has, finished or not
    run_ids: list[uuid.UUID] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
