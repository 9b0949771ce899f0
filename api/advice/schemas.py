"""Bodies of /v1/advice and of a run's remedy check (the advisor's request and report are
the engine's models: ``engine.advice``)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from api.runs.schemas import RunBrief, RunError
from api.sweeps.schemas import Cache, RunCounts
from engine import Scenario
from engine.advice.curves import CurvePoint
from engine.advice.model import Remedy
from engine.advice.options import LeverSpec
from engine.advice.reports import AdviceReport, CheckReport
from engine.advice.request import AdviceRequest
from engine.advice.target import Target
from engine.scenario.common import SEED_END, not_a_bool
from store.models import RunStatus

AdviceStatus = Literal["queued", "running", "succeeded", "failed", "cancelled"]
AdviceKind = Literal["advice", "remedy_check"]


SOURCES = ("scenario", "scenario_id", "preset", "run_id")


class AdviceCreate(AdviceRequest):
    """What would make it meet a target: the scenario (exactly one of `scenario`,
    `scenario_id`, `preset` or an existing run's `run_id`), the `target`, the `levers` the
    user may pull (null: every lever that can matter, at the default costs of
    docs/advice.md), the most runs to spend (`budget`) and seeds per configuration
    (`replications`). Every run it makes is an ordinary run, served from the result cache
    when it can be."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "preset": "riverbed-t1-8k",
                    "target": "backup.completion_time<=200s",
                    "levers": [
                        "flows.backup.tcp.rcv_buf",
                        {"paths": ["links.access1.rate", "links.access2.rate"]},
                    ],
                    "budget": 30,
                }
            ]
        },
    )

    target: Target | str = Field(  # type: ignore[assignment]
        description="`{flow, metric, value}`, or the same written out: "
        "`backup.completion_time<=200s`, `backup.goodput>=2Mbps`, `*.time<=10min` (`*`: "
        "every TCP flow)"
    )
    levers: list[LeverSpec | str] | None = Field(  # type: ignore[assignment]
        default=None,
        max_length=32,
        description="`{paths, cost, values, maximum}`, or the same written out: "
        "`links.access1.rate+links.access2.rate=4500:T3,OC3` (paths moved together, a flat "
        "cost, the values to try); null: every lever that can matter, at the default costs",
    )
    scenario: Scenario | None = None
    scenario_id: uuid.UUID | None = None
    preset: str | None = Field(default=None, min_length=1, max_length=200)
    run_id: uuid.UUID | None = Field(
        default=None, description="An existing run: its scenario, with its seed"
    )
    # The first seed; replications take the next ones, so it leaves room below the end.
    seed: Annotated[int, BeforeValidator(not_a_bool)] | None = Field(
        default=None, ge=0, lt=SEED_END - 1000
    )
    cache: Cache = "reuse"
    name: str | None = Field(default=None, min_length=1, max_length=200)

    @field_validator("target", mode="after")
    @classmethod
    def _target_parsed(cls, value: Target | str) -> Target:
        return Target.parse(value) if isinstance(value, str) else value

    @field_validator("levers", mode="after")
    @classmethod
    def _levers_parsed(cls, value: list[LeverSpec | str] | None) -> list[LeverSpec] | None:
        if value is None:
            return None
        return [LeverSpec.parse(v) if isinstance(v, str) else v for v in value]

    @model_validator(mode="after")
    def _exactly_one_source(self) -> AdviceCreate:
        given = [f for f in SOURCES if getattr(self, f) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of 'scenario', 'scenario_id', 'preset' or 'run_id'"
                + (f" (got {', '.join(given)})" if given else "")
            )
        return self

    def advice_request(self) -> AdviceRequest:
        """The advisor's own request: everything but where the scenario comes from."""
        return AdviceRequest.model_validate(
            self.model_dump(include=set(AdviceRequest.model_fields))
        )


class RemedyCheckCreate(BaseModel):
    """Options of a run's remedy check; all optional."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"replications": 1, "cache": "reuse"}]}
    )

    replications: int | None = Field(
        default=None,
        ge=1,
        le=30,
        description="Seeds per remedy (the run's first); null: 3 when the scenario has "
        "randomness, else 1",
    )
    cache: Cache = "reuse"


class AdviceBase(BaseModel):
    """The scenario the advice is about, and where it came from."""

    run_id: uuid.UUID | None = Field(description="The run it was asked about, if any")
    scenario_id: uuid.UUID | None
    preset: str | None
    scenario_name: str
    scenario_hash: str
    seed: int = Field(description="The first seed of its runs")


class AdviceProgress(BaseModel):
    counts: RunCounts = Field(description="Its runs by status")
    runs: int = Field(description="Runs it has made so far")
    run_budget: int = Field(description="The most runs it may make")
    cache_hits: int = Field(description="Runs served from stored results, not simulated")
    fraction: float = Field(
        description="1 once finished; before, finished runs (and running runs' progress) "
        "over the run budget: the advice may finish before its budget is spent"
    )
    steps: int = Field(description="Steps the workers have taken (one per round, roughly)")


class AdviceLinks(BaseModel):
    self: str
    runs: str
    cancel: str
    stream: str
    curves: str
    base_run: str | None


class AdviceListItem(BaseModel):
    id: uuid.UUID
    kind: AdviceKind = Field(
        description="`advice`: the cheapest fixes that meet a target; `remedy_check`: a "
        "run's remedies simulated, each with its measured effect"
    )
    name: str
    status: AdviceStatus
    cancel_requested: bool
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None
    base: AdviceBase
    progress: AdviceProgress
    error: RunError | None = Field(description="Why it failed")
    links: AdviceLinks


class AdviceOut(AdviceListItem):
    request: dict[str, Any] = Field(description="The advisor's (or check's) request, as stored")
    report: AdviceReport | CheckReport | None = Field(
        description="The answer so far (final once `status` is succeeded): for advice, the "
        "fixes that meet the target cheapest first, each with its measured outcome, interval "
        "and cost, the levers that cannot reach it and why, the best reachable value; for a "
        "remedy check, each remedy with its measured effect"
    )


class AdviceRunLinks(BaseModel):
    self: str


class AdviceRun(RunBrief):
    """One run the advice made: the candidate it answers (its changes to the base, the
    round that asked for it) and the run's own state."""

    key: str = Field(description="The candidate's key")
    round: int
    changes: dict[str, Any] = Field(description="Dotted path -> value, over the base scenario")
    observed: bool = Field(description="The advice has taken its outcome into account")
    links: AdviceRunLinks


class RunRemediesLinks(BaseModel):
    run: str
    check: str = Field(description="POST here to simulate the remedies")


class RunRemedies(BaseModel):
    """A run's remedies: predicted by its diagnosis, measured once checked."""

    run_id: uuid.UUID
    status: RunStatus
    predicted: dict[str, list[Remedy]] | None = Field(
        description="Per flow, the remedies its diagnosis offers with the effect the analytic "
        "bounds predict (null until the run has succeeded)"
    )
    check: AdviceOut | None = Field(
        description="The newest remedy check of the run: each remedy simulated on the run's "
        "seeds, with its measured effect; null until one is asked for"
    )
    links: RunRemediesLinks


class AdviceCurves(BaseModel):
    """Per lever, the target's metric against the lever's value: the measured points (the
    advice's own runs of that lever alone) beside the analytic bound curve."""

    advice_id: uuid.UUID
    target: Target | None
    unit: Literal["s", "bit/s"] | None = Field(description="The metric's unit")
    points: list[CurvePoint] = Field(
        description="A row per lever and value: `measured` null where nothing was run there"
    )
