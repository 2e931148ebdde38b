"""The catalog: store state, saved queries, user jobs, journal, settings, change log.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    state = op.create_table(
        "store_state",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("store_id", sa.String(32), nullable=False),
        sa.Column("catalog_version", sa.BigInteger, nullable=False),
        sa.CheckConstraint("id = 1", name="ck_store_state_single_row"),
        sa.PrimaryKeyConstraint("id", name="pk_store_state"),
    )
    op.bulk_insert(state, [{"id": 1, "store_id": uuid.uuid4().hex, "catalog_version": 0}])
    op.create_table(
        "catalog_queries",
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("params", sa.Text, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("description", sa.Text),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("defined_by", sa.String(200)),
        sa.Column("defined_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_catalog_queries"),
    )
    op.create_table(
        "catalog_jobs",
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("definition", sa.Text, nullable=False),
        sa.Column("effects", sa.Text, nullable=False),
        sa.Column("query_name", sa.String(100)),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("defined_by", sa.String(200)),
        sa.Column("defined_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_catalog_jobs"),
    )
    op.create_index("ix_catalog_jobs_query_name", "catalog_jobs", ["query_name"])
    op.create_table(
        "catalog_journal",
        sa.Column("id", _Id, nullable=False, autoincrement=True),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("at_us", sa.BigInteger, nullable=False),
        sa.Column("actor", sa.String(200)),
        sa.Column("subject", sa.String(20), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("change", sa.String(20), nullable=False),
        sa.Column("before", sa.Text),
        sa.Column("after", sa.Text),
        sa.PrimaryKeyConstraint("id", name="pk_catalog_journal"),
    )
    op.create_index("ix_catalog_journal_version", "catalog_journal", ["version"])
    op.create_table(
        "settings",
        sa.Column("key", sa.String(200), nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("updated_by", sa.String(200)),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_settings"),
    )
    op.create_table(
        "change_log",
        sa.Column("id", _Id, nullable=False, autoincrement=True),
        sa.Column("at_us", sa.BigInteger, nullable=False),
        sa.Column("job", sa.String(100)),
        sa.Column("actor", sa.String(200)),
        sa.Column("summary", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_change_log"),
    )
    op.create_index("ix_change_log_job", "change_log", ["job"])


def downgrade() -> None:
    for index, table in (
        ("ix_change_log_job", "change_log"),
        ("ix_catalog_journal_version", "catalog_journal"),
        ("ix_catalog_jobs_query_name", "catalog_jobs"),
    ):
        op.drop_index(index, table_name=table)
    for table in (
        "change_log",
        "settings",
        "catalog_journal",
        "catalog_jobs",
        "catalog_queries",
        "store_state",
    ):
        op.drop_table(table)
