"""The documents the client reads, as pydantic models. Written by hand to mirror
``openapi/openapi.json`` (each model's ``OPENAPI`` names its schema there);
``tests/unit/test_client_models.py`` fails when the two drift apart.

Unknown fields are ignored rather than refused: a newer server may add fields, and an
older client must keep reading its answers."""

from __future__ import annotations

import enum
import uuid
from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Doc(BaseModel):
    model_config = ConfigDict(extra="ignore")
    OPENAPI: ClassVar[str]


class RunStatus(enum.StrEnum):
    queued = "queued"
    running = "running"
    succeeded = "succeeded"
    failed = "failed"
    cancelled = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (RunStatus.succeeded, RunStatus.failed, RunStatus.cancelled)


class FieldError(_Doc):
    OPENAPI = "FieldError"
    loc: list[str | int]
    msg: str
    type: str
    pointer: str | None = None


class Problem(_Doc):
    """RFC 9457 problem details, as every error of the API is."""

    OPENAPI = "Problem"
    type: str
    title: str
    status: int
    detail: str | None = None
    instance: str | None = None
    errors: list[FieldError] | None = None


class PresetOut(_Doc):
    OPENAPI = "PresetOut"
    name: str
    description: str
    kind: str
    source: str


class RunError(_Doc):
    OPENAPI = "RunError"
    type: str
    message: str


class RunLinks(_Doc):
    OPENAPI = "RunLinks"
    self: str
    series: str
    scenario: str
    cancel: str
    events: str


class RunSummary(_Doc):
    OPENAPI = "RunSummary"
    sim_time: float
    wall_time: float
    events: int
    warnings: list[str]
    flows: dict[str, Any]
    links: dict[str, Any]
    pvcs: dict[str, Any]
    engine_build: Literal["compiled", "pure"] | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class CaptureOut(_Doc):
    OPENAPI = "CaptureOut"
    link: str
    direction: Literal["a_to_b", "b_to_a", "both"]
    at: Literal["a", "b"] = "a"
    packets: int
    missed: int
    snaplen: int
    bytes: int
    sha256: str
    href: str


class RunOut(_Doc):
    OPENAPI = "RunOut"
    id: uuid.UUID
    status: RunStatus
    progress: float
    cancel_requested: bool
    scenario_id: uuid.UUID | None
    preset: str | None
    scenario_name: str
    scenario_hash: str
    seed: int
    engine_version: str
    cache_hit: bool
    source_run_id: uuid.UUID | None
    attempts: int
    created_at: datetime
    started_at: datetime | None
    heartbeat_at: datetime | None
    finished_at: datetime | None
    error: RunError | None
    links: RunLinks
    summary: RunSummary | None
    diagnosis: dict[str, Any] | None
    warnings: list[str] | None = None  # in the answer to the POST that created it
    captures: list[CaptureOut] | None = None  # packet captures, once succeeded


class Thinning(_Doc):
    OPENAPI = "Thinning"
    method: Literal["bucket_m4", "stride_mean", "every_other", "pair_mean"]
    halvings: int
    cap: int
    min_spacing: float | None = None
    bucket: float | None = None
    origin: float | None = None
    samples_per_point: int | None = None


class SeriesInfo(_Doc):
    OPENAPI = "SeriesInfo"
    key: str
    unit: str
    length: int
    t_start: float | None
    t_end: float | None
    thinning: Thinning | None = None


class SeriesIndex(_Doc):
    OPENAPI = "SeriesIndex"
    run_id: str
    series: list[SeriesInfo]
    partial: bool = False  # the run is still running: the series so far


class SeriesData(_Doc):
    OPENAPI = "SeriesData"
    key: str
    unit: str
    length: int
    points: int
    downsampled: bool
    method: str
    t: list[float]
    v: list[float | None]
    partial: bool = False  # the run is still running: the points so far


class RunCounts(_Doc):
    OPENAPI = "RunCounts"
    queued: int
    running: int
    succeeded: int
    failed: int
    cancelled: int


class SweepProgress(_Doc):
    OPENAPI = "SweepProgress"
    counts: RunCounts
    finished: int
    fraction: float
    eta_seconds: float | None
    eta_method: str | None


class SweepLinks(_Doc):
    OPENAPI = "SweepLinks"
    self: str
    runs: str
    summary: str
    cancel: str


class SweepPoint(_Doc):
    OPENAPI = "SweepPoint"
    index: int
    parameters: dict[str, Any]
    is_baseline: bool
    scenario_hash: str
    est_events: int


SweepStatus = Literal["queued", "running", "succeeded", "partial", "failed", "cancelled"]
SWEEP_FINISHED = {"succeeded", "partial", "failed", "cancelled"}


class SweepOut(_Doc):
    OPENAPI = "SweepOut"
    id: uuid.UUID
    name: str
    preset: str | None
    status: SweepStatus
    cancel_requested: bool
    run_count: int
    cache: Literal["reuse", "refresh"]
    cache_hits: int
    simulations: int
    created_at: datetime
    progress: SweepProgress
    links: SweepLinks
    mode: Literal["grid", "zip"]
    replications: int
    seeds: list[int]
    baseline_index: int | None
    parameters: list[str]
    spec: dict[str, Any]
    points: list[SweepPoint]
    warnings: list[str] | None = None  # in the answer to the POST that created it


class SweepState(_Doc):
    """A sweep's state alone (GET /v1/sweeps/{id}/progress): what ``Sweep.wait`` polls."""

    OPENAPI = "SweepState"
    id: uuid.UUID
    status: SweepStatus
    cancel_requested: bool
    run_count: int
    cache_hits: int
    progress: SweepProgress
    finished_at: datetime | None


class SweepRunLinks(_Doc):
    OPENAPI = "SweepRunLinks"
    self: str


class SweepRun(_Doc):
    """One of a sweep's runs (GET /v1/sweeps/{id}/runs)."""

    OPENAPI = "SweepRun"
    id: uuid.UUID
    point_index: int
    replication: int
    seed: int
    status: RunStatus
    progress: float
    cache_hit: bool
    source_run_id: uuid.UUID | None
    scenario_hash: str
    started_at: datetime | None
    finished_at: datetime | None
    error: RunError | None
    links: SweepRunLinks


AdviceStatus = Literal["queued", "running", "succeeded", "failed", "cancelled"]
ADVICE_FINISHED = {"succeeded", "failed", "cancelled"}


class AdviceBase(_Doc):
    OPENAPI = "AdviceBase"
    run_id: uuid.UUID | None
    scenario_id: uuid.UUID | None
    preset: str | None
    scenario_name: str
    scenario_hash: str
    seed: int


class AdviceProgress(_Doc):
    OPENAPI = "AdviceProgress"
    counts: RunCounts
    runs: int
    run_budget: int
    cache_hits: int
    fraction: float
    steps: int


class AdviceLinks(_Doc):
    OPENAPI = "AdviceLinks"
    self: str
    runs: str
    cancel: str
    stream: str
    curves: str
    base_run: str | None


class AdviceListItem(_Doc):
    OPENAPI = "AdviceListItem"
    id: uuid.UUID
    kind: Literal["advice", "remedy_check"]
    name: str
    status: AdviceStatus
    cancel_requested: bool
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None
    base: AdviceBase
    progress: AdviceProgress
    error: RunError | None
    links: AdviceLinks


class AdviceOut(AdviceListItem):
    """An advice with its request and report. The report (the engine's ``AdviceReport`` or
    ``CheckReport``: fixes, rejections, curves, sentences) is read as plain JSON, so this
    model is checked against the API's without it (``AdviceListItem``)."""

    OPENAPI = "AdviceOut"
    request: dict[str, Any]
    report: dict[str, Any] | None


#: Every model checked against the OpenAPI document.
MODELS: list[type[_Doc]] = [
    SweepState,
    SweepRunLinks,
    SweepRun,
    FieldError,
    Problem,
    PresetOut,
    RunError,
    RunLinks,
    RunSummary,
    CaptureOut,
    RunOut,
    Thinning,
    SeriesInfo,
    SeriesIndex,
    SeriesData,
    RunCounts,
    SweepProgress,
    SweepLinks,
    SweepPoint,
    SweepOut,
    AdviceBase,
    AdviceProgress,
    AdviceLinks,
    AdviceListItem,
]
