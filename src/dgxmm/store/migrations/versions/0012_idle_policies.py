"""Each deployment's idle ladder, idle policy and wake lead; the level it sleeps at; the
time to ready of a start or wake, and the level it came up from, on its event (issue 25).

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

_DEPLOYMENT_COLUMNS = (
    "idle_sleep_after_s",
    "idle_deepen_after_s",
    "idle_stop_after_s",
    "idle_policy",
    "wake_lead",
    "asleep_level",
    "idle_paused",
)


def upgrade() -> None:
    # Plain ADD COLUMN on both databases, nullable or with a default that fills the rows of
    # before: a batch rebuild of the table on SQLite would drop what cascades from it.
    for name in _DEPLOYMENT_COLUMNS[:3]:
        op.add_column("deployments", sa.Column(name, sa.Float, nullable=True))
    op.add_column(
        "deployments",
        sa.Column("idle_policy", sa.String(20), nullable=False, server_default="ladder"),
    )
    op.add_column(
        "deployments", sa.Column("wake_lead", sa.String(20), nullable=False, server_default="off")
    )
    op.add_column("deployments", sa.Column("asleep_level", sa.Integer, nullable=True))
    op.add_column("deployments", sa.Column("idle_paused", sa.Text, nullable=True))
    op.add_column("deployment_events", sa.Column("ready_us", sa.BigInteger, nullable=True))
    op.add_column("deployment_events", sa.Column("from_level", sa.Integer, nullable=True))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN: SQLite 3.35 and later and PostgreSQL, without a rebuild.
    op.execute("ALTER TABLE deployment_events DROP COLUMN from_level")
    op.execute("ALTER TABLE deployment_events DROP COLUMN ready_us")
    for name in reversed(_DEPLOYMENT_COLUMNS):
        op.execute(f"ALTER TABLE deployments DROP COLUMN {name}")
