"""runs: index a sweep's runs by status, for a polled sweep's state in two index probes

A dashboard polls a running sweep's state every second per panel; whether the sweep still
has runs to go, and whether any has started, are then two index probes instead of a read
of every run's row (store.sweeps.STATE_PROBE). The new index leads with sweep_id, so it
serves every lookup the single-column index did, which it replaces.

Revision ID: 0a7e5b3c0028
Revises: 0a7e5b3c0023
Create Date: 2026-11-27 19:30:00+00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0a7e5b3c0028"
down_revision: str | None = "0a7e5b3c0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_runs_sweep_id_status", "runs", ["sweep_id", "status"])
    op.drop_index("ix_runs_sweep_id", table_name="runs")


def downgrade() -> None:
    op.create_index("ix_runs_sweep_id", "runs", ["sweep_id"])
    op.drop_index("ix_runs_sweep_id_status", table_name="runs")
