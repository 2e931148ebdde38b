"""A job run's attempt: 1 for a time's first run, 2 and up for its retries (issue 29).

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (nullable) on both databases: no batch rebuild of the table. Rows
    # already there were first runs; NULL reads as 1.
    op.add_column("job_runs", sa.Column("attempt", sa.Integer, nullable=True))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN: SQLite 3.35 and later and PostgreSQL, without a rebuild.
    op.execute("ALTER TABLE job_runs DROP COLUMN attempt")
