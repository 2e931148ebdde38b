"""The fleet's tables, on the store's ``metadata`` (migrations 0003, 0007-0009, 0012, 0014).

Instants are integer microseconds since the epoch (UTC); JSON is stored as text.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
)
from sqlalchemy.sql import false, true

from dgxmm.store import metadata

__all__ = [
    "audit_log",
    "deployment_events",
    "deployments",
    "insights",
    "metric_rollups",
    "request_minutes",
]

_Id = BigInteger().with_variant(Integer(), "sqlite")

deployments = Table(
    "deployments",
    metadata,
    Column("id", _Id, primary_key=True, autoincrement=True),
    Column("name", String(100), nullable=False, unique=True),
    Column("model", String(200), nullable=False),
    # JSON list of the other names requests may give as their model (migration 0016); no
    # two deployments share one, checked by DeploymentRepo as it writes.
    Column("aliases", Text, nullable=False, server_default="[]"),
    Column("backend", String(20), nullable=False),  # process, external, ray
    Column("command", Text),  # JSON list of argv (process)
    Column("port", Integer),  # process
    Column("environment", Text),  # JSON object (process)
    Column("base_url", String(500)),  # external
    Column("ray_address", String(500)),  # ray: the cluster's address (migration 0009)
    Column("ray_node", String(200)),  # ray: the node it must run on, if any
    Column("num_gpus", Integer),  # ray: the GPUs its actor asks for
    Column("placement", Text),  # ray: JSON node and URL while its actor lives
    Column("gpus", Text, nullable=False),  # JSON list of GPU indices
    Column("memory_gib_awake", Float, nullable=False),  # per GPU it holds
    Column("memory_gib_asleep", Float, nullable=False),  # per GPU, asleep
    Column("priority", Integer, nullable=False),
    Column("time_zone", String(64), nullable=False),
    Column("startup_timeout_s", Float, nullable=False),
    # A request through the proxy wakes it when it sleeps (migration 0007).
    Column("wake_on_request", Boolean, nullable=False, server_default=true()),
    # The proxy's limits per deployment (issue 27): requests at once (NULL: no limit), and
    # how many wait for a slot past it; a held stream's progress chunks while it wakes.
    Column("max_concurrent_requests", Integer, nullable=True),
    Column("max_queued_requests", Integer, nullable=False, server_default="100"),
    Column("loading_progress", Boolean, nullable=False, server_default=false()),
    # Added by 0008; the defaults fill the rows of before. Checked by the definition (a check
    # constraint would make SQLite rebuild the table its events cascade from).
    Column("sleep_timeout_s", Float, nullable=False, server_default="300"),
    Column("sleep_level", Integer, nullable=False, server_default="1"),
    # The idle ladder (seconds without requests; NULL: no such step), the idle policy and
    # the wake lead ("off", "measured" or seconds as text); the level it sleeps at now, and
    # why its idle policy is paused after a failed step (migration 0012, issue 25).
    Column("idle_sleep_after_s", Float),
    Column("idle_deepen_after_s", Float),
    Column("idle_stop_after_s", Float),
    Column("idle_policy", String(20), nullable=False, server_default="ladder"),
    Column("wake_lead", String(20), nullable=False, server_default="off"),
    # The wait budget (issue 42): JSON, {"mean_ms": 50, "p99_s": 5}; NULL: none (0027).
    Column("idle_wait_budget", Text),
    Column("asleep_level", Integer),
    Column("idle_paused", Text),
    Column("state", String(20), nullable=False),
    Column("state_since", BigInteger, nullable=False),
    Column("last_error", Text),
    Column("last_request_at", BigInteger),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    CheckConstraint("backend in ('process', 'external', 'ray')", name="backend"),
    CheckConstraint("priority between 0 and 100", name="priority"),
    CheckConstraint(
        "state in ('stopped', 'starting', 'running', 'sleeping', 'stopping', 'failed')",
        name="state",
    ),
)

deployment_events = Table(
    "deployment_events",
    metadata,
    Column("id", _Id, primary_key=True, autoincrement=True),
    Column("deployment_id", _Id, ForeignKey("deployments.id", ondelete="CASCADE"), nullable=False),
    Column("at_us", BigInteger, nullable=False),
    Column("action", String(20), nullable=False),  # start, stop, sleep, wake, failed, ...
    Column("actor", String(200)),  # user:<name>, schedule:<id>, system; NULL: unknown
    Column("outcome", String(20), nullable=False),  # done, failed, skipped, deferred
    Column("detail", Text),
    # A start or wake done: how long until it was ready (its first completion answered), and
    # the level it came up from (0: a start; 1 or 2: a wake). The measured wake lead reads
    # them (migration 0012).
    Column("ready_us", BigInteger),
    Column("from_level", Integer),
    # The deployment's state after the event (migration 0014): the savings report's timeline.
    # NULL for the schedule runner's own events (deferrals, skips) and rows written before.
    Column("state", String(20)),
    Index("ix_deployment_events_deployment_at", "deployment_id", "at_us"),
    Index("ix_deployment_events_at", "at_us", "id"),  # the Runs page's order (migration 0025)
)

audit_log = Table(
    "audit_log",
    metadata,
    Column("id", _Id, primary_key=True, autoincrement=True),
    Column("at_us", BigInteger, nullable=False, index=True),
    Column("actor", String(200)),
    Column("action", String(100), nullable=False),  # e.g. deployment.start, schedule.create
    Column("subject", String(50), nullable=False),  # deployment, schedule, setting, ...
    Column("subject_id", String(100)),
    Column("detail", Text),  # JSON
)

insights = Table(
    "insights",
    metadata,
    Column("id", _Id, primary_key=True, autoincrement=True),
    Column("kind", String(50), nullable=False),
    # No cascade: a removal hook deletes a deployment's insights before the deployment goes.
    Column("deployment_id", _Id, ForeignKey("deployments.id")),
    Column("severity", String(20), nullable=False),  # info, warning, critical
    Column("message", Text, nullable=False),
    Column("key", String(200)),  # an open insight with the same key is not raised twice
    Column("created_at", BigInteger, nullable=False),
    Column("dismissed_at", BigInteger),
    Column("dismissed_by", String(200)),
    CheckConstraint("severity in ('info', 'warning', 'critical')", name="severity"),
    Index("ix_insights_deployment", "deployment_id"),
)

metric_rollups = Table(
    "metric_rollups",
    metadata,
    Column(
        "deployment_id",
        _Id,
        ForeignKey("deployments.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("minute_us", BigInteger, primary_key=True),  # the minute's start (UTC)
    Column("requests", Integer, nullable=False),  # completed in this minute
    Column("mean_running", Float, nullable=False),
    Column("mean_waiting", Float, nullable=False),
    Column("mean_latency_s", Float),  # NULL when no request completed
    Column("samples", Integer, nullable=False),
    Index("ix_metric_rollups_minute", "minute_us"),
)

# Per deployment and minute of arrival, what the proxy saw (migration 0014): the requests it
# took, those it held while the deployment was brought up and their added waits (JSON list of
# milliseconds, at most ``MAX_WAITS`` a minute), those it refused by reason (JSON object).
request_minutes = Table(
    "request_minutes",
    metadata,
    Column(
        "deployment_id",
        _Id,
        ForeignKey("deployments.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("minute_us", BigInteger, primary_key=True),
    Column("requests", Integer, nullable=False),
    Column("held", Integer, nullable=False),
    Column("waits_ms", Text, nullable=False),
    Column("refused", Text, nullable=False),
    Index("ix_request_minutes_minute", "minute_us"),
)
