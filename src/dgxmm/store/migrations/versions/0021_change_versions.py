"""Change versions: one counter per live topic, bumped in the transaction of each change.

Issue 28. ``GET /api/changes`` reads these counters (one indexed query) instead of rendering
what a page shows. Self-contained: one table, its rows seeded, and its protection.

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

TOPICS = ("jobs", "deployments", "insights", "alerts")


def upgrade() -> None:
    op.create_table(
        "change_versions",
        sa.Column("topic", sa.String(32), primary_key=True),
        sa.Column("version", sa.BigInteger, nullable=False),
    )
    table = sa.table("change_versions", sa.column("topic"), sa.column("version"))
    op.bulk_insert(table, [{"topic": topic, "version": 0} for topic in TOPICS])
    protected = sa.table(
        "protected_tables", sa.column("name"), sa.column("owner"), sa.column("why")
    )
    why = "bumped only by the store, in the transaction of each change"
    op.bulk_insert(protected, [{"name": "change_versions", "owner": "store", "why": why}])


def downgrade() -> None:
    op.execute("DELETE FROM protected_tables WHERE name = 'change_versions'")
    op.drop_table("change_versions")
