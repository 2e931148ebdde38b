"""Wake on request: a deployment may opt out of being woken by a request through the proxy.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("deployments") as batch:
        batch.add_column(
            sa.Column("wake_on_request", sa.Boolean, nullable=False, server_default=sa.true())
        )


def downgrade() -> None:
    with op.batch_alter_table("deployments") as batch:
        batch.drop_column("wake_on_request")
