"""Token expiry: an API token may carry the instant it stops opening anything.

Issue 31 (the API tokens page). NULL: it never expires, as every token made before did.

Revision ID: 0023
Revises: 0022
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("api_tokens", sa.Column("expires_at", sa.BigInteger, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:  # SQLite drops a column by a copy
        batch.drop_column("expires_at")
