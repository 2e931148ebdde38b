"""Change keys: which rows each version of a live topic touched.

Issue 28 ("the changed rows are then fetched by id"). A live page that sees its topic move
asks which rows moved and fetches those alone. Self-contained: one table and its protection.

Revision ID: 0026
Revises: 0025
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "change_keys",
        sa.Column("topic", sa.String(32), nullable=False),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("key", sa.String(200), nullable=False),
        sa.PrimaryKeyConstraint("topic", "version", "key", name="pk_change_keys"),
    )
    protected = sa.table(
        "protected_tables", sa.column("name"), sa.column("owner"), sa.column("why")
    )
    why = "written only by the store, in the transaction of a change to a live topic"
    op.bulk_insert(protected, [{"name": "change_keys", "owner": "store", "why": why}])


def downgrade() -> None:
    op.execute("DELETE FROM protected_tables WHERE name = 'change_keys'")
    op.drop_table("change_keys")
