"""Bodies of /v1/sweeps (the comparison they share with /v1/compare: api.compare)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from api.compare.schemas import Comparison
from api.runs.schemas import RunBrief
from engine.scenario.common import SEED_END, not_a_bool
from engine.study import StudySpec

SweepStatus = Literal["queued", "running", "succeeded", "failed", "cancelled", "partial"]
Cache = Literal["reuse", "refresh"]
#: A sweep's first seed: its replications (1,000 at most) take the seeds after it, all of
#: them below SEED_END; 1,024 below so that a double states the bound exactly.
FirstSeed = Annotated[int, Field(ge=0, le=SEED_END - 1024), BeforeValidator(not_a_bool)]


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
    seed: FirstSeed | None = Field(
        default=None, description="First seed (default: the base scenario's)"
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

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"replications": 1, "cache": "reuse"}]},
    )

    replications: int | None = Field(default=None, ge=1, le=1000)
    seed: FirstSeed | None = None
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
        description="One worker's speed per event: fitted by least squares to the last runs "
        "this service simulated (engine seconds = setup + events / events_per_second), or to "
        "a short probe of two sizes before there are runs of different sizes, or "
        "TCPFR_ENGINE_EVENTS_PER_SECOND (`speed_basis`)"
    )
    engine_setup_seconds: float = Field(
        default=0.0,
        description="The fit's fixed part of a run's engine time (building the network, the "
        "Result); counted in run_overhead_events. 0 when not measured",
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
    # Rounded as the value is made (by service.progress_of), so its JSON and the stream's
    # say 0.1, not (0 + 0.3) / 3 = 0.09999999999999999.
    fraction: Annotated[float, AfterValidator(lambda v: round(v, 4))] = Field(
        description="Finished runs plus running runs' progress, over all runs (4 decimals)"
    )
    eta_seconds: float | None = Field(description="Estimated seconds until every run finishes")
    eta_method: str | None = Field(
        description="`run_time`: the runs left (less the running runs' progress) x the "
        "mean start-to-finish time of the sweep's runs that succeeded, over the runs running "
        "now; `estimate`: the engine's size estimate at the measured speed over the workers, "
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
        "cancelled (the client cancelled it; its counts say how many runs had succeeded), "
        "or partial (finished with some runs failed or cancelled otherwise)"
    )
    cancel_requested: bool
    run_count: int
    cache: Cache
    cache_hits: int = Field(description="Runs served from stored results, not simulated")
    simulations: int = Field(description="Runs simulated (or to be) for this sweep")
    created_at: datetime
    progress: SweepProgress
    links: SweepLinks


class SweepState(BaseModel):
    """A sweep's state alone (GET /v1/sweeps/{id}/progress): a few hundred bytes to poll."""

    id: uuid.UUID
    status: SweepStatus
    cancel_requested: bool
    run_count: int
    cache_hits: int
    progress: SweepProgress
    finished_at: datetime | None = Field(
        description="When the last simulated run finished, once the sweep has; else null"
    )


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


class SweepRun(RunBrief):
    point_index: int
    replication: int
    links: SweepRunLinks


class SweepSummary(Comparison):
    sweep_id: uuid.UUID
    status: SweepStatus
    partial: bool = Field(description="Runs are still to finish: the figures will change")
    finished: int
    run_count: int
