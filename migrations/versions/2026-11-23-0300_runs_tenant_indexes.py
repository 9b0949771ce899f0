"""runs: indexes for a tenant's runs list and its count of active runs

Revision ID: 0a7e5b3c0003
Revises: 0a7e5b3c0002
Create Date: 2026-11-23 03:00:00+00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0a7e5b3c0003"
down_revision: str | None = "0a7e5b3c0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_runs_tenant_id_id", "runs", ["tenant_id", "id"])
    op.create_index("ix_runs_tenant_id_status", "runs", ["tenant_id", "status"])


def downgrade() -> None:
    op.drop_index("ix_runs_tenant_id_status", table_name="runs")
    op.drop_index("ix_runs_tenant_id_id", table_name="runs")
