"""Alerts: notification channels, rules, the grouping of repeats, messages and deliveries.

Issue 30. Self-contained: its tables reference only each other. A channel's URL and secret
are stored sealed (``dgxmm.alerts.sealing``), never in clear.

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_WHY = "changed only through the alerts service, which audits every change"
PROTECTED = [
    ("alert_channels", _WHY),
    ("alert_rules", _WHY),
    ("alert_rule_channels", _WHY),
    ("alert_incidents", "written only by the alerts' evaluator"),
    ("alert_messages", "written only by the alerts' evaluator"),
    ("alert_deliveries", "written only by the alerts' sender"),
    ("alert_attempts", "written only by the alerts' sender"),
]


def _fk(table: str, column: str, referred: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{referred}.id"], ondelete="CASCADE", name=f"fk_{table}_{column}_{referred}"
    )


def upgrade() -> None:
    op.create_table(
        "alert_channels",
        sa.Column("id", _Id, nullable=False, autoincrement=True),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("body_format", sa.String(20), nullable=False),
        sa.Column("url_sealed", sa.Text, nullable=False),
        sa.Column("url_shown", sa.String(300), nullable=False),
        sa.Column("secret_sealed", sa.Text, nullable=False),
        sa.Column("failures", sa.Integer, nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.CheckConstraint(
            "body_format in ('generic', 'slack', 'teams')",
            name="ck_alert_channels_body_format",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_alert_channels"),
        sa.UniqueConstraint("name", name="uq_alert_channels_name"),
    )
    op.create_table(
        "alert_rules",
        sa.Column("id", _Id, nullable=False, autoincrement=True),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("condition", sa.String(40), nullable=False),
        sa.Column("threshold", sa.Integer),
        sa.Column("window_minutes", sa.Integer),
        sa.Column("quiet_minutes", sa.Integer, nullable=False),
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_alert_rules"),
        sa.UniqueConstraint("name", name="uq_alert_rules_name"),
    )
    op.create_table(
        "alert_rule_channels",
        sa.Column("rule_id", _Id, nullable=False),
        sa.Column("channel_id", _Id, nullable=False),
        _fk("alert_rule_channels", "rule_id", "alert_rules"),
        _fk("alert_rule_channels", "channel_id", "alert_channels"),
        sa.PrimaryKeyConstraint("rule_id", "channel_id", name="pk_alert_rule_channels"),
    )
    op.create_table(
        "alert_incidents",
        sa.Column("id", _Id, nullable=False, autoincrement=True),
        sa.Column("rule_id", _Id, nullable=False),
        sa.Column("subject", sa.String(200), nullable=False),
        sa.Column("open_key", sa.String(300)),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("last_token", sa.String(200), nullable=False),
        sa.Column("occurrences", sa.Integer, nullable=False),
        sa.Column("reported", sa.Integer, nullable=False),
        sa.Column("opened_at", sa.BigInteger, nullable=False),
        sa.Column("last_seen_at", sa.BigInteger, nullable=False),
        sa.Column("last_sent_at", sa.BigInteger, nullable=False),
        sa.Column("resolved_at", sa.BigInteger),
        _fk("alert_incidents", "rule_id", "alert_rules"),
        sa.PrimaryKeyConstraint("id", name="pk_alert_incidents"),
        sa.UniqueConstraint("open_key", name="uq_alert_incidents_open_key"),
    )
    op.create_index("ix_alert_incidents_rule", "alert_incidents", ["rule_id", "resolved_at"])
    op.create_table(
        "alert_messages",
        sa.Column("id", _Id, nullable=False, autoincrement=True),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("rule", sa.String(100)),
        sa.Column("condition", sa.String(40)),
        sa.Column("subject", sa.String(200)),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("occurrences", sa.Integer, nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_alert_messages"),
    )
    op.create_table(
        "alert_deliveries",
        sa.Column("id", _Id, nullable=False, autoincrement=True),
        sa.Column("message_id", _Id, nullable=False),
        sa.Column("channel_id", _Id, nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("next_at", sa.BigInteger, nullable=False),
        sa.Column("claimed_by", sa.String(100)),
        sa.Column("claimed_until", sa.BigInteger),
        sa.Column("status_code", sa.Integer),
        sa.Column("error", sa.Text),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("finished_at", sa.BigInteger),
        _fk("alert_deliveries", "message_id", "alert_messages"),
        _fk("alert_deliveries", "channel_id", "alert_channels"),
        sa.CheckConstraint(
            "state in ('pending', 'sending', 'sent', 'failed')", name="ck_alert_deliveries_state"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_alert_deliveries"),
    )
    op.create_index("ix_alert_deliveries_due", "alert_deliveries", ["state", "next_at"])
    op.create_table(
        "alert_attempts",
        sa.Column("id", _Id, nullable=False, autoincrement=True),
        sa.Column("delivery_id", _Id, nullable=False),
        sa.Column("at", sa.BigInteger, nullable=False),
        sa.Column("outcome", sa.String(20), nullable=False),
        sa.Column("status_code", sa.Integer),
        sa.Column("error", sa.Text),
        sa.Column("duration_ms", sa.Integer, nullable=False),
        sa.Column("instance", sa.String(100), nullable=False),
        _fk("alert_attempts", "delivery_id", "alert_deliveries"),
        sa.PrimaryKeyConstraint("id", name="pk_alert_attempts"),
    )
    op.create_index("ix_alert_attempts_delivery", "alert_attempts", ["delivery_id"])
    protected = sa.table(
        "protected_tables", sa.column("name"), sa.column("owner"), sa.column("why")
    )
    op.bulk_insert(
        protected, [{"name": name, "owner": "alerts", "why": why} for name, why in PROTECTED]
    )


def downgrade() -> None:
    op.execute("DELETE FROM protected_tables WHERE name LIKE 'alert\\_%' ESCAPE '\\'")
    op.drop_index("ix_alert_attempts_delivery", table_name="alert_attempts")
    op.drop_table("alert_attempts")
    op.drop_index("ix_alert_deliveries_due", table_name="alert_deliveries")
    op.drop_table("alert_deliveries")
    op.drop_table("alert_messages")
    op.drop_index("ix_alert_incidents_rule", table_name="alert_incidents")
    op.drop_table("alert_incidents")
    op.drop_table("alert_rule_channels")
    op.drop_table("alert_rules")
    op.drop_table("alert_channels")
