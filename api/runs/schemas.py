"""Request and response bodies of /v1/runs (the Scenario itself is the engine's model)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine import Scenario
from engine.example import EXAMPLE_SCENARIO
from engine.result import CaptureSummary
from engine.scenario.common import Seed
from store.models import RunStatus
from store.run_events import EventKind


class RunCreate(BaseModel):
    """Exactly one of `scenario`, `scenario_id`, `preset`; optional `seed` overrides the
    scenario's; `cache: reuse` serves a result already computed for the same
    (scenario hash, seed, engine version), `refresh` always simulates."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"preset": "riverbed-t1-8k", "seed": 3},
                {"scenario": EXAMPLE_SCENARIO},
            ]
        },
    )

    scenario: Scenario | None = None
    scenario_id: uuid.UUID | None = None
    preset: str | None = Field(default=None, min_length=1, max_length=200)
    seed: Seed | None = None
    cache: Literal["reuse", "refresh"] = "reuse"

    @model_validator(mode="after")
    def _exactly_one_source(self) -> RunCreate:
        given = [f for f in ("scenario", "scenario_id", "preset") if getattr(self, f) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of 'scenario', 'scenario_id' or 'preset'"
                + (f" (got {', '.join(given)})" if given else "")
            )
        return self


class RunError(BaseModel):
    type: str
    message: str


class RunSummary(BaseModel):
    """The Result less its series and diagnosis (the `Result` schema, docs/scenario.md):
    each TCP flow's summary holds where its time went (`time`) and its round trip by hop
    (`rtt_split`)."""

    sim_time: float
    wall_time: float
    events: int
    warnings: list[str]
    flows: dict[str, Any]
    links: dict[str, Any]
    pvcs: dict[str, Any]
    engine_build: Literal["compiled", "pure"] | None = Field(
        default=None,
        description="Which build of the engine ran the simulation: `compiled` (mypyc) or "
        "`pure` (Python); the numbers are the same to the byte, only wall_time differs. "
        "Null for results stored before the engine recorded it",
    )
    extra: dict[str, Any] = Field(default_factory=dict)


#: A run's cache fields, as every list of runs documents them.
CacheHit = Annotated[bool, Field(description="Served from a stored result, not simulated")]
SourceRunId = Annotated[
    uuid.UUID | None, Field(description="The run whose result a cache hit serves")
]


class RunBrief(BaseModel):
    """What a list of a sweep's or an advice's runs shows of each run
    (``api.runs.present.run_brief``); each list adds what places the run in it, and its
    links."""

    id: uuid.UUID
    seed: int
    status: RunStatus
    progress: float
    cache_hit: CacheHit
    source_run_id: SourceRunId
    scenario_hash: str
    started_at: datetime | None
    finished_at: datetime | None
    error: RunError | None


class RunLinks(BaseModel):
    self: str
    series: str
    scenario: str
    cancel: str
    events: str


class RunListItem(BaseModel):
    id: uuid.UUID
    status: RunStatus
    progress: float = Field(description="0..1, as last reported by the worker")
    cancel_requested: bool
    scenario_id: uuid.UUID | None
    preset: str | None
    scenario_name: str
    scenario_hash: str
    seed: int
    engine_version: str
    cache_hit: CacheHit
    source_run_id: SourceRunId
    attempts: int
    created_at: datetime
    started_at: datetime | None
    heartbeat_at: datetime | None
    finished_at: datetime | None
    error: RunError | None
    links: RunLinks


class CaptureOut(CaptureSummary):
    """A packet capture the run holds (the scenario's `capture`): a libpcap file at `href`."""

    # The Result's summary of the capture, with its address. Open as every response model
    # here is (the Result's own model forbids fields it does not know).
    model_config = ConfigDict(extra="ignore")

    href: str = Field(description="GET it: application/vnd.tcpdump.pcap")


class RunOut(RunListItem):
    warnings: list[str] | None = Field(
        default=None,
        description="In the response to the POST that created the run: advisory findings "
        "about its scenario (e.g. a transfer that cannot finish within `duration`); the "
        "finished run's `summary.warnings` repeats them. Null elsewhere",
    )
    summary: RunSummary | None = Field(description="When succeeded")
    diagnosis: dict[str, Any] | None = Field(
        description="Per flow: what limits it (receive_window, link_capacity, loss, ...), "
        "the analytic bounds, and advice in plain words"
    )
    captures: list[CaptureOut] | None = Field(
        default=None, description="When succeeded: the packet captures it holds (libpcap)"
    )


class RunEventOut(BaseModel):
    at: datetime
    event: EventKind = Field(
        description="queued, cache_hit, enqueued, started, retried (taken from a lost worker), "
        "requeued (sent again by the reconciler), cancel_requested, succeeded, failed, cancelled"
    )
    attempt: int | None = Field(description="Which start of the run this concerns")
    worker: str | None = Field(description="The worker process (node:pid) concerned")
    detail: dict[str, Any] | None = Field(
        description="reason, error {type, message}, previous worker, write_attempts ..."
    )


class RunHistory(BaseModel):
    """Everything that happened to a run, oldest first: retries show here."""

    run_id: uuid.UUID
    status: RunStatus
    attempts: int
    events: list[RunEventOut]
