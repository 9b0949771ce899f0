"""tenants keys sweeps run history

Revision ID: 0a7e5b3c0002
Revises: c8c8836bcc5b
Create Date: 2026-11-22 17:47:49.116816+00:00
"""

import uuid
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import store.types

revision: str = "0a7e5b3c0002"
down_revision: str | None = "c8c8836bcc5b"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
DEFAULT_TENANT_ID = uuid.UUID(int=0)  # store.models.DEFAULT_TENANT_ID, frozen here


def _own_existing_rows(table: str) -> None:
    """Rows made before tenants existed belong to the default tenant."""
    rows = sa.table(table, sa.column("tenant_id", sa.Uuid()))
    op.execute(rows.update().values(tenant_id=DEFAULT_TENANT_ID))


def upgrade() -> None:
    tenants = op.create_table(
        "tenants",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("created_at", store.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tenants")),
        sa.UniqueConstraint("name", name=op.f("uq_tenants_name")),
    )
    op.bulk_insert(
        tenants, [{"id": DEFAULT_TENANT_ID, "name": "default", "created_at": store.types.utcnow()}]
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("prefix", sa.String(length=32), nullable=False),
        sa.Column("key_hash", sa.String(length=128), nullable=False),
        sa.Column("created_at", store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", store.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_used_at", store.types.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_api_keys_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("key_hash", name=op.f("uq_api_keys_key_hash")),
    )
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_keys_prefix"), ["prefix"], unique=False)
        batch_op.create_index(batch_op.f("ix_api_keys_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "sweeps",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("preset", sa.String(length=200), nullable=True),
        sa.Column("spec", JSON_DOC, nullable=False),
        sa.Column("points", JSON_DOC, nullable=False),
        sa.Column("seeds", JSON_DOC, nullable=False),
        sa.Column("baseline_index", sa.Integer(), nullable=True),
        sa.Column("run_count", sa.Integer(), nullable=False),
        sa.Column("cache", sa.String(length=16), nullable=False),
        sa.Column("idempotency_key", sa.String(length=255), nullable=True),
        sa.Column("request_fingerprint", sa.String(length=80), nullable=True),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False),
        sa.Column("created_at", store.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_sweeps_tenant_id_tenants"),
            ondelete="RESTRICT",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sweeps")),
        sa.UniqueConstraint(
            "tenant_id", "idempotency_key", name="uq_sweeps_tenant_idempotency_key"
        ),
    )
    with op.batch_alter_table("sweeps", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_sweeps_preset"), ["preset"], unique=False)
        batch_op.create_index(batch_op.f("ix_sweeps_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "run_events",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("run_id", sa.Uuid(), nullable=False),
        sa.Column("at", store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("event", sa.String(length=32), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=True),
        sa.Column("worker", sa.String(length=255), nullable=True),
        sa.Column("detail", JSON_DOC, nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_run_events_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_events")),
    )
    with op.batch_alter_table("run_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_run_events_run_id"), ["run_id"], unique=False)

    for table in ("runs", "scenarios"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column("tenant_id", sa.Uuid(), nullable=True))
        _own_existing_rows(table)

    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.alter_column("tenant_id", existing_type=sa.Uuid(), nullable=False)
        batch_op.add_column(sa.Column("sweep_id", sa.Uuid(), nullable=True))
        batch_op.add_column(sa.Column("point_index", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("replication", sa.Integer(), nullable=True))
        batch_op.drop_constraint(batch_op.f("uq_runs_idempotency_key"), type_="unique")
        batch_op.create_index(batch_op.f("ix_runs_sweep_id"), ["sweep_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_tenant_id"), ["tenant_id"], unique=False)
        batch_op.create_unique_constraint(
            "uq_runs_tenant_idempotency_key", ["tenant_id", "idempotency_key"]
        )
        batch_op.create_foreign_key(
            batch_op.f("fk_runs_sweep_id_sweeps"),
            "sweeps",
            ["sweep_id"],
            ["id"],
            ondelete="CASCADE",
        )
        batch_op.create_foreign_key(
            batch_op.f("fk_runs_tenant_id_tenants"),
            "tenants",
            ["tenant_id"],
            ["id"],
            ondelete="RESTRICT",
        )

    with op.batch_alter_table("scenarios", schema=None) as batch_op:
        batch_op.alter_column("tenant_id", existing_type=sa.Uuid(), nullable=False)
        batch_op.create_index(batch_op.f("ix_scenarios_tenant_id"), ["tenant_id"], unique=False)
        batch_op.create_foreign_key(
            batch_op.f("fk_scenarios_tenant_id_tenants"),
            "tenants",
            ["tenant_id"],
            ["id"],
            ondelete="RESTRICT",
        )


def downgrade() -> None:
    with op.batch_alter_table("scenarios", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_scenarios_tenant_id_tenants"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_scenarios_tenant_id"))
        batch_op.drop_column("tenant_id")

    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_runs_tenant_id_tenants"), type_="foreignkey")
        batch_op.drop_constraint(batch_op.f("fk_runs_sweep_id_sweeps"), type_="foreignkey")
        batch_op.drop_constraint("uq_runs_tenant_idempotency_key", type_="unique")
        batch_op.drop_index(batch_op.f("ix_runs_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_runs_sweep_id"))
        batch_op.create_unique_constraint(
            batch_op.f("uq_runs_idempotency_key"), ["idempotency_key"]
        )
        batch_op.drop_column("replication")
        batch_op.drop_column("point_index")
        batch_op.drop_column("sweep_id")
        batch_op.drop_column("tenant_id")

    with op.batch_alter_table("run_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_run_events_run_id"))

    op.drop_table("run_events")
    with op.batch_alter_table("sweeps", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_sweeps_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_sweeps_preset"))

    op.drop_table("sweeps")
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_keys_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_api_keys_prefix"))

    op.drop_table("api_keys")
    op.drop_table("tenants")
