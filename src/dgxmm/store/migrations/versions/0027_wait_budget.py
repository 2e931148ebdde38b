"""The wait budget per deployment and the price it found (issue 42, point 4).

``deployments.idle_wait_budget``: JSON, ``{"mean_ms": 50, "p99_s": 5}`` (either or both);
NULL, the rows of before, is no budget. ``wait_budget_prices``: per deployment, what the
daily ``wait_budgets`` job chose last: the price, for which budget, whether it was met, and
the replay's figures (JSON) the deployment's page explains it with.

Revision ID: 0027
Revises: 0026
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    # Plain ADD COLUMN, nullable: SQLite does not rebuild the table its events cascade from.
    op.add_column("deployments", sa.Column("idle_wait_budget", sa.Text, nullable=True))
    op.create_table(
        "wait_budget_prices",
        sa.Column("deployment_id", _Id, nullable=False),
        sa.Column("computed_at", sa.BigInteger, nullable=False),
        sa.Column("budget", sa.Text, nullable=False),
        sa.Column("price", sa.Float, nullable=False),
        sa.Column("met", sa.Boolean, nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("deployment_id", name="pk_wait_budget_prices"),
        sa.ForeignKeyConstraint(
            ["deployment_id"],
            ["deployments.id"],
            name="fk_wait_budget_prices_deployment_id_deployments",
            ondelete="CASCADE",
        ),
    )
    protected = sa.table(
        "protected_tables", sa.column("name"), sa.column("owner"), sa.column("why")
    )
    why = "written only by the decider's wait_budgets job"
    op.bulk_insert(protected, [{"name": "wait_budget_prices", "owner": "decider", "why": why}])


def downgrade() -> None:
    op.execute("DELETE FROM protected_tables WHERE name = 'wait_budget_prices'")
    op.drop_table("wait_budget_prices")
    # ALTER TABLE ... DROP COLUMN: SQLite 3.35 and later and PostgreSQL, without a rebuild.
    op.execute("ALTER TABLE deployments DROP COLUMN idle_wait_budget")
