"""Job runs and instances: one row per run, claimed by inserting it; the processes alive.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_SCHEDULED = sa.text("\"trigger\" = 'schedule'")


def upgrade() -> None:
    op.create_table(
        "job_runs",
        sa.Column("id", _Id, nullable=False, autoincrement=True),
        sa.Column("job", sa.String(100), nullable=False),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("job_group", sa.String(100)),
        sa.Column("trigger", sa.String(10), nullable=False),
        sa.Column("scheduled_at", sa.BigInteger, nullable=False),
        sa.Column("started_at", sa.BigInteger, nullable=False),
        sa.Column("finished_at", sa.BigInteger),
        sa.Column("outcome", sa.String(20)),
        sa.Column("error", sa.Text),
        sa.Column("public_error", sa.Text),
        sa.Column("result", sa.Text),
        sa.Column("instance", sa.String(100), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_job_runs"),
    )
    op.create_index(
        "uq_job_runs_scheduled",
        "job_runs",
        ["job", "scheduled_at"],
        unique=True,
        sqlite_where=_SCHEDULED,
        postgresql_where=_SCHEDULED,
    )
    op.create_index("ix_job_runs_job_id", "job_runs", ["job", "id"])
    op.create_index("ix_job_runs_unfinished", "job_runs", ["finished_at", "instance"])
    op.create_table(
        "instances",
        sa.Column("id", sa.String(100), nullable=False),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("started_at", sa.BigInteger, nullable=False),
        sa.Column("role_since", sa.BigInteger, nullable=False),
        sa.Column("last_seen", sa.BigInteger, nullable=False),
        sa.Column("stopped_at", sa.BigInteger),
        sa.Column("place", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_instances"),
    )
    protected = sa.table(
        "protected_tables", sa.column("name"), sa.column("owner"), sa.column("why")
    )
    op.bulk_insert(
        protected,
        [
            {"name": "job_runs", "owner": "store", "why": "the store's record of job runs"},
            {"name": "instances", "owner": "store", "why": "the dgxmm processes on the store"},
        ],
    )


def downgrade() -> None:
    op.execute("DELETE FROM protected_tables WHERE name IN ('job_runs', 'instances')")
    op.drop_table("instances")
    op.drop_index("ix_job_runs_unfinished", table_name="job_runs")
    op.drop_index("ix_job_runs_job_id", table_name="job_runs")
    op.drop_index("uq_job_runs_scheduled", table_name="job_runs")
    op.drop_table("job_runs")
