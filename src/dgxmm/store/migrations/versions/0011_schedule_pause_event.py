"""A schedule paused by a timed-out sleep remembers that sleep's event, to lift the pause.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (nullable) on both databases: no batch rebuild of the table.
    op.add_column(
        "deployment_schedules", sa.Column("paused_for_event", sa.BigInteger, nullable=True)
    )


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN: SQLite 3.35 and later and PostgreSQL, without a rebuild.
    op.execute("ALTER TABLE deployment_schedules DROP COLUMN paused_for_event")
