"""``Metrics``: samples of deployments, their request activity, and the rollups built from them.

Every sample of a deployment's ``/metrics`` (the ``metrics_rollup`` job's, once a minute, and
``sample_now``'s, on demand) does two things:

- **request activity**: ``last_request_at`` moves forward to the sample's time when it shows
  requests running or waiting, or more finished requests than the previous sample of the
  same deployment (a counter that went down means the server restarted: what it holds is
  new);
- **the rollup** of the sample's minute, for a deployment that is ``running``: one row per
  deployment and minute with the requests completed (the counter's rise since the previous
  sample, counted in the minute of the sample that saw it), the mean of the running and
  waiting gauges over the minute's samples, the mean latency of the requests completed (from
  the latency histogram's sum and count), and how many samples it holds. A second sample in
  the same minute is averaged into the same row.

The previous sample is kept in memory: after a dgxmm restart (or the server's), the first
sample only sets the baseline. Rollups older than the retention (35 days by default, or the
store setting ``fleet.rollup_retention_days``) are deleted by ``metrics_purge``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sqlalchemy import Engine, delete, insert, select, update

from dgxmm.clock import Clock
from dgxmm.errors import BackendError, Conflict, InvalidInput, ServerGone
from dgxmm.fleet.backends.protocol import Health
from dgxmm.fleet.backends.registry import Backends
from dgxmm.fleet.deployment import Deployment, DeploymentState
from dgxmm.fleet.deployments import DeploymentRepo
from dgxmm.fleet.insights import InsightKind, Insights, Severity
from dgxmm.fleet.metrics.rollups import (
    DEFAULT_RETENTION_DAYS,
    RETENTION_SETTING,
    Latency,
    Rollup,
    mean_of,
)
from dgxmm.fleet.metrics.sample import MetricsSample, delta_between
from dgxmm.fleet.tables import metric_rollups
from dgxmm.jobs import RunContext
from dgxmm.store import reading, writing
from dgxmm.time_units import DAY_US, MINUTE_US

__all__ = ["Metrics"]

log = logging.getLogger(__name__)

_SAMPLED = (DeploymentState.RUNNING, DeploymentState.SLEEPING)

OnGone = Callable[[Deployment, str], None]


class Metrics:
    """Samples deployments, keeps their request activity, and writes per-minute rollups."""

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock,
        deployments: DeploymentRepo,
        backends: Backends,
        insights: Insights,
        on_gone: OnGone,
        retention_days: Callable[[], object] = lambda: DEFAULT_RETENTION_DAYS,
    ) -> None:
        self._engine = engine
        self._clock = clock
        self._deployments = deployments
        self._backends = backends
        self._insights = insights
        self._on_gone = on_gone
        self._retention_days = retention_days
        self._lock = threading.Lock()
        self._previous: dict[int, MetricsSample] = {}
        self._latency: dict[int, Latency] = {}

    # -- samples ------------------------------------------------------------------------------

    def sample_now(self, deployment_id: int) -> MetricsSample:
        """Take a fresh sample through the backend; record activity (and the rollup).

        ``Conflict`` for a deployment that is not up; a server found gone marks the
        deployment failed and raises ``ServerGone``.
        """
        deployment = self._deployments.get(deployment_id)
        if deployment.state not in _SAMPLED:
            raise Conflict(
                f"deployment {deployment.name!r} is {deployment.state.value}: no metrics"
            )
        try:
            sample = self._backends.of(deployment).sample()
        except ServerGone as gone:
            self._on_gone(deployment, str(gone))
            raise
        self.record(deployment, sample)
        return sample

    def record(self, deployment: Deployment, sample: MetricsSample) -> None:
        """Take a sample into the activity and, for a running deployment, its minute's rollup."""
        minute = sample.taken_at_us - sample.taken_at_us % MINUTE_US
        with self._lock:
            previous = self._previous.get(deployment.id)
            if previous is not None and sample.taken_at_us < previous.taken_at_us:
                return  # an older sample that lost a race: its news is already counted
            self._previous[deployment.id] = sample
            delta = delta_between(previous, sample) if previous is not None else None
            active = not sample.is_idle or (delta is not None and delta.requests_finished > 0)
            latency = self._latency.get(deployment.id)
            with writing(self._engine) as connection:
                if active:
                    self._deployments.note_request(connection, deployment.id, sample.taken_at_us)
                if deployment.state is not DeploymentState.RUNNING:
                    return
                row = connection.execute(
                    select(metric_rollups).where(
                        metric_rollups.c.deployment_id == deployment.id,
                        metric_rollups.c.minute_us == minute,
                    )
                ).first()
                if latency is None or latency.minute_us != minute:
                    # The minute's first sample here; a row already there is from before a
                    # restart, its mean weighted by its requests.
                    seeded = row is not None and row.mean_latency_s is not None
                    latency = Latency(
                        minute_us=minute,
                        sum_s=row.mean_latency_s * row.requests if seeded and row else 0.0,
                        count=row.requests if seeded and row else 0,
                    )
                    self._latency[deployment.id] = latency
                if delta is not None:
                    latency.sum_s += delta.latency_sum_s
                    latency.count += delta.latency_count
                samples = (row.samples if row is not None else 0) + 1
                values = {
                    "requests": (row.requests if row is not None else 0)
                    + (delta.requests_finished if delta is not None else 0),
                    "mean_running": mean_of(row, "mean_running", sample.requests_running, samples),
                    "mean_waiting": mean_of(row, "mean_waiting", sample.requests_waiting, samples),
                    "mean_latency_s": latency.sum_s / latency.count if latency.count else None,
                    "samples": samples,
                }
                if row is None:
                    connection.execute(
                        insert(metric_rollups).values(
                            deployment_id=deployment.id, minute_us=minute, **values
                        )
                    )
                else:
                    connection.execute(
                        update(metric_rollups)
                        .where(
                            metric_rollups.c.deployment_id == deployment.id,
                            metric_rollups.c.minute_us == minute,
                        )
                        .values(**values)
                    )

    def forget(self, deployment_id: int) -> None:
        """Drop the previous sample: the server was started or stopped, its counters begin again."""
        with self._lock:
            self._previous.pop(deployment_id, None)
            self._latency.pop(deployment_id, None)

    # -- reading ------------------------------------------------------------------------------

    def last_request_at(self, deployment_id: int) -> int | None:
        """Return when a sample last saw request activity, or None."""
        return self._deployments.get(deployment_id).last_request_at

    def rollups(self, deployment_id: int, since_us: int, until_us: int) -> list[Rollup]:
        """Return a deployment's rollups with ``since_us <= minute < until_us``, oldest first."""
        query = (
            select(metric_rollups)
            .where(
                metric_rollups.c.deployment_id == deployment_id,
                metric_rollups.c.minute_us >= since_us,
                metric_rollups.c.minute_us < until_us,
            )
            .order_by(metric_rollups.c.minute_us)
        )
        with reading(self._engine) as connection:
            return [
                Rollup(
                    deployment_id=int(row.deployment_id),
                    minute_us=int(row.minute_us),
                    requests=int(row.requests),
                    mean_running=float(row.mean_running),
                    mean_waiting=float(row.mean_waiting),
                    mean_latency_s=row.mean_latency_s,
                    samples=int(row.samples),
                )
                for row in connection.execute(query)
            ]

    # -- the system jobs ----------------------------------------------------------------------

    def rollup_all(self, ctx: RunContext | None = None) -> str:
        """Sample every running deployment and check the sleeping ones (``metrics_rollup``).

        A process found dead, or a server whose port refuses, marks its deployment failed.
        """
        sampled = gone = unreadable = 0
        for deployment in self._deployments.list():
            if ctx is not None:
                ctx.check()
            if deployment.state is DeploymentState.RUNNING:
                try:
                    self.record(deployment, self._backends.of(deployment).sample())
                    sampled += 1
                except ServerGone as error:
                    gone += 1
                    self._on_gone(deployment, str(error))
                except BackendError as error:
                    unreadable += 1
                    self._unreadable(deployment, error)
            elif deployment.state is DeploymentState.SLEEPING:
                check = self._backends.of(deployment).check_health()
                if check.health is Health.GONE:
                    gone += 1
                    self._on_gone(deployment, check.detail)
        parts = [f"{sampled} sampled"]
        if gone:
            parts.append(f"{gone} gone")
        if unreadable:
            parts.append(f"{unreadable} unreadable")
        return ", ".join(parts)

    def purge(self, now_us: int | None = None) -> int:
        """Delete rollups older than the retention (``metrics_purge``); return how many."""
        days = self._retention_days()
        if not isinstance(days, int) or isinstance(days, bool) or days < 1:
            raise InvalidInput(RETENTION_SETTING, f"{days!r} is not a whole number of days")
        now = self._clock.now_us() if now_us is None else now_us
        with writing(self._engine) as connection:
            result = connection.execute(
                delete(metric_rollups).where(metric_rollups.c.minute_us < now - days * DAY_US)
            )
        return int(result.rowcount)

    def _unreadable(self, deployment: Deployment, error: BackendError) -> None:
        log.warning("metrics of deployment %s: %s", deployment.name, error)
        self._insights.raise_insight(
            InsightKind.METRICS_UNREADABLE,
            deployment_id=deployment.id,
            severity=Severity.WARNING,
            message=f"The metrics of {deployment.name} cannot be read, so its traffic is "
            f"not recorded: {error}",
            key=f"metrics_unreadable:{deployment.id}",
        )
