"""captures: a run's packet captures (libpcap files, deflated)

Revision ID: 0a7e5b3c0015
Revises: 0a7e5b3c0003
Create Date: 2026-11-23 06:00:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0a7e5b3c0015"
down_revision: str | None = "0a7e5b3c0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "captures",
        sa.Column("run_id", sa.Uuid(), nullable=False),
        sa.Column("link", sa.String(length=64), nullable=False),
        sa.Column("direction", sa.String(length=8), nullable=False),
        sa.Column("packets", sa.Integer(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("codec", sa.String(length=20), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_captures_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "link", "direction", name=op.f("pk_captures")),
    )


def downgrade() -> None:
    op.drop_table("captures")
