"""A proposal may propose the measured wake lead beside its schedules (issue 25).

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (nullable) on both databases: no batch rebuild of the table.
    op.add_column("schedule_proposals", sa.Column("wake_lead", sa.String(20), nullable=True))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN: SQLite 3.35 and later and PostgreSQL, without a rebuild.
    op.execute("ALTER TABLE schedule_proposals DROP COLUMN wake_lead")
