"""The decider: deployment schedules, traffic profiles, schedule proposals.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _deployment_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["deployment_id"],
        ["deployments.id"],
        ondelete="CASCADE",
        name=f"fk_{table}_deployment_id_deployments",
    )


def upgrade() -> None:
    op.create_table(
        "deployment_schedules",
        sa.Column("id", _Id, nullable=False, autoincrement=True),
        sa.Column("deployment_id", _Id, nullable=False),
        sa.Column("action", sa.String(10), nullable=False),
        sa.Column("days", sa.Integer, nullable=False),
        sa.Column("at_time", sa.String(5), nullable=False),
        sa.Column("time_zone", sa.String(64), nullable=False),
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.Column("creator", sa.String(200), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.Column("last_run_at", sa.BigInteger),
        sa.Column("last_run_day", sa.String(10)),
        sa.Column("last_result", sa.Text),
        sa.Column("paused_reason", sa.Text),
        sa.Column("deferred_since", sa.BigInteger),
        sa.PrimaryKeyConstraint("id", name="pk_deployment_schedules"),
        _deployment_fk("deployment_schedules"),
        sa.CheckConstraint(
            "action in ('sleep', 'wake', 'stop', 'start')", name="ck_deployment_schedules_action"
        ),
        sa.CheckConstraint("days between 1 and 127", name="ck_deployment_schedules_days"),
    )
    op.create_index(
        "ix_deployment_schedules_deployment_id", "deployment_schedules", ["deployment_id"]
    )
    op.create_table(
        "traffic_profiles",
        sa.Column("deployment_id", _Id, nullable=False),
        sa.Column("hour_of_week", sa.Integer, nullable=False),
        sa.Column("rpm_p50", sa.Float, nullable=False),
        sa.Column("rpm_p95", sa.Float, nullable=False),
        sa.Column("active_share", sa.Float, nullable=False),
        sa.Column("observed_minutes", sa.Integer, nullable=False),
        sa.Column("observed_weeks", sa.Integer, nullable=False),
        sa.Column("idle_weeks", sa.Integer, nullable=False),
        sa.Column("built_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("deployment_id", "hour_of_week", name="pk_traffic_profiles"),
        _deployment_fk("traffic_profiles"),
        sa.CheckConstraint("hour_of_week between 0 and 167", name="ck_traffic_profiles_hour"),
    )
    op.create_table(
        "schedule_proposals",
        sa.Column("id", _Id, nullable=False, autoincrement=True),
        sa.Column("deployment_id", _Id, nullable=False),
        sa.Column("sleep_days", sa.Integer, nullable=False),
        sa.Column("sleep_time", sa.String(5), nullable=False),
        sa.Column("wake_days", sa.Integer, nullable=False),
        sa.Column("wake_time", sa.String(5), nullable=False),
        sa.Column("time_zone", sa.String(64), nullable=False),
        sa.Column("source", sa.String(40), nullable=False),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("evidence", sa.Text, nullable=False),
        sa.Column("features", sa.Text, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("decided_at", sa.BigInteger),
        sa.Column("decided_by", sa.String(200)),
        sa.Column("sleep_schedule_id", sa.BigInteger),
        sa.Column("wake_schedule_id", sa.BigInteger),
        sa.PrimaryKeyConstraint("id", name="pk_schedule_proposals"),
        _deployment_fk("schedule_proposals"),
        sa.CheckConstraint(
            "status in ('open', 'accepted', 'dismissed')", name="ck_schedule_proposals_status"
        ),
    )
    op.create_index("ix_schedule_proposals_deployment_id", "schedule_proposals", ["deployment_id"])


def downgrade() -> None:
    for table in ("schedule_proposals", "traffic_profiles", "deployment_schedules"):
        op.drop_table(table)
