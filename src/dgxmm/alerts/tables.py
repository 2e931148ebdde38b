"""The alerts' tables, on the store's ``metadata`` (migration 0020).

Instants are integer microseconds since the epoch (UTC). A channel's URL and secret are
kept sealed (``sealing.py``): the database, a saved query and a backup see only ciphertext;
``url_shown`` is the URL's scheme and host, which is what pages and the API show.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
)

from dgxmm.store import metadata

__all__ = [
    "alert_attempts",
    "alert_channels",
    "alert_deliveries",
    "alert_incidents",
    "alert_messages",
    "alert_rule_channels",
    "alert_rules",
]

_Id = BigInteger().with_variant(Integer(), "sqlite")

alert_channels = Table(
    "alert_channels",
    metadata,
    Column("id", _Id, primary_key=True, autoincrement=True),
    Column("name", String(100), nullable=False, unique=True),
    Column("body_format", String(20), nullable=False),  # generic, slack, teams
    Column("url_sealed", Text, nullable=False),
    Column("url_shown", String(300), nullable=False),  # scheme://host[:port]/…
    Column("secret_sealed", Text, nullable=False),
    Column("failures", Integer, nullable=False),  # failed attempts in a row
    Column("created_at", BigInteger, nullable=False),
    Column("created_by", String(200), nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    CheckConstraint("body_format in ('generic', 'slack', 'teams')", name="body_format"),
)

alert_rules = Table(
    "alert_rules",
    metadata,
    Column("id", _Id, primary_key=True, autoincrement=True),
    Column("name", String(100), nullable=False, unique=True),
    Column("condition", String(40), nullable=False),
    Column("threshold", Integer),  # N: skipped times, refused requests
    Column("window_minutes", Integer),  # M (refusals), X (lateness), how long a loss is news
    Column("quiet_minutes", Integer, nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("created_by", String(200), nullable=False),
)

alert_rule_channels = Table(
    "alert_rule_channels",
    metadata,
    Column("rule_id", _Id, ForeignKey("alert_rules.id", ondelete="CASCADE"), primary_key=True),
    Column(
        "channel_id",
        _Id,
        ForeignKey("alert_channels.id", ondelete="CASCADE"),
        primary_key=True,
    ),
)

# One row per rule and subject while its condition holds: the grouping of repeats.
alert_incidents = Table(
    "alert_incidents",
    metadata,
    Column("id", _Id, primary_key=True, autoincrement=True),
    Column("rule_id", _Id, ForeignKey("alert_rules.id", ondelete="CASCADE"), nullable=False),
    Column("subject", String(200), nullable=False),
    # "<rule>:<subject>" while open, NULL once resolved: at most one open incident per rule
    # and subject, whichever instance evaluates.
    Column("open_key", String(300), unique=True),
    Column("title", Text, nullable=False),  # the latest occurrence, in words
    Column("last_token", String(200), nullable=False),  # what tells one occurrence from the next
    Column("occurrences", Integer, nullable=False),
    Column("reported", Integer, nullable=False),  # occurrences told in a message so far
    Column("opened_at", BigInteger, nullable=False),
    Column("last_seen_at", BigInteger, nullable=False),
    Column("last_sent_at", BigInteger, nullable=False),
    Column("resolved_at", BigInteger),
    Index("ix_alert_incidents_rule", "rule_id", "resolved_at"),
)

alert_messages = Table(
    "alert_messages",
    metadata,
    Column("id", _Id, primary_key=True, autoincrement=True),
    Column("kind", String(20), nullable=False),  # firing, summary, resolved, test
    Column("rule", String(100)),  # the rule's name then (None: a test)
    Column("condition", String(40)),
    Column("subject", String(200)),
    Column("title", Text, nullable=False),
    Column("text", Text, nullable=False),
    Column("occurrences", Integer, nullable=False),
    Column("created_at", BigInteger, nullable=False),
)

alert_deliveries = Table(
    "alert_deliveries",
    metadata,
    Column("id", _Id, primary_key=True, autoincrement=True),
    Column("message_id", _Id, ForeignKey("alert_messages.id", ondelete="CASCADE"), nullable=False),
    Column("channel_id", _Id, ForeignKey("alert_channels.id", ondelete="CASCADE"), nullable=False),
    Column("state", String(20), nullable=False),  # pending, sending, sent, failed
    Column("attempts", Integer, nullable=False),
    Column("next_at", BigInteger, nullable=False),
    Column("claimed_by", String(100)),  # the instance sending it now
    Column("claimed_until", BigInteger),  # past it, another instance may claim it again
    Column("status_code", Integer),  # of the last attempt
    Column("error", Text),  # of the last attempt
    Column("created_at", BigInteger, nullable=False),
    Column("finished_at", BigInteger),
    CheckConstraint("state in ('pending', 'sending', 'sent', 'failed')", name="state"),
    Index("ix_alert_deliveries_due", "state", "next_at"),
)

alert_attempts = Table(
    "alert_attempts",
    metadata,
    Column("id", _Id, primary_key=True, autoincrement=True),
    Column(
        "delivery_id",
        _Id,
        ForeignKey("alert_deliveries.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("at", BigInteger, nullable=False),
    Column("outcome", String(20), nullable=False),  # sent, retried, failed
    Column("status_code", Integer),
    Column("error", Text),
    Column("duration_ms", Integer, nullable=False),
    Column("instance", String(100), nullable=False),
    Index("ix_alert_attempts_delivery", "delivery_id"),
)
