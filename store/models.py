"""The schema: tenants and their API keys, stored scenarios, sweeps, runs with their
history, results, time-series and packet captures, and multi-run workflows (advice, remedy
checks) with the runs they made.

Alembic migrations (``migrations/``) are the only way this reaches a database.
"""

from __future__ import annotations

import enum
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Enum,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    UniqueConstraint,
    Uuid,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from store.types import JSONDoc, UTCDateTime, utcnow, uuid7

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class RunStatus(enum.StrEnum):
    queued = "queued"
    running = "running"
    succeeded = "succeeded"
    failed = "failed"
    cancelled = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (RunStatus.succeeded, RunStatus.failed, RunStatus.cancelled)


#: Every row belongs to a tenant. With auth off (the embedded default) all work belongs to
#: this one, which the migration creates.
DEFAULT_TENANT_ID = uuid.UUID(int=0)


class Tenant(Base):
    __tablename__ = "tenants"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid7)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ApiKey(Base):
    """An API key of a tenant. Only a hash of the secret is kept; ``prefix`` (the key's
    first characters, not secret) lets a person tell keys apart and find one to revoke."""

    __tablename__ = "api_keys"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid7)
    tenant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(200))
    prefix: Mapped[str] = mapped_column(String(32), index=True)
    key_hash: Mapped[str] = mapped_column(String(128), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


def _tenant_column() -> Mapped[uuid.UUID]:
    return mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="RESTRICT"), index=True, default=DEFAULT_TENANT_ID
    )


class StoredScenario(Base):
    __tablename__ = "scenarios"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid7)
    tenant_id: Mapped[uuid.UUID] = _tenant_column()
    name: Mapped[str] = mapped_column(String(200))
    scenario_hash: Mapped[str] = mapped_column(String(80), index=True)
    body: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_cache_key", "scenario_hash", "seed", "engine_version", "status"),
        Index("ix_runs_status_id", "status", "id"),
        # A tenant's runs newest first (the runs list), and its active runs (the limit).
        Index("ix_runs_tenant_id_id", "tenant_id", "id"),
        Index("ix_runs_tenant_id_status", "tenant_id", "status"),
        # A sweep's runs, and whether it has any left to go (store.sweeps.STATE_PROBE).
        Index("ix_runs_sweep_id_status", "sweep_id", "status"),
        UniqueConstraint("tenant_id", "idempotency_key", name="uq_runs_tenant_idempotency_key"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid7)
    tenant_id: Mapped[uuid.UUID] = _tenant_column()
    # A run of a sweep: which sweep, which point of it, which replication (0-based).
    sweep_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid, ForeignKey("sweeps.id", ondelete="CASCADE")
    )
    point_index: Mapped[int | None] = mapped_column(Integer)
    replication: Mapped[int | None] = mapped_column(Integer)
    status: Mapped[RunStatus] = mapped_column(
        Enum(RunStatus, name="run_status", native_enum=False, length=16, validate_strings=True),
        default=RunStatus.queued,
    )
    scenario_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid, ForeignKey("scenarios.id", ondelete="SET NULL"), index=True
    )
    preset: Mapped[str | None] = mapped_column(String(200), index=True)
    scenario_name: Mapped[str] = mapped_column(String(200))
    scenario_hash: Mapped[str] = mapped_column(String(80))
    scenario: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    seed: Mapped[int] = mapped_column(BigInteger)
    engine_version: Mapped[str] = mapped_column(String(40))

    # A cache hit owns no result: it points at the run whose result it serves.
    cache_hit: Mapped[bool] = mapped_column(Boolean, default=False)
    source_run_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid, ForeignKey("runs.id", ondelete="RESTRICT")
    )
    idempotency_key: Mapped[str | None] = mapped_column(String(255))
    request_fingerprint: Mapped[str | None] = mapped_column(String(80))

    progress: Mapped[float] = mapped_column(Float, default=0.0)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    task_id: Mapped[str | None] = mapped_column(String(64))
    worker: Mapped[str | None] = mapped_column(String(255))

    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    enqueued_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    @property
    def result_run_id(self) -> uuid.UUID:
        """The run whose result and series this run shows."""
        return self.source_run_id or self.id


class Sweep(Base):
    """A study submitted to the service: its spec, the expanded points, and one run per
    point and seed (``Run.sweep_id``). Status is derived from its runs."""

    __tablename__ = "sweeps"
    __table_args__ = (
        UniqueConstraint("tenant_id", "idempotency_key", name="uq_sweeps_tenant_idempotency_key"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid7)
    tenant_id: Mapped[uuid.UUID] = _tenant_column()
    name: Mapped[str] = mapped_column(String(200))
    preset: Mapped[str | None] = mapped_column(String(200), index=True)
    spec: Mapped[dict[str, Any]] = mapped_column(JSONDoc)  # the study as submitted
    # [{index, parameters, scenario_hash, is_baseline}], in point order
    points: Mapped[list[dict[str, Any]]] = mapped_column(JSONDoc)
    seeds: Mapped[list[int]] = mapped_column(JSONDoc)
    baseline_index: Mapped[int | None] = mapped_column(Integer)
    run_count: Mapped[int] = mapped_column(Integer)
    cache: Mapped[str] = mapped_column(String(16), default="reuse")
    idempotency_key: Mapped[str | None] = mapped_column(String(255))
    request_fingerprint: Mapped[str | None] = mapped_column(String(80))
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class RunEvent(Base):
    """A run's history: one row per thing that happened to it (queued, started by a
    worker, taken back from a lost worker, retried, finished), oldest first."""

    __tablename__ = "run_events"

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    run_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("runs.id", ondelete="CASCADE"), index=True
    )
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    event: Mapped[str] = mapped_column(String(32))
    attempt: Mapped[int | None] = mapped_column(Integer)
    worker: Mapped[str | None] = mapped_column(String(255))
    detail: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc)


class RunResult(Base):
    """A run's Result less its series: the summary figures and the diagnosis."""

    __tablename__ = "results"

    run_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True
    )
    engine_version: Mapped[str] = mapped_column(String(40))
    scenario_hash: Mapped[str] = mapped_column(String(80))
    seed: Mapped[int] = mapped_column(BigInteger)
    sim_time: Mapped[float] = mapped_column(Float)
    wall_time: Mapped[float] = mapped_column(Float)
    events: Mapped[int] = mapped_column(BigInteger)
    warnings: Mapped[list[str]] = mapped_column(JSONDoc)
    flows: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    links: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    pvcs: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    diagnosis: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    extra: Mapped[dict[str, Any]] = mapped_column(JSONDoc)  # Result fields added later
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class RunSeries(Base):
    """One time-series of one run, as two packed arrays (see ``store.codec``)."""

    __tablename__ = "series"

    run_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    unit: Mapped[str] = mapped_column(String(40))
    length: Mapped[int] = mapped_column(Integer)
    t_start: Mapped[float | None] = mapped_column(Float)
    t_end: Mapped[float | None] = mapped_column(Float)
    codec: Mapped[str] = mapped_column(String(20))
    t: Mapped[bytes] = mapped_column(LargeBinary)
    v: Mapped[bytes] = mapped_column(LargeBinary)
    # How the recorder thinned it to its share of the run's points (engine.result.Thinning);
    # NULL: every point it recorded.
    thinning: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc)


class RunCapture(Base):
    """One packet capture of a run: a libpcap file, deflated (its zero payloads and
    repeating headers shrink it several times), as ``engine.Result.pcap`` gives it."""

    __tablename__ = "captures"

    run_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True
    )
    link: Mapped[str] = mapped_column(String(64), primary_key=True)
    direction: Mapped[str] = mapped_column(String(8), primary_key=True)  # a_to_b|b_to_a|both
    packets: Mapped[int] = mapped_column(Integer)
    size: Mapped[int] = mapped_column(BigInteger)  # bytes of the libpcap file
    sha256: Mapped[str] = mapped_column(String(64))
    codec: Mapped[str] = mapped_column(String(20))  # "zlib": the file deflated
    data: Mapped[bytes] = mapped_column(LargeBinary)


#: A workflow goes through a run's states, and has finished when a run would have: queued
#: (created by the API, not advanced by a worker yet), running, then succeeded, failed or
#: cancelled. Its column is a type of its own ("workflow_status") all the same.
WorkflowStatus = RunStatus


class StoredWorkflow(Base):
    """A multi-run workflow (``engine.workflow``): what was asked (`kind`, the base scenario,
    `request`), the pure workflow's `state` between steps and its `report` so far. The worker
    advances it (``worker.workflows``) as the runs it asked for finish; ``WorkflowRun`` links
    each of them to the candidate it answers."""

    __tablename__ = "workflows"
    __table_args__ = (
        UniqueConstraint(
            "tenant_id", "idempotency_key", name="uq_workflows_tenant_idempotency_key"
        ),
        Index("ix_workflows_tenant_id_kind_id", "tenant_id", "kind", "id"),
        Index("ix_workflows_status_updated_at", "status", "updated_at"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid7)
    tenant_id: Mapped[uuid.UUID] = _tenant_column()
    kind: Mapped[str] = mapped_column(String(32))  # advice | remedy_check
    status: Mapped[WorkflowStatus] = mapped_column(
        Enum(
            WorkflowStatus,
            name="workflow_status",
            native_enum=False,
            length=16,
            validate_strings=True,
        ),
        default=WorkflowStatus.queued,
    )
    name: Mapped[str] = mapped_column(String(200))
    # Where the base scenario came from: a run (a remedy check's, or advice asked from a
    # run's page), a stored scenario, a preset, or inline (all null).
    base_run_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid, ForeignKey("runs.id", ondelete="SET NULL"), index=True
    )
    scenario_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid, ForeignKey("scenarios.id", ondelete="SET NULL")
    )
    preset: Mapped[str | None] = mapped_column(String(200))
    scenario_name: Mapped[str] = mapped_column(String(200))
    scenario: Mapped[dict[str, Any]] = mapped_column(JSONDoc)  # the base, in SI, seed set
    scenario_hash: Mapped[str] = mapped_column(String(80))
    seed: Mapped[int] = mapped_column(BigInteger)  # the base's: its runs' first seed
    request: Mapped[dict[str, Any]] = mapped_column(JSONDoc)  # the workflow's own request
    run_budget: Mapped[int] = mapped_column(Integer)
    cache: Mapped[str] = mapped_column(String(16), default="reuse")
    engine_version: Mapped[str] = mapped_column(String(40))
    state: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc)  # Workflow.state()
    report: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc)  # Workflow.report()
    # The advisor's curves (engine.advice.curves): metric against each lever's value.
    curves: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONDoc)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc)
    steps: Mapped[int] = mapped_column(Integer, default=0)  # advances taken
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    idempotency_key: Mapped[str | None] = mapped_column(String(255))
    request_fingerprint: Mapped[str | None] = mapped_column(String(80))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class WorkflowRun(Base):
    """One run a workflow made for one of its candidates: ``(workflow, key, seed)`` is the
    primary key, so a step that is repeated (a redelivered message, two advances at once)
    cannot make a candidate's run twice. `observed`: the workflow has been told its outcome."""

    __tablename__ = "workflow_runs"

    workflow_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("workflows.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    seed: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    run_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("runs.id", ondelete="CASCADE"), index=True, unique=True
    )
    round: Mapped[int] = mapped_column(Integer)
    changes: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    observed: Mapped[bool] = mapped_column(Boolean, default=False)
