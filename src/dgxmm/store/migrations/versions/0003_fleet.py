"""The fleet: deployments, their events, the audit log, insights, per-minute metric rollups.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "deployments",
        sa.Column("id", _Id, nullable=False, autoincrement=True),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("backend", sa.String(20), nullable=False),
        sa.Column("command", sa.Text),
        sa.Column("port", sa.Integer),
        sa.Column("environment", sa.Text),
        sa.Column("base_url", sa.String(500)),
        sa.Column("gpus", sa.Text, nullable=False),
        sa.Column("memory_gib_awake", sa.Float, nullable=False),
        sa.Column("memory_gib_asleep", sa.Float, nullable=False),
        sa.Column("priority", sa.Integer, nullable=False),
        sa.Column("time_zone", sa.String(64), nullable=False),
        sa.Column("startup_timeout_s", sa.Float, nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("state_since", sa.BigInteger, nullable=False),
        sa.Column("last_error", sa.Text),
        sa.Column("last_request_at", sa.BigInteger),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_deployments"),
        sa.UniqueConstraint("name", name="uq_deployments_name"),
        sa.CheckConstraint("backend in ('process', 'external')", name="ck_deployments_backend"),
        sa.CheckConstraint("priority between 0 and 100", name="ck_deployments_priority"),
        sa.CheckConstraint(
            "state in ('stopped', 'starting', 'running', 'sleeping', 'stopping', 'failed')",
            name="ck_deployments_state",
        ),
    )
    op.create_table(
        "deployment_events",
        sa.Column("id", _Id, nullable=False, autoincrement=True),
        sa.Column("deployment_id", _Id, nullable=False),
        sa.Column("at_us", sa.BigInteger, nullable=False),
        sa.Column("action", sa.String(20), nullable=False),
        sa.Column("actor", sa.String(200)),
        sa.Column("outcome", sa.String(20), nullable=False),
        sa.Column("detail", sa.Text),
        sa.PrimaryKeyConstraint("id", name="pk_deployment_events"),
        sa.ForeignKeyConstraint(
            ["deployment_id"],
            ["deployments.id"],
            ondelete="CASCADE",
            name="fk_deployment_events_deployment_id_deployments",
        ),
    )
    op.create_index(
        "ix_deployment_events_deployment_at", "deployment_events", ["deployment_id", "at_us"]
    )
    op.create_table(
        "audit_log",
        sa.Column("id", _Id, nullable=False, autoincrement=True),
        sa.Column("at_us", sa.BigInteger, nullable=False),
        sa.Column("actor", sa.String(200)),
        sa.Column("action", sa.String(100), nullable=False),
        sa.Column("subject", sa.String(50), nullable=False),
        sa.Column("subject_id", sa.String(100)),
        sa.Column("detail", sa.Text),
        sa.PrimaryKeyConstraint("id", name="pk_audit_log"),
    )
    op.create_index("ix_audit_log_at_us", "audit_log", ["at_us"])
    op.create_table(
        "insights",
        sa.Column("id", _Id, nullable=False, autoincrement=True),
        sa.Column("kind", sa.String(50), nullable=False),
        sa.Column("deployment_id", _Id),
        sa.Column("severity", sa.String(20), nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("key", sa.String(200)),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("dismissed_at", sa.BigInteger),
        sa.Column("dismissed_by", sa.String(200)),
        sa.PrimaryKeyConstraint("id", name="pk_insights"),
        sa.ForeignKeyConstraint(
            ["deployment_id"], ["deployments.id"], name="fk_insights_deployment_id_deployments"
        ),
        sa.CheckConstraint(
            "severity in ('info', 'warning', 'critical')", name="ck_insights_severity"
        ),
    )
    op.create_index("ix_insights_deployment", "insights", ["deployment_id"])
    op.create_table(
        "metric_rollups",
        sa.Column("deployment_id", _Id, nullable=False),
        sa.Column("minute_us", sa.BigInteger, nullable=False),
        sa.Column("requests", sa.Integer, nullable=False),
        sa.Column("mean_running", sa.Float, nullable=False),
        sa.Column("mean_waiting", sa.Float, nullable=False),
        sa.Column("mean_latency_s", sa.Float),
        sa.Column("samples", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("deployment_id", "minute_us", name="pk_metric_rollups"),
        sa.ForeignKeyConstraint(
            ["deployment_id"],
            ["deployments.id"],
            ondelete="CASCADE",
            name="fk_metric_rollups_deployment_id_deployments",
        ),
    )
    op.create_index("ix_metric_rollups_minute", "metric_rollups", ["minute_us"])


def downgrade() -> None:
    for table in ("metric_rollups", "insights", "audit_log", "deployment_events", "deployments"):
        op.drop_table(table)
