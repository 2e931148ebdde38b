"""The catalog's attic: what was dropped or replaced, kept until removed for good.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "catalog_attic",
        sa.Column("id", _Id, nullable=False, autoincrement=True),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("item", sa.Text, nullable=False),
        sa.Column("defined_version", sa.BigInteger, nullable=False),
        sa.Column("defined_by", sa.String(200)),
        sa.Column("defined_at", sa.BigInteger, nullable=False),
        sa.Column("dropped_version", sa.BigInteger, nullable=False),
        sa.Column("dropped_by", sa.String(200)),
        sa.Column("dropped_at", sa.BigInteger, nullable=False),
        sa.Column("why", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_catalog_attic"),
    )
    op.create_index("ix_catalog_attic_name", "catalog_attic", ["name"])
    protected = sa.table(
        "protected_tables", sa.column("name"), sa.column("owner"), sa.column("why")
    )
    op.bulk_insert(
        protected,
        [{"name": "catalog_attic", "owner": "store", "why": "the catalog's attic"}],
    )


def downgrade() -> None:
    op.execute("DELETE FROM protected_tables WHERE name = 'catalog_attic'")
    op.drop_index("ix_catalog_attic_name", table_name="catalog_attic")
    op.drop_table("catalog_attic")
