"""initial schema

Revision ID: c8c8836bcc5b
Revises:
Create Date: 2026-11-22 17:14:07.854539+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import store.types

revision: str = "c8c8836bcc5b"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "scenarios",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("scenario_hash", sa.String(length=80), nullable=False),
        sa.Column("body", JSON_DOC, nullable=False),
        sa.Column("created_at", store.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scenarios")),
    )
    with op.batch_alter_table("scenarios", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_scenarios_scenario_hash"), ["scenario_hash"], unique=False
        )

    op.create_table(
        "runs",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column(
            "status",
            sa.Enum(
                "queued",
                "running",
                "succeeded",
                "failed",
                "cancelled",
                name="run_status",
                native_enum=False,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("scenario_id", sa.Uuid(), nullable=True),
        sa.Column("preset", sa.String(length=200), nullable=True),
        sa.Column("scenario_name", sa.String(length=200), nullable=False),
        sa.Column("scenario_hash", sa.String(length=80), nullable=False),
        sa.Column("scenario", JSON_DOC, nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("engine_version", sa.String(length=40), nullable=False),
        sa.Column("cache_hit", sa.Boolean(), nullable=False),
        sa.Column("source_run_id", sa.Uuid(), nullable=True),
        sa.Column("idempotency_key", sa.String(length=255), nullable=True),
        sa.Column("request_fingerprint", sa.String(length=80), nullable=True),
        sa.Column("progress", sa.Float(), nullable=False),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False),
        sa.Column("error", JSON_DOC, nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=True),
        sa.Column("worker", sa.String(length=255), nullable=True),
        sa.Column("created_at", store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("enqueued_at", store.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("started_at", store.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("heartbeat_at", store.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("finished_at", store.types.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["scenario_id"],
            ["scenarios.id"],
            name=op.f("fk_runs_scenario_id_scenarios"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["source_run_id"],
            ["runs.id"],
            name=op.f("fk_runs_source_run_id_runs"),
            ondelete="RESTRICT",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_runs_idempotency_key")),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index(
            "ix_runs_cache_key", ["scenario_hash", "seed", "engine_version", "status"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_runs_preset"), ["preset"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_scenario_id"), ["scenario_id"], unique=False)
        batch_op.create_index("ix_runs_status_id", ["status", "id"], unique=False)

    op.create_table(
        "results",
        sa.Column("run_id", sa.Uuid(), nullable=False),
        sa.Column("engine_version", sa.String(length=40), nullable=False),
        sa.Column("scenario_hash", sa.String(length=80), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("sim_time", sa.Float(), nullable=False),
        sa.Column("wall_time", sa.Float(), nullable=False),
        sa.Column("events", sa.BigInteger(), nullable=False),
        sa.Column("warnings", JSON_DOC, nullable=False),
        sa.Column("flows", JSON_DOC, nullable=False),
        sa.Column("links", JSON_DOC, nullable=False),
        sa.Column("pvcs", JSON_DOC, nullable=False),
        sa.Column("diagnosis", JSON_DOC, nullable=False),
        sa.Column("extra", JSON_DOC, nullable=False),
        sa.Column("created_at", store.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_results_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_results")),
    )
    op.create_table(
        "series",
        sa.Column("run_id", sa.Uuid(), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("unit", sa.String(length=40), nullable=False),
        sa.Column("length", sa.Integer(), nullable=False),
        sa.Column("t_start", sa.Float(), nullable=True),
        sa.Column("t_end", sa.Float(), nullable=True),
        sa.Column("codec", sa.String(length=20), nullable=False),
        sa.Column("t", sa.LargeBinary(), nullable=False),
        sa.Column("v", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_series_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "key", name=op.f("pk_series")),
    )


def downgrade() -> None:
    op.drop_table("series")
    op.drop_table("results")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index("ix_runs_status_id")
        batch_op.drop_index(batch_op.f("ix_runs_scenario_id"))
        batch_op.drop_index(batch_op.f("ix_runs_preset"))
        batch_op.drop_index("ix_runs_cache_key")

    op.drop_table("runs")
    with op.batch_alter_table("scenarios", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_scenarios_scenario_hash"))

    op.drop_table("scenarios")
