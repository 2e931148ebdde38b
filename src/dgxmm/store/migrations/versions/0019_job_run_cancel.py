"""A job run's cancel: who asked for it, and who cancelled it (issue 29, point 4).

``cancel_requested_by`` is written by whichever instance answers the cancel request; the
instance that runs the job polls its runs under way for it and cancels the run.
``cancelled_by`` is written with the run's end when it ended cancelled.

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (nullable) on both databases: no batch rebuild of the table.
    op.add_column("job_runs", sa.Column("cancel_requested_by", sa.String(200), nullable=True))
    op.add_column("job_runs", sa.Column("cancelled_by", sa.String(200), nullable=True))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN: SQLite 3.35 and later and PostgreSQL, without a rebuild.
    op.execute("ALTER TABLE job_runs DROP COLUMN cancelled_by")
    op.execute("ALTER TABLE job_runs DROP COLUMN cancel_requested_by")
