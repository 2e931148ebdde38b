"""The decider's tables, on the store's ``metadata`` (migrations 0004, 0011 and 0027)."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Float,
    ForeignKey,
    Integer,
    String,
    Table,
    Text,
)

from dgxmm.store import metadata

__all__ = [
    "deployment_schedules",
    "schedule_proposals",
    "traffic_profiles",
    "wait_budget_prices",
]

_Id = BigInteger().with_variant(Integer(), "sqlite")

deployment_schedules = Table(
    "deployment_schedules",
    metadata,
    Column("id", _Id, primary_key=True, autoincrement=True),
    Column(
        "deployment_id",
        _Id,
        ForeignKey("deployments.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    Column("action", String(10), nullable=False),  # sleep, wake, stop, start
    Column("days", Integer, nullable=False),  # Monday 1, Tuesday 2, ... Sunday 64
    Column("at_time", String(5), nullable=False),  # local HH:MM
    Column("time_zone", String(64), nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("creator", String(200), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Column("last_run_at", BigInteger),
    Column("last_run_day", String(10)),  # the local date (YYYY-MM-DD) of the slot last run
    Column("last_result", Text),  # done, deferred, skipped: <reason>, failed: <error>
    Column("paused_reason", Text),  # why a failure switched it off
    # The deployment event of the timed-out sleep whose failure switched it off (migration
    # 0011): found finished after all, that sleep lifts the pause. NULL for any other pause.
    Column("paused_for_event", BigInteger),
    Column("deferred_since", BigInteger),  # first deferral of the slot under way
    CheckConstraint("action in ('sleep', 'wake', 'stop', 'start')", name="action"),
    CheckConstraint("days between 1 and 127", name="days"),
)

traffic_profiles = Table(
    "traffic_profiles",
    metadata,
    Column(
        "deployment_id",
        _Id,
        ForeignKey("deployments.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("hour_of_week", Integer, primary_key=True),  # 0: Monday 00:00-00:59, local
    Column("rpm_p50", Float, nullable=False),
    Column("rpm_p95", Float, nullable=False),
    Column("active_share", Float, nullable=False),  # share of observed minutes with traffic
    Column("observed_minutes", Integer, nullable=False),
    Column("observed_weeks", Integer, nullable=False),
    Column("idle_weeks", Integer, nullable=False),  # weeks in which this hour was idle
    Column("built_at", BigInteger, nullable=False),
    CheckConstraint("hour_of_week between 0 and 167", name="hour"),
)

schedule_proposals = Table(
    "schedule_proposals",
    metadata,
    Column("id", _Id, primary_key=True, autoincrement=True),
    Column(
        "deployment_id",
        _Id,
        ForeignKey("deployments.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    Column("sleep_days", Integer, nullable=False),
    Column("sleep_time", String(5), nullable=False),
    Column("wake_days", Integer, nullable=False),
    Column("wake_time", String(5), nullable=False),
    Column("time_zone", String(64), nullable=False),
    Column("source", String(40), nullable=False),  # rules, or the decision model's name
    Column("confidence", Float, nullable=False),
    Column("evidence", Text, nullable=False),  # JSON
    Column("features", Text, nullable=False),  # JSON, what the feedback model learns from
    Column("status", String(20), nullable=False),  # open, accepted, dismissed
    Column("created_at", BigInteger, nullable=False),
    Column("decided_at", BigInteger),
    Column("decided_by", String(200)),
    Column("sleep_schedule_id", BigInteger),
    Column("wake_schedule_id", BigInteger),
    # "measured" when accepting it also sets the deployment's wake lead (migration 0013).
    Column("wake_lead", String(20)),
    # JSON: the lab's backtest of it on held-out weeks (migration 0015); NULL: none could be.
    Column("backtest", Text),
    CheckConstraint("status in ('open', 'accepted', 'dismissed')", name="status"),
)

# What the daily ``wait_budgets`` job chose last per deployment (migration 0027, issue 42):
# the price, the budget it was found for (JSON, as the definition's column), whether the
# budget was met, and the replay's figures (JSON: ``idle/budget.py``'s ``BudgetChoice``).
wait_budget_prices = Table(
    "wait_budget_prices",
    metadata,
    Column(
        "deployment_id",
        _Id,
        ForeignKey("deployments.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("computed_at", BigInteger, nullable=False),
    Column("budget", Text, nullable=False),
    Column("price", Float, nullable=False),
    Column("met", Boolean, nullable=False),
    Column("detail", Text, nullable=False),
)
