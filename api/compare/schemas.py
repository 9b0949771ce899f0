"""The comparison of points (a sweep's, or /v1/compare's runs) and its table form; the
bodies of /v1/compare."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, Field


class Interval(BaseModel):
    low: float
    high: float
    clipped: bool = Field(
        default=False,
        description="An end was moved to the metric's bound (a t-interval of a fraction or "
        "a count can cross 0 or 1): the interval is the t-interval intersected with the "
        "values the metric can take",
    )


class Delta(BaseModel):
    n: int = Field(description="Paired seeds (or both sample sizes when unpaired)")
    paired: bool
    mean: float = Field(description="Point minus baseline")
    sd: float | None = Field(description="Of the per-seed differences (paired)")
    ci95: Interval | None
    baseline_mean: float
    pct: float | None = Field(description="mean / baseline_mean, in %")
    pct_ci95: Interval | None


class MetricStat(BaseModel):
    n: int
    mean: float | None
    sd: float | None
    ci95: Interval | None = Field(description="Null with fewer than two replications")
    delta: Delta | None = Field(description="Against the baseline; null at the baseline")


class LimitCount(BaseModel):
    limit: str = Field(description="The most common diagnosis over the replications")
    count: int
    of: int
    counts: dict[str, int]


class PointRow(BaseModel):
    index: int
    parameters: dict[str, Any]
    is_baseline: bool
    runs: int
    succeeded: int
    run_ids: list[uuid.UUID]
    metrics: dict[str, dict[str, MetricStat]] = Field(description="flow -> metric -> statistics")
    limits: dict[str, LimitCount] = Field(description="flow -> what limits it")


class MetricInfo(BaseModel):
    flow: str
    metric: str
    kind: str
    unit: str
    direction: Literal["lower", "higher"] = Field(description="Which way is better")
    label: str


class BestPoint(BaseModel):
    flow: str
    metric: str
    direction: Literal["lower", "higher"]
    point_index: int
    mean: float
    parameters: dict[str, Any]
    ties: list[int] = Field(
        default_factory=list,
        description="Every point with the same best mean (point_index among them), when "
        "several tie; empty otherwise",
    )


class FactorOut(BaseModel):
    name: str
    paths: list[str]
    levels: list[Any]


class DesignOut(BaseModel):
    factors: list[FactorOut]
    factorial: bool = Field(description="Factors cross completely and evenly: effects separate")
    note: str | None


class FactorShare(BaseModel):
    factor: str
    paths: list[str]
    share: float | None = Field(description="SS_factor / SS_total")


class EffectsOut(BaseModel):
    flow: str
    metric: str
    basis: Literal["replications", "point_means", "sequential"] = Field(
        description="What the shares are computed on: see `method.effects`"
    )
    factors: list[FactorShare]
    interaction_share: float | None
    within_share: float | None = Field(description="Replication noise; null without replications")
    note: str | None


class ConditionalEffect(BaseModel):
    level: Any = Field(description="The other factor's level")
    from_mean: float = Field(description="The metric before the move, at that level")
    to_mean: float = Field(description="The metric after the move, at that level")
    pct: float | None = Field(description="Change of the move there, per cent")


class InteractionOut(BaseModel):
    """A factor's move whose effect depends on another factor's level: measured at the
    baseline alone it would be generalised wrongly (api/comparison/interactions.py)."""

    flow: str
    metric: str
    factor: str
    paths: list[str]
    move_from: Any
    move_to: Any
    other: str
    other_paths: list[str]
    baseline_level: Any = Field(description="The other factor's level at the baseline")
    at: list[ConditionalEffect] = Field(description="The move at each level of the other factor")
    matters_at_least: Any | None = Field(
        description="The move matters (changes the metric by 10% or more) exactly from this "
        "level of the other factor up; null when that is not the pattern"
    )
    matters_at_most: Any | None = Field(
        description="The same, up to this level (the move matters only below it)"
    )


class Comparison(BaseModel):
    metrics: list[MetricInfo]
    points: list[PointRow]
    best: list[BestPoint]
    design: DesignOut
    effects: list[EffectsOut]
    interactions: list[InteractionOut] = Field(
        default_factory=list,
        description="Moves whose effect at the baseline does not hold at another factor's "
        "levels; the conclusions say where they matter instead",
    )
    conclusions: list[str] = Field(description="What the numbers say, in sentences")
    text: str = Field(description="The conclusions as one paragraph")
    method: dict[str, str] = Field(description="How each figure is computed")


class TableColumn(BaseModel):
    name: str = Field(description="A parameter path, or `<metric>.<statistic>`")
    unit: str | None = Field(description="The column's base unit (s, bytes, bit/s, fraction…)")


class SummaryTable(BaseModel):
    """A comparison as records: one per point and flow (`point`, `flow`: the keys a sweep
    export's `table.parquet` joins on); per metric its `mean`, `sd`, 95% interval
    (`ci95_low`, `ci95_high`), `n` replications, and against the baseline the paired change
    `delta` with its interval (`delta_ci95_low`, `delta_ci95_high`) and the same in percent
    (`delta_pct`, `delta_pct_ci95_low`, `delta_pct_ci95_high`). Parameters and metrics in
    base units (seconds, bytes, bit/s, fractions)."""

    columns: list[TableColumn]
    records: list[dict[str, Any]]


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
