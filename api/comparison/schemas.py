"""The comparison of points (a sweep's, or /v1/compare's runs) and its table form."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, Field


class Interval(BaseModel):
    low: float
    high: float


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


class Comparison(BaseModel):
    metrics: list[MetricInfo]
    points: list[PointRow]
    best: list[BestPoint]
    design: DesignOut
    effects: list[EffectsOut]
    conclusions: list[str] = Field(description="What the numbers say, in sentences")
    text: str = Field(description="The conclusions as one paragraph")
    method: dict[str, str] = Field(description="How each figure is computed")


class TableColumn(BaseModel):
    name: str = Field(description="A parameter path, or `<metric>.<statistic>`")
    unit: str | None = Field(description="The column's base unit (s, bytes, bit/s, fraction…)")


class SummaryTable(BaseModel):
    """A comparison as records: one per point and flow; per metric its `mean`, `sd`, 95%
    interval (`ci95_low`, `ci95_high`), `n` replications and `delta_pct` against the
    baseline. Parameters and metrics in base units (seconds, bytes, bit/s, fractions)."""

    columns: list[TableColumn]
    records: list[dict[str, Any]]
