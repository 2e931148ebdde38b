"""Each deployment's sleep: its timeout and vLLM's sleep level (1 or 2).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN on both databases: a batch rebuild of the table on SQLite would drop
    # the table that the deployment events, rollups and schedules cascade from.
    op.add_column(
        "deployments",
        sa.Column("sleep_timeout_s", sa.Float, nullable=False, server_default="300"),
    )
    op.add_column(
        "deployments", sa.Column("sleep_level", sa.Integer, nullable=False, server_default="1")
    )


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN: SQLite 3.35 and later and PostgreSQL, without a rebuild.
    op.execute("ALTER TABLE deployments DROP COLUMN sleep_level")
    op.execute("ALTER TABLE deployments DROP COLUMN sleep_timeout_s")
