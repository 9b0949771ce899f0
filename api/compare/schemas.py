"""Bodies of /v1/compare."""

from __future__ import annotations

import uuid

from pydantic import BaseModel, Field

from api.comparison.schemas import Comparison


class RunComparison(Comparison):
    """Runs grouped by scenario: each point is one scenario, its runs (one per seed) its
    replications, its `parameters` the scenario paths that differ between the points."""

    runs: list[uuid.UUID]
    baseline: uuid.UUID = Field(description="The run whose scenario is the baseline point")
    scenarios_differ: bool = Field(
        default=False,
        description="The scenarios are not variations of one another (different nodes, links "
        "or flows, or more than 8 differing settings): each point is one scenario, named by "
        "`parameters.scenario`, and the conclusions say so",
    )
    differing_paths: list[str] = Field(
        default_factory=list, description="The scenario paths whose values differ (first 50)"
    )
    differing_path_count: int = 0


class SeriesRun(BaseModel):
    id: uuid.UUID
    unit: str
    sim_time: float = Field(description="Where the run's column ends (its simulated end)")
    length: int = Field(description="Samples stored in [start, end]")
    points: int = Field(description="Samples of this run after downsampling")
    downsampled: bool


class CommonSeries(BaseModel):
    """One series of several runs on one time axis, for an overlay chart: a `t` column and
    one column per run id: a rate series' time-weighted mean over the bucket ending at `t`
    (or the `agg` asked for); a step series' value at `t` (last sample at or before it)."""

    key: str
    unit: str
    runs: list[SeriesRun]
    points: int = Field(description="Rows of the common time axis")
    agg: str | None = Field(description="The bucket aggregate, null for MinMaxLTTB")
    method: str
    columns: dict[str, list[float | None]]
