"""The schema: scenarios, runs, their results and their time-series.

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


class StoredScenario(Base):
    __tablename__ = "scenarios"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid7)
    name: Mapped[str] = mapped_column(String(200))
    scenario_hash: Mapped[str] = mapped_column(String(80), index=True)
    body: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_cache_key", "scenario_hash", "seed", "engine_version", "status"),
        Index("ix_runs_status_id", "status", "id"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid7)
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
    idempotency_key: Mapped[str | None] = mapped_column(String(255), unique=True)
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
