"""series.thinning: how the recorder thinned a series to its share of the run's points

Revision ID: 0a7e5b3c0027
Revises: 0a7e5b3c0015
Create Date: 2026-11-26 12:00:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0a7e5b3c0027"
down_revision: str | None = "0a7e5b3c0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("series") as batch:
        batch.add_column(
            sa.Column(
                "thinning",
                sa.JSON().with_variant(postgresql.JSONB(), "postgresql"),
                nullable=True,
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("series") as batch:
        batch.drop_column("thinning")
