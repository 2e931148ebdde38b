"""The proxy's limits per deployment, and progress for a held stream (issue 27, points 8 and 9).

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

_COLUMNS = ("max_concurrent_requests", "max_queued_requests", "loading_progress")


def upgrade() -> None:
    # Plain ADD COLUMN with defaults on both databases: the rows of before have no limit, the
    # default queue and no progress chunks, and SQLite does not rebuild the table.
    op.add_column("deployments", sa.Column("max_concurrent_requests", sa.Integer, nullable=True))
    op.add_column(
        "deployments",
        sa.Column("max_queued_requests", sa.Integer, nullable=False, server_default="100"),
    )
    op.add_column(
        "deployments",
        sa.Column("loading_progress", sa.Boolean, nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN: SQLite 3.35 and later and PostgreSQL, without a rebuild.
    for column in _COLUMNS:
        op.execute(f"ALTER TABLE deployments DROP COLUMN {column}")
