"""Live topics for the schedules, traffic and audit pages: their change counters' rows.

Issue 31 ("live updates also on audit, store, workload, schedules and traffic"). The
counters of migration 0021 are bumped with an UPDATE of the topic's row, so each new topic
needs its row.

Revision ID: 0024
Revises: 0023
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

TOPICS = ("schedules", "traffic", "audit")


def upgrade() -> None:
    table = sa.table("change_versions", sa.column("topic"), sa.column("version"))
    op.bulk_insert(table, [{"topic": topic, "version": 0} for topic in TOPICS])


def downgrade() -> None:
    op.execute(
        "DELETE FROM change_versions WHERE topic IN ("
        + ", ".join(f"'{topic}'" for topic in TOPICS)
        + ")"
    )
