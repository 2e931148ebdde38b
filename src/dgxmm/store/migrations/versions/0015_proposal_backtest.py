"""A proposal keeps its backtest: per held-out week, what it would have freed and cost.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (nullable) on both databases: no batch rebuild of the table.
    op.add_column("schedule_proposals", sa.Column("backtest", sa.Text, nullable=True))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN: SQLite 3.35 and later and PostgreSQL, without a rebuild.
    op.execute("ALTER TABLE schedule_proposals DROP COLUMN backtest")
