"""The ray backend: a deployment's Ray cluster, node constraint, GPU count and placement.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Batch mode: SQLite changes a check constraint only by copying the table.
    with op.batch_alter_table("deployments") as batch:
        batch.add_column(sa.Column("ray_address", sa.String(500)))
        batch.add_column(sa.Column("ray_node", sa.String(200)))
        batch.add_column(sa.Column("num_gpus", sa.Integer))
        batch.add_column(sa.Column("placement", sa.Text))
        batch.drop_constraint("ck_deployments_backend", type_="check")
        batch.create_check_constraint(
            "ck_deployments_backend", "backend in ('process', 'external', 'ray')"
        )


def downgrade() -> None:
    with op.batch_alter_table("deployments") as batch:
        batch.drop_constraint("ck_deployments_backend", type_="check")
        batch.create_check_constraint(
            "ck_deployments_backend", "backend in ('process', 'external')"
        )
        batch.drop_column("placement")
        batch.drop_column("num_gpus")
        batch.drop_column("ray_node")
        batch.drop_column("ray_address")
