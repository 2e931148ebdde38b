"""Protected tables: the database records which tables saved queries may not write.

Revision ID: 0005
Revises: 0004

Every later revision that creates a table of dgxmm's adds its row here too
(``tests/store/test_protection.py`` fails when one is missing).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_CATALOG = "a table of the store's own catalog"
_SERVICE = "changed only through the {} service, which audits every change"

# (name, owner, why): owner is dgxmm.store.catalog.protection.TableOwner's value.
ROWS = [
    ("alembic_version", "store", "the store's schema revision"),
    ("store_state", "store", _CATALOG),
    ("catalog_queries", "store", _CATALOG),
    ("catalog_jobs", "store", _CATALOG),
    ("catalog_journal", "store", _CATALOG),
    ("settings", "store", _CATALOG),
    ("change_log", "store", "the store's change log"),
    ("protected_tables", "store", "the store's list of protected tables"),
    ("api_tokens", "server", "the server's API tokens"),
    ("deployments", "fleet", _SERVICE.format("fleet's")),
    ("deployment_events", "fleet", _SERVICE.format("fleet's")),
    ("audit_log", "fleet", "the audit trail, written only by the services it audits"),
    ("insights", "fleet", _SERVICE.format("fleet's")),
    ("metric_rollups", "fleet", "written only by the fleet's metrics rollup"),
    ("deployment_schedules", "decider", _SERVICE.format("decider's schedule")),
    ("traffic_profiles", "decider", "written only by the decider's traffic profiles job"),
    ("schedule_proposals", "decider", _SERVICE.format("decider's proposal")),
]


def upgrade() -> None:
    table = op.create_table(
        "protected_tables",
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("owner", sa.String(20), nullable=False),
        sa.Column("why", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_protected_tables"),
    )
    op.bulk_insert(table, [{"name": n, "owner": o, "why": w} for n, o, w in ROWS])


def downgrade() -> None:
    op.drop_table("protected_tables")
