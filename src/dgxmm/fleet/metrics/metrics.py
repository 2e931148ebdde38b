"""``Metrics``: samples of deployments, their request activity, and the rollups built from them.

Every sample of a deployment's ``/metrics`` (the ``metrics_rollup`` job's, once a minute, and
``sample_now``'s, on demand) does two things:

- **request activity**: ``last_request_at`` moves forward to the sample's time when it shows
  requests running or waiting, or more finished requests than the previous sample of the
  same deployment (a counter that went down means the server restarted: what it holds is
  new). dgxmm's own requests (the post-wake check's completion, told by ``discount``) are
  taken off first: they are neither activity nor traffic;
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
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, delete, insert, select, update

from dgxmm.clock import Clock
from dgxmm.errors import BackendError, Conflict, InvalidInput, ServerGone
from dgxmm.fleet.backends.protocol import Backend, Health
from dgxmm.fleet.backends.registry import Backends
from dgxmm.fleet.deployments.deployment import Deployment, DeploymentState
from dgxmm.fleet.deployments.insights import InsightKind, Insights, Severity
from dgxmm.fleet.deployments.repo import DeploymentRepo
from dgxmm.fleet.deployments.tables import metric_rollups
from dgxmm.fleet.metrics.rollups import (
    DEFAULT_RETENTION_DAYS,
    RETENTION_SETTING,
    Latency,
    Rollup,
    mean_of,
)
from dgxmm.fleet.metrics.sample import MetricsSample, SleepState, delta_between
from dgxmm.fleet.metrics.scrapes import Scrape, Scraped, ScrapePool
from dgxmm.jobs import RunContext
from dgxmm.store import reading, writing
from dgxmm.telemetry import NO_TELEMETRY, Telemetry
from dgxmm.time_units import DAY_US, MINUTE_US

__all__ = ["Metrics"]

log = logging.getLogger(__name__)

_SAMPLED = (DeploymentState.RUNNING, DeploymentState.SLEEPING)

OnGone = Callable[[Deployment, str], object]  # what it returns is not read
_Key = tuple[int, int]  # (deployment id, minute)
_IN_CHUNK = 500  # ids per IN list: far below SQLite's and PostgreSQL's bound-parameter limits


@dataclass(slots=True, kw_only=True)
class _Minute:
    """A deployment's minute as the pass builds it; ``stored``: its row exists already."""

    requests: int
    mean_running: float
    mean_waiting: float
    mean_latency_s: float | None
    samples: int
    stored: bool


def _minute_of(sample: MetricsSample) -> int:
    return sample.taken_at_us - sample.taken_at_us % MINUTE_US


def _columns(key: _Key, minute: _Minute, *, keyed: bool = True) -> dict[str, Any]:
    """Return a minute's row as the table's columns (without its key unless ``keyed``)."""
    return {
        **({"deployment_id": key[0], "minute_us": key[1]} if keyed else {}),
        "requests": minute.requests,
        "mean_running": minute.mean_running,
        "mean_waiting": minute.mean_waiting,
        "mean_latency_s": minute.mean_latency_s,
        "samples": minute.samples,
    }


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
        on_asleep: OnGone = lambda deployment, why: None,
        on_awake: OnGone = lambda deployment, why: None,
        telemetry: Telemetry = NO_TELEMETRY,
        retention_days: Callable[[], object] = lambda: DEFAULT_RETENTION_DAYS,
    ) -> None:
        self._engine = engine
        self._clock = clock
        self._deployments = deployments
        self._backends = backends
        self._insights = insights
        self._on_gone = on_gone
        self._on_asleep = on_asleep
        self._on_awake = on_awake
        self._telemetry = telemetry
        self._retention_days = retention_days
        self._lock = threading.Lock()
        self._previous: dict[int, MetricsSample] = {}
        self._latency: dict[int, Latency] = {}
        self._scraping: set[int] = set()  # deployments whose scrape is under way
        self._own: dict[int, int] = {}  # dgxmm's own completions the next delta still holds
        self._scrapes = ScrapePool()

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
        self.record_all([(deployment, sample)])

    def record_all(self, samples: list[tuple[Deployment, MetricsSample]]) -> None:
        """Record samples as ``record`` does, in one transaction (one commit for a pass).

        The minutes' rows are read in one query and written in two statements of many rows:
        a pass over a thousand deployments is a handful of statements, not thousands.
        """
        if not samples:
            return
        with self._lock, writing(self._engine) as connection:
            minutes = self._minute_rows(connection, samples)
            seen: dict[int, int] = {}
            changed: set[_Key] = set()
            for deployment, sample in samples:
                self._fold(deployment, sample, minutes, seen, changed)
            self._deployments.note_requests(connection, seen)
            rows = [(key, minutes[key]) for key in sorted(changed)]
            fresh = [_columns(key, minute) for key, minute in rows if not minute.stored]
            if fresh:
                connection.execute(insert(metric_rollups), fresh)
            # An executemany UPDATE: the SET columns come from the rows' keys.
            stored = [
                {"b_id": key[0], "b_minute": key[1], **_columns(key, minute, keyed=False)}
                for key, minute in rows
                if minute.stored
            ]
            if stored:
                connection.execute(
                    update(metric_rollups).where(
                        metric_rollups.c.deployment_id == bindparam("b_id"),
                        metric_rollups.c.minute_us == bindparam("b_minute"),
                    ),
                    stored,
                )

    def _minute_rows(
        self, connection: Connection, samples: list[tuple[Deployment, MetricsSample]]
    ) -> dict[_Key, _Minute]:
        """Return the stored rollup rows of the running deployments' sampled minutes."""
        keys = {
            (deployment.id, _minute_of(sample))
            for deployment, sample in samples
            if deployment.state is DeploymentState.RUNNING
        }
        found: dict[_Key, _Minute] = {}
        ids = sorted({deployment_id for deployment_id, _ in keys})
        minutes = sorted({minute for _, minute in keys})
        for start in range(0, len(ids), _IN_CHUNK):
            query = select(metric_rollups).where(
                metric_rollups.c.deployment_id.in_(ids[start : start + _IN_CHUNK]),
                metric_rollups.c.minute_us.in_(minutes),
            )
            for row in connection.execute(query):
                key = (int(row.deployment_id), int(row.minute_us))
                if key in keys:
                    found[key] = _Minute(
                        requests=int(row.requests),
                        mean_running=float(row.mean_running),
                        mean_waiting=float(row.mean_waiting),
                        mean_latency_s=row.mean_latency_s,
                        samples=int(row.samples),
                        stored=True,
                    )
        return found

    def _fold(
        self,
        deployment: Deployment,
        sample: MetricsSample,
        minutes: dict[_Key, _Minute],
        seen: dict[int, int],
        changed: set[_Key],
    ) -> None:
        """Fold one sample into the activity (``seen``) and its minute's row (``minutes``)."""
        minute = _minute_of(sample)
        previous = self._previous.get(deployment.id)
        if previous is not None and sample.taken_at_us < previous.taken_at_us:
            return  # an older sample that lost a race: its news is already counted
        self._previous[deployment.id] = sample
        delta = delta_between(previous, sample) if previous is not None else None
        own = self._own.pop(deployment.id, 0)  # a first sample's baseline holds them too
        finished = max(0, delta.requests_finished - own) if delta is not None else 0
        active = not sample.is_idle or finished > 0
        latency = self._latency.get(deployment.id)
        if active:
            seen[deployment.id] = max(seen.get(deployment.id, 0), sample.taken_at_us)
        if deployment.state is not DeploymentState.RUNNING:
            return
        key = (deployment.id, minute)
        row = minutes.get(key)
        if latency is None or latency.minute_us != minute:
            # The minute's first sample here; a row already there is from before a
            # restart, its mean weighted by its requests.
            mean = row.mean_latency_s if row is not None else None
            requests = row.requests if row is not None and mean is not None else 0
            latency = Latency(
                minute_us=minute, sum_s=mean * requests if mean is not None else 0.0, count=requests
            )
            self._latency[deployment.id] = latency
        if delta is not None:
            latency.sum_s += delta.latency_sum_s
            latency.count += delta.latency_count
        samples = (row.samples if row is not None else 0) + 1
        minutes[key] = _Minute(
            requests=(row.requests if row is not None else 0) + finished,
            mean_running=mean_of(row, "mean_running", sample.requests_running, samples),
            mean_waiting=mean_of(row, "mean_waiting", sample.requests_waiting, samples),
            mean_latency_s=latency.sum_s / latency.count if latency.count else None,
            samples=samples,
            stored=row is not None and row.stored,
        )
        changed.add(key)

    def discount(self, deployment_id: int, requests: int = 1) -> None:
        """Note requests of dgxmm's own (the post-wake check): the next sample leaves them out."""
        with self._lock:
            self._own[deployment_id] = self._own.get(deployment_id, 0) + requests

    def forget(self, deployment_id: int) -> None:
        """Drop the previous sample: the server was started or stopped, its counters begin again."""
        with self._lock:
            self._previous.pop(deployment_id, None)
            self._latency.pop(deployment_id, None)
            self._own.pop(deployment_id, None)

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

    def write_history(self, rollups: list[Rollup]) -> int:
        """Add rollups for minutes that have none (the demo's synthetic weeks); return how many.

        A minute that already has a rollup keeps it: what a sample measured wins.
        """
        if not rollups:
            return 0
        by_deployment: dict[int, list[Rollup]] = {}
        for rollup in rollups:
            by_deployment.setdefault(rollup.deployment_id, []).append(rollup)
        written = 0
        with writing(self._engine) as connection:
            for deployment_id, rows in by_deployment.items():
                taken = set(
                    connection.execute(
                        select(metric_rollups.c.minute_us).where(
                            metric_rollups.c.deployment_id == deployment_id,
                            metric_rollups.c.minute_us >= min(r.minute_us for r in rows),
                            metric_rollups.c.minute_us <= max(r.minute_us for r in rows),
                        )
                    ).scalars()
                )
                fresh = [
                    {"deployment_id": deployment_id, **r.to_json()}
                    for r in rows
                    if r.minute_us not in taken
                ]
                if fresh:
                    connection.execute(insert(metric_rollups), fresh)
                written += len(fresh)
        return written

    # -- the system jobs ----------------------------------------------------------------------

    def rollup_all(self, ctx: RunContext | None = None) -> str:
        """Sample every running deployment and check the sleeping ones (``metrics_rollup``).

        The targets are scraped at once on a bounded pool, and the pass waits for each at most
        its per-target timeout (the backends' connect and metrics timeouts): a hung or slow
        server never delays the others, and one still unanswered at the deadline counts as
        unreadable; it is not scraped again until its request ends. A process found dead, or
        a server whose port refuses, marks its deployment failed; a running deployment whose
        server reports itself asleep (``vllm:engine_sleep_state``, or ``GET /is_sleeping``
        when its page has no such gauge) is marked sleeping, and a sleeping one whose
        ``GET /is_sleeping`` says awake is marked running.
        """
        if ctx is not None:
            ctx.check()
        targets = []
        with self._lock:
            for deployment in self._deployments.list():
                if deployment.state in _SAMPLED and deployment.id not in self._scraping:
                    self._scraping.add(deployment.id)
                    targets.append(deployment)
        deadline_s = self._backends.timeouts.scrape_deadline_s
        finished, never = self._scrapes.run(targets, self._scrape, deadline_s)
        with self._lock:
            self._scraping.difference_update(deployment.id for deployment in never)
        counts = dict.fromkeys(Scrape, 0)
        samples = []
        unreadable = []
        for deployment in targets:
            kind, sample, error = finished.get(deployment.id) or (
                Scrape.UNREADABLE,
                None,
                BackendError(f"metrics of {deployment.name}: no answer within {deadline_s:g} s"),
            )
            counts[kind] += 1
            if kind in (Scrape.GONE, Scrape.UNREADABLE):
                self._telemetry.scrape_failed(deployment.name, kind)
            if sample is not None:
                samples.append((deployment, sample))
            if error is not None:
                unreadable.append((deployment, error))
        # One commit each for the samples and the insights, not one per deployment: a
        # commit is a sync to disk, and a hundred of them outlast the scrapes.
        self.record_all(samples)
        self._unreadable(unreadable)
        for deployment, sample in samples:
            # dgxmm says running, the server says asleep: a sleep that finished after dgxmm
            # stopped waiting for it. Reconciled (by the reconciler, under the deployer's lock).
            if sample.sleep_state in (SleepState.WEIGHTS_OFFLOADED, SleepState.DISCARD_ALL):
                assert sample.sleep_state is not None
                self._on_asleep(deployment, f"sleep_state={sample.sleep_state.value}")
        parts = [f"{counts[Scrape.SAMPLED]} sampled"]
        if counts[Scrape.GONE]:
            parts.append(f"{counts[Scrape.GONE]} gone")
        if counts[Scrape.UNREADABLE]:
            parts.append(f"{counts[Scrape.UNREADABLE]} unreadable")
        return ", ".join(parts)

    def close(self) -> None:
        """Start no more scrapes (those under way end on their own timeouts)."""
        self._scrapes.close()

    def _scrape(self, deployment: Deployment) -> Scraped:
        """Sample a running deployment, or check a sleeping one's health; say how it went."""
        try:
            backend = self._backends.of(deployment)
            if deployment.state is DeploymentState.RUNNING:
                try:
                    sample = backend.sample()
                except ServerGone as error:
                    self._on_gone(deployment, str(error))
                    return Scrape.GONE, None, None
                except BackendError as error:
                    return Scrape.UNREADABLE, None, error
                # A server without the sleep-state gauge (older vLLM) is asked outright.
                if sample.sleep_state is None and _asks_sleeping(backend):
                    self._on_asleep(deployment, "GET /is_sleeping says it sleeps")
                return Scrape.SAMPLED, sample, None
            check = backend.check_health()
            if check.health is Health.GONE:
                self._on_gone(deployment, check.detail)
                return Scrape.GONE, None, None
            # The record says asleep: a wake that outlived dgxmm's wait (or a kill -9 of
            # dgxmm during one) finished on the server, and only the server can say so.
            if check.is_healthy and _asks_sleeping(backend) is False:
                self._on_awake(deployment, "GET /is_sleeping says it is awake")
            return Scrape.CHECKED, None, None
        finally:
            with self._lock:
                self._scraping.discard(deployment.id)

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

    def _unreadable(self, unreadable: list[tuple[Deployment, BackendError]]) -> None:
        """Raise each deployment's "metrics unreadable" insight, all in one transaction."""
        if not unreadable:
            return
        with writing(self._engine) as connection:
            for deployment, error in unreadable:
                log.warning("metrics of deployment %s: %s", deployment.name, error)
                if not self._deployments.exists(deployment.id, connection=connection):
                    continue  # removed while it was scraped
                self._insights.raise_insight(
                    InsightKind.METRICS_UNREADABLE,
                    deployment_id=deployment.id,
                    severity=Severity.WARNING,
                    message=f"The metrics of {deployment.name} cannot be read, so its "
                    f"traffic is not recorded: {error}",
                    key=f"metrics_unreadable:{deployment.id}",
                    connection=connection,
                )


def _asks_sleeping(backend: Backend) -> bool | None:
    """Return what ``GET /is_sleeping`` says; None when it cannot be read (the next pass asks)."""
    try:
        return backend.is_sleeping()
    except BackendError:
        return None
