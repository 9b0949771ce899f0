"""workflows: multi-run workflows (advice, remedy checks) and the runs each made

Revision ID: 0a7e5b3c0023
Revises: 0a7e5b3c0027
Create Date: 2026-11-26 15:51:27.346126+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import store.types

revision: str = "0a7e5b3c0023"
down_revision: str | None = "0a7e5b3c0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "workflows",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column(
            "status",
            sa.Enum(
                "queued",
                "running",
                "succeeded",
                "failed",
                "cancelled",
                name="workflow_status",
                native_enum=False,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("base_run_id", sa.Uuid(), nullable=True),
        sa.Column("scenario_id", sa.Uuid(), nullable=True),
        sa.Column("preset", sa.String(length=200), nullable=True),
        sa.Column("scenario_name", sa.String(length=200), nullable=False),
        sa.Column("scenario", JSON_DOC, nullable=False),
        sa.Column("scenario_hash", sa.String(length=80), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("request", JSON_DOC, nullable=False),
        sa.Column("run_budget", sa.Integer(), nullable=False),
        sa.Column("cache", sa.String(length=16), nullable=False),
        sa.Column("engine_version", sa.String(length=40), nullable=False),
        sa.Column("state", JSON_DOC, nullable=True),
        sa.Column("report", JSON_DOC, nullable=True),
        sa.Column("curves", JSON_DOC, nullable=True),
        sa.Column("error", JSON_DOC, nullable=True),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False),
        sa.Column("idempotency_key", sa.String(length=255), nullable=True),
        sa.Column("request_fingerprint", sa.String(length=80), nullable=True),
        sa.Column("created_at", store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("finished_at", store.types.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["base_run_id"],
            ["runs.id"],
            name=op.f("fk_workflows_base_run_id_runs"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["scenario_id"],
            ["scenarios.id"],
            name=op.f("fk_workflows_scenario_id_scenarios"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_workflows_tenant_id_tenants"),
            ondelete="RESTRICT",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflows")),
        sa.UniqueConstraint(
            "tenant_id", "idempotency_key", name="uq_workflows_tenant_idempotency_key"
        ),
    )
    op.create_index(op.f("ix_workflows_base_run_id"), "workflows", ["base_run_id"], unique=False)
    op.create_index(
        "ix_workflows_status_updated_at", "workflows", ["status", "updated_at"], unique=False
    )
    op.create_index(op.f("ix_workflows_tenant_id"), "workflows", ["tenant_id"], unique=False)
    op.create_index(
        "ix_workflows_tenant_id_kind_id", "workflows", ["tenant_id", "kind", "id"], unique=False
    )
    op.create_table(
        "workflow_runs",
        sa.Column("workflow_id", sa.Uuid(), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("changes", JSON_DOC, nullable=False),
        sa.Column("observed", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_workflow_runs_run_id_runs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["workflow_id"],
            ["workflows.id"],
            name=op.f("fk_workflow_runs_workflow_id_workflows"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("workflow_id", "key", "seed", name=op.f("pk_workflow_runs")),
    )
    op.create_index(op.f("ix_workflow_runs_run_id"), "workflow_runs", ["run_id"], unique=True)


def downgrade() -> None:
    op.drop_index(op.f("ix_workflow_runs_run_id"), table_name="workflow_runs")
    op.drop_table("workflow_runs")
    op.drop_index("ix_workflows_tenant_id_kind_id", table_name="workflows")
    op.drop_index(op.f("ix_workflows_tenant_id"), table_name="workflows")
    op.drop_index("ix_workflows_status_updated_at", table_name="workflows")
    op.drop_index(op.f("ix_workflows_base_run_id"), table_name="workflows")
    op.drop_table("workflows")
