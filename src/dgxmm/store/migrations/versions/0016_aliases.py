"""A deployment may answer to more names than its model: its aliases (issue 27, point 7).

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN with a default on both databases: the rows of before get no aliases,
    # and SQLite does not rebuild the table its events cascade from.
    op.add_column("deployments", sa.Column("aliases", sa.Text, nullable=False, server_default="[]"))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN: SQLite 3.35 and later and PostgreSQL, without a rebuild.
    op.execute("ALTER TABLE deployments DROP COLUMN aliases")
