"""dgxmm's own metrics, served at ``GET /metrics`` (``server/metrics.py``).

Two kinds of series, kept apart on purpose:

- **Counted as it happens** (``ServerMetrics`` is the ``Telemetry`` every recording seam is
  given): deployment actions and their durations by action and outcome, the schedule
  runner's decisions by action and outcome, job runs and their durations by job and outcome,
  a job's skipped times by job and reason (the scheduler's ``SkipReason``), model servers
  whose metrics could not be read, and what the policies did on their own (idle sleeps,
  deepenings, idle stops, pre-wakes, wakes begun early). They start at zero with the
  process, as Prometheus counters do; ``rate()`` and ``increase()`` take restarts in their
  stride.
- **Read at scrape time** from the store: deployments by state, and the GPU memory each
  holds and frees now (the savings report's figures, as gauges). And the proxy's numbers
  (``ProxyStats``, when the proxy serves): requests held now and in all, hold time,
  wakes asked for, requests forwarded, refusals by reason. A gauge fed by events would
  drift from the table (a restart, a reattachment, a row changed by another instance); the
  table is the truth and a count of a few rows is cheap.

Each ``ServerMetrics`` has a registry of its own, never prometheus_client's global one: a
process (a test run) builds many apps, and two apps must not count into each other.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from dgxmm import __version__
from dgxmm.decider.acts import PolicyAct
from dgxmm.decider.schedules.service import ScheduleService
from dgxmm.fleet import DeploymentState, Fleet
from dgxmm.proxy import HOLD_BUCKETS_S, WAIT_BUCKETS_S, ProxyStats
from dgxmm.store import InstanceRole, Store
from dgxmm.time_units import SECOND_US

__all__ = ["ServerMetrics"]

# Seconds. An action waits for a model server's start-up gate (minutes); a job may run an hour.
_ACTION_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)
_RUN_BUCKETS = (0.005, 0.05, 0.25, 1, 5, 15, 60, 300, 900, 3600)


class ServerMetrics:
    """The counters and histograms of one app, fed by the recording seams (``Telemetry``)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._actions = Histogram(
            "dgxmm_deployment_action_duration_seconds",
            "Deployment actions (start, wake, stop, sleep) by outcome, and how long they took.",
            ["action", "outcome"],
            buckets=_ACTION_BUCKETS,
            registry=self.registry,
        )
        self._decisions = Counter(
            "dgxmm_schedule_decisions",
            "Slots the schedule runner decided, by the schedule's action and the outcome.",
            ["action", "outcome"],
            registry=self.registry,
        )
        self._runs = Histogram(
            "dgxmm_job_run_duration_seconds",
            "Job runs taken back by the host, by job and outcome, and how long they took.",
            ["job", "outcome"],
            buckets=_RUN_BUCKETS,
            registry=self.registry,
        )
        self._skips = Counter(
            "dgxmm_job_skips",
            "Scheduled times of a job that did not start a run, by job and reason (overlap, "
            "missed, group_busy: waited and ran later, disabled, claimed: another instance "
            "ran it).",
            ["job", "reason"],
            registry=self.registry,
        )
        self._scrape_errors = Counter(
            "dgxmm_scrape_errors",
            "Model servers whose metrics could not be read (unreadable) or that were gone.",
            ["deployment", "kind"],
            registry=self.registry,
        )
        self._policy = Counter(
            "dgxmm_policy_actions",
            "What the policies did on their own: idle sleeps, deepenings and stops, pre-wakes "
            "(the histogram policy) and scheduled wakes or starts begun early (the wake lead).",
            ["what"],
            registry=self.registry,
        )
        for what in PolicyAct:  # every series from the start: a rate over none is 0, not absent
            self._policy.labels(what.value)

    # -- Telemetry ----------------------------------------------------------------------------

    def action_finished(self, action: Enum, outcome: Enum, seconds: float) -> None:
        """Count a deployment action and its duration."""
        self._actions.labels(action.value, outcome.value).observe(max(0.0, seconds))

    def slot_decided(self, action: Enum, outcome: Enum) -> None:
        """Count a schedule runner's decision."""
        self._decisions.labels(action.value, outcome.value).inc()

    def run_finished(self, job: str, outcome: Enum, seconds: float) -> None:
        """Count a job's run and its duration."""
        self._runs.labels(job, outcome.value).observe(max(0.0, seconds))

    def runs_skipped(self, job: str, reason: Enum, count: int) -> None:
        """Count a job's skipped times by reason."""
        self._skips.labels(job, reason.value).inc(max(0, count))

    def scrape_failed(self, deployment: str, kind: Enum) -> None:
        """Count a model server whose metrics could not be read."""
        self._scrape_errors.labels(deployment, kind.value).inc()

    def policy_acted(self, what: Enum) -> None:
        """Count an idle step, a pre-wake or a wake begun early."""
        self._policy.labels(what.value).inc()

    # -- the page -----------------------------------------------------------------------------

    def exposition(
        self,
        fleet: Fleet | None,
        proxy: ProxyStats | None = None,
        *,
        store: Store | None = None,
        schedules: ScheduleService | None = None,
    ) -> bytes:
        """Return every series in the text format: the counted ones, then those read now."""
        scrape = CollectorRegistry(auto_describe=False)
        scrape.register(self.registry)
        scrape.register(_State(fleet))
        scrape.register(_Watch(store, schedules, fleet))
        if proxy is not None:
            scrape.register(_Proxy(proxy))
        return generate_latest(scrape)


class _State:
    """The series read from the store at each scrape."""

    def __init__(self, fleet: Fleet | None) -> None:
        self._fleet = fleet

    def collect(self) -> Iterable[Metric]:
        info = GaugeMetricFamily("dgxmm_info", "dgxmm's version.", labels=["version"])
        info.add_metric([__version__], 1.0)
        yield info
        if self._fleet is None:
            return
        counts = dict.fromkeys(DeploymentState, 0)
        held = GaugeMetricFamily(
            "dgxmm_deployment_memory_held_gib",
            "GPU memory a deployment holds now (declared per GPU in its state, times its GPUs).",
            labels=["deployment", "state"],
        )
        freed = GaugeMetricFamily(
            "dgxmm_deployment_memory_freed_gib",
            "GPU memory a deployment frees now against running: its awake memory less what it "
            "holds. avg_over_time(...[1d]) * 24 is the GiB-hours freed in a day.",
            labels=["deployment"],
        )
        for deployment in self._fleet.deployments.list():
            counts[deployment.state] += 1
            gpus = deployment.gpu_count
            held.add_metric([deployment.name, deployment.state.value], deployment.held_gib * gpus)
            awake = deployment.memory_gib_awake * gpus
            freed.add_metric([deployment.name], max(0.0, awake - deployment.held_gib * gpus))
        states = GaugeMetricFamily(
            "dgxmm_deployments", "Deployments by state, as the store has them.", labels=["state"]
        )
        for state, count in counts.items():
            states.add_metric([state.value], float(count))
        yield states
        yield held
        yield freed


class _Watch:
    """What the alerting rules watch, read at each scrape (``docs/alerts/dgxmm-rules.yml``)."""

    def __init__(
        self, store: Store | None, schedules: ScheduleService | None, fleet: Fleet | None
    ) -> None:
        self._store = store
        self._schedules = schedules
        self._fleet = fleet

    def collect(self) -> Iterable[Metric]:
        if self._store is not None:
            beat = GaugeMetricFamily(
                "dgxmm_ticker_last_beat_timestamp_seconds",
                "When the instance that ticks the scheduler last beat (Unix seconds; 0: no "
                "instance ticks). Every instance on the store serves the same value.",
            )
            holders = [
                i.last_seen
                for i in self._store.presence.all()
                if i.alive and i.role is InstanceRole.HOLDER
            ]
            beat.add_metric([], max(holders, default=0) / SECOND_US)
            yield beat
        if self._schedules is not None and self._fleet is not None:
            paused = GaugeMetricFamily(
                "dgxmm_schedules_paused",
                "Schedules a failed action switched off, by deployment (each waits for a person).",
                labels=["deployment"],
            )
            names = {d.id: d.name for d in self._fleet.deployments.list()}
            counts: dict[str, int] = dict.fromkeys(names.values(), 0)
            for schedule in self._schedules.list():
                if not schedule.enabled and schedule.paused_reason is not None:
                    name = names.get(schedule.deployment_id, str(schedule.deployment_id))
                    counts[name] = counts.get(name, 0) + 1
            for name, count in sorted(counts.items()):
                paused.add_metric([name], float(count))
            yield paused


class _Proxy:
    """The proxy's numbers, as ``ProxyStats`` has them at each scrape."""

    def __init__(self, stats: ProxyStats) -> None:
        self._stats = stats

    def collect(self) -> Iterable[Metric]:
        now = self._stats.snapshot()
        held = GaugeMetricFamily(
            "dgxmm_proxy_held_requests",
            "Requests the proxy holds now while their deployment wakes.",
            labels=["deployment"],
        )
        for name, count in sorted(now.held.items()):
            held.add_metric([name], float(count))
        yield held
        for name, doc, values in (
            ("dgxmm_proxy_held_requests", "Requests ever held for a wake.", now.held_total),
            ("dgxmm_proxy_wakes", "Wakes and starts a request asked for.", now.wakes),
            ("dgxmm_proxy_forwarded_requests", "Requests passed on to a model server.",
             now.forwarded),
        ):  # fmt: skip
            counter = CounterMetricFamily(name, doc, labels=["deployment"])
            for deployment, count in sorted(values.items()):
                counter.add_metric([deployment], float(count))
            yield counter
        refused = CounterMetricFamily(
            "dgxmm_proxy_refused_requests",
            "Requests the proxy answered itself with a 503 (or 502), by reason.",
            labels=["reason"],
        )
        for reason, count in sorted(now.refused.items()):
            refused.add_metric([reason], float(count))
        yield refused
        buckets = [(repr(bound), float(n)) for bound, n in zip(HOLD_BUCKETS_S, now.hold_buckets,
                                                              strict=True)]  # fmt: skip
        yield HistogramMetricFamily(
            "dgxmm_proxy_hold_seconds",
            "How long requests were held before they were forwarded, refused or gone.",
            buckets=[*buckets, ("+Inf", float(now.hold_count))],
            sum_value=now.hold_sum_s,
        )
        waits = HistogramMetricFamily(
            "dgxmm_proxy_added_wait_seconds",
            "Every request forwarded, by the wait its deployment's wake or start added (0: it "
            "was up). _sum is the wait-seconds, _sum / _count the mean added wait, "
            "histogram_quantile(0.99, ...) the p99 over every request.",
            labels=["deployment"],
        )
        for name, found in sorted(now.added_waits.items()):
            bounds = zip(WAIT_BUCKETS_S, found.buckets, strict=True)
            counted = [(repr(bound), float(n)) for bound, n in bounds]
            waits.add_metric(
                [name], [*counted, ("+Inf", float(found.count))], sum_value=found.sum_s
            )
        yield waits
