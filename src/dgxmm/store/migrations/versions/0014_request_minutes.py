"""The proxy's requests per deployment and minute, and the state an event left (issue 26).

``request_minutes``: per deployment and minute, the requests the proxy took, those it held
while the deployment was brought up with their added waits, and those it refused by reason;
purged after 90 days. ``deployment_events.state``: the deployment's state after the event,
so that the savings report reads each state's time from the events alone.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.add_column("deployment_events", sa.Column("state", sa.String(20), nullable=True))
    op.create_table(
        "request_minutes",
        sa.Column("deployment_id", _Id, nullable=False),
        sa.Column("minute_us", sa.BigInteger, nullable=False),
        sa.Column("requests", sa.Integer, nullable=False),
        sa.Column("held", sa.Integer, nullable=False),
        sa.Column("waits_ms", sa.Text, nullable=False),
        sa.Column("refused", sa.Text, nullable=False),
        sa.ForeignKeyConstraint(
            ["deployment_id"],
            ["deployments.id"],
            ondelete="CASCADE",
            name="fk_request_minutes_deployment_id_deployments",
        ),
        sa.PrimaryKeyConstraint("deployment_id", "minute_us", name="pk_request_minutes"),
    )
    op.create_index("ix_request_minutes_minute", "request_minutes", ["minute_us"])
    protected = sa.table(
        "protected_tables", sa.column("name"), sa.column("owner"), sa.column("why")
    )
    op.bulk_insert(
        protected,
        [
            {
                "name": "request_minutes",
                "owner": "fleet",
                "why": "written only by the proxy's record of its requests",
            }
        ],
    )


def downgrade() -> None:
    op.execute("DELETE FROM protected_tables WHERE name = 'request_minutes'")
    op.drop_index("ix_request_minutes_minute", table_name="request_minutes")
    op.drop_table("request_minutes")
    op.execute("ALTER TABLE deployment_events DROP COLUMN state")
