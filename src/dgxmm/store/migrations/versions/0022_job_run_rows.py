"""Kept rows: the first rows a query job's run returned, beside its run.

Issue 31 (the Runs page). Self-contained: one table and its protection.

Revision ID: 0022
Revises: 0021
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "job_run_rows",
        sa.Column(
            "run_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=False,
            autoincrement=False,
        ),
        sa.Column("body", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("run_id", name="pk_job_run_rows"),
    )
    protected = sa.table(
        "protected_tables", sa.column("name"), sa.column("owner"), sa.column("why")
    )
    why = "written only by the store, with the end of a query job's run"
    op.bulk_insert(protected, [{"name": "job_run_rows", "owner": "store", "why": why}])


def downgrade() -> None:
    op.execute("DELETE FROM protected_tables WHERE name = 'job_run_rows'")
    op.drop_table("job_run_rows")
