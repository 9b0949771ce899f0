"""Bodies of /v1/sweeps, and of the comparison that sweeps and /v1/compare share."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from api.runs.schemas import SEED_MAX, SEED_MIN, RunError
from engine.study import StudySpec
from store.models import RunStatus

SweepStatus = Literal["queued", "running", "succeeded", "failed", "cancelled", "partial"]
Cache = Literal["reuse", "refresh"]


class SweepCreate(StudySpec):
    """docs/scenario.md "Sweep (study)": `base` is `{preset: NAME}`, `{scenario_id: ID}`,
    `{scenario: {...}}` or an inline scenario; `parameters` maps dotted paths (list items
    by their `id`) to values; `grid` crosses them, `zip` pairs them; every point runs with
    the seeds `seed .. seed + replications - 1` (common random numbers, so differences
    against the `baseline` point are paired)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "base": {"preset": "riverbed-t1-8k"},
                    "parameters": {
                        "links.access1.rate": ["T1", "T3"],
                        "flows.backup.tcp.rcv_buf": [8760, 65535],
                    },
                    "mode": "grid",
                    "replications": 1,
                    "baseline": {"links.access1.rate": "T1", "flows.backup.tcp.rcv_buf": 8760},
                }
            ]
        },
    )

    name: str | None = Field(default=None, min_length=1, max_length=200)
    seed: int | None = Field(
        default=None,
        ge=SEED_MIN,
        le=SEED_MAX - 1000,
        description="First seed (default: the base scenario's)",
    )
    cache: Cache = Field(
        default="reuse",
        description="`reuse` serves runs already simulated from the store; `refresh` simulates all",
    )

    @model_validator(mode="after")
    def _storable(self) -> SweepCreate:
        # The body is stored as JSON: Postgres text holds no NUL, and JSON numbers here are
        # 64-bit at most. Say so with the path rather than fail on the way in.
        for where, value in (
            ("name", self.name),
            ("base", self.base),
            ("parameters", self.parameters),
            ("baseline", self.baseline),
        ):
            if (problem := unstorable(value, where)) is not None:
                raise ValueError(problem)
        return self


def unstorable(value: Any, where: str) -> str | None:
    """Why `value` cannot be stored as JSON in the database, or None."""
    if isinstance(value, str):
        if "\x00" in value:
            return f"{where}: text may not contain NUL (U+0000)"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{where}: text is not valid Unicode (a lone surrogate)"
        return None
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return (
            f"{where}: {value} does not fit in 64 bits" if not -(2**63) <= value < 2**64 else None
        )
    if isinstance(value, dict):
        for k, v in value.items():
            if (found := unstorable(k, where) or unstorable(v, f"{where}.{k}")) is not None:
                return found
    if isinstance(value, list):
        for i, v in enumerate(value):
            if (found := unstorable(v, f"{where}[{i}]")) is not None:
                return found
    return None


class PresetSweepCreate(BaseModel):
    """Overrides for a study preset; all optional."""

    model_config = ConfigDict(extra="forbid")

    replications: int | None = Field(default=None, ge=1, le=1000)
    seed: int | None = Field(default=None, ge=SEED_MIN, le=SEED_MAX - 1000)
    cache: Cache = "reuse"
    name: str | None = Field(default=None, min_length=1, max_length=200)


class SweepPoint(BaseModel):
    index: int
    parameters: dict[str, Any]
    is_baseline: bool
    scenario_hash: str
    est_events: int = Field(description="The engine's estimate of one run's events")


class SweepEstimate(BaseModel):
    """What the runs still to simulate cost, from the engine's size estimate."""

    runs: int = Field(description="Runs the sweep has (points x replications)")
    cached: int = Field(description="Runs the result cache serves at once")
    to_simulate: int
    events: int = Field(description="Estimated simulation events of the runs to simulate")
    packets: int
    cpu_seconds: float = Field(
        description="(events + to_simulate x run_overhead_events) / events_per_second"
    )
    wall_seconds: float = Field(
        description="cpu_seconds / workers (no more workers than runs to simulate)"
    )
    workers: int = Field(description="Worker processes assumed (TCPFR_WORKER_CONCURRENCY)")
    events_per_second: float = Field(
        description="One worker's speed: measured over the last runs this service simulated "
        "(their events / engine seconds), or by a short probe simulation before there are "
        "enough, or TCPFR_ENGINE_EVENTS_PER_SECOND (`speed_basis`)"
    )
    run_overhead_events: int = Field(
        description="A run's cost beyond its events (engine setup, claim, load, store, "
        "hand-over), in events (TCPFR_SWEEP_RUN_OVERHEAD_EVENTS, bench/estimate_bench.py)"
    )
    run_overhead_seconds: float = Field(description="run_overhead_events / events_per_second")
    speed_basis: Literal["measured", "probe", "setting"] = Field(
        description="Where events_per_second comes from"
    )
    speed_runs: int = Field(description="Runs the measured speed is over (0: the setting)")


class SweepPlan(BaseModel):
    """A dry run: what the sweep would do, and nothing created."""

    warnings: list[str] = Field(
        default_factory=list,
        description="Advisory findings about the points' scenarios (e.g. a transfer that "
        "cannot finish within `duration`); the sweep is valid",
    )
    point_count: int
    replications: int
    seeds: list[int]
    baseline_index: int | None
    estimate: SweepEstimate
    points: list[SweepPoint]


class RunCounts(BaseModel):
    queued: int
    running: int
    succeeded: int
    failed: int
    cancelled: int


class SweepProgress(BaseModel):
    counts: RunCounts
    finished: int
    fraction: float = Field(description="Finished runs plus running runs' progress, over all runs")
    eta_seconds: float | None = Field(description="Estimated seconds until every run finishes")
    eta_method: str | None = Field(
        description="`throughput`: remaining runs / runs finished per second since the "
        "sweep's first run started; `estimate`: the engine's size estimate over the workers, "
        "before any run has finished; null once finished"
    )


class SweepLinks(BaseModel):
    self: str
    runs: str
    summary: str
    cancel: str


class SweepListItem(BaseModel):
    id: uuid.UUID
    name: str
    preset: str | None
    status: SweepStatus = Field(
        description="From the runs: queued (none started), running, then succeeded, failed, "
        "cancelled, or partial (finished with some runs failed or cancelled)"
    )
    cancel_requested: bool
    run_count: int
    cache: Cache
    cache_hits: int = Field(description="Runs served from stored results, not simulated")
    simulations: int = Field(description="Runs simulated (or to be) for this sweep")
    created_at: datetime
    progress: SweepProgress
    links: SweepLinks


class SweepOut(SweepListItem):
    mode: Literal["grid", "zip"]
    replications: int
    seeds: list[int]
    baseline_index: int | None
    parameters: list[str] = Field(description="The swept paths")
    spec: dict[str, Any] = Field(description="The sweep as submitted")
    points: list[SweepPoint]
    warnings: list[str] | None = Field(
        default=None,
        description="In the response to the POST that created the sweep: advisory findings "
        "about its points' scenarios (e.g. a transfer that cannot finish within `duration`); "
        "null elsewhere",
    )


class SweepRunLinks(BaseModel):
    self: str


class SweepRun(BaseModel):
    id: uuid.UUID
    point_index: int
    replication: int
    seed: int
    status: RunStatus
    progress: float
    cache_hit: bool = Field(description="Served from a stored result, not simulated")
    source_run_id: uuid.UUID | None = Field(description="The run whose result a cache hit serves")
    scenario_hash: str
    started_at: datetime | None
    finished_at: datetime | None
    error: RunError | None
    links: SweepRunLinks


# --- the comparison ---------------------------------------------------------------------


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


class SweepSummary(Comparison):
    sweep_id: uuid.UUID
    status: SweepStatus
    partial: bool = Field(description="Runs are still to finish: the figures will change")
    finished: int
    run_count: int


class TableColumn(BaseModel):
    name: str = Field(description="A parameter path, or `<metric>.<statistic>`")
    unit: str | None = Field(description="The column's base unit (s, bytes, bit/s, fraction…)")


class SummaryTable(BaseModel):
    """A comparison as records: one per point and flow; per metric its `mean`, `sd`, 95%
    interval (`ci95_low`, `ci95_high`), `n` replications and `delta_pct` against the
    baseline. Parameters and metrics in base units (seconds, bytes, bit/s, fractions)."""

    columns: list[TableColumn]
    records: list[dict[str, Any]]
