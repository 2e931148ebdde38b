"""Where each condition is read from: recorded rows, never a hook in a hot path.

``Conditions.find(rule, now)`` returns, for each subject the rule's condition holds for now,
a ``Finding``: its words and a token that changes with each new occurrence (the id of the
latest failed run, the count of refusals). The evaluator groups findings into incidents.

- jobs: the store's ``job_runs`` (newest 500 runs), and the engine's skip counts by job
  (``WorkloadStats``: the times skipped because the job was still running, or missed);
- schedules: the decider's schedules switched off by a failure (``paused_reason``);
- deployments: the fleet's deployments in ``failed``; insights: the open critical ones;
- the proxy: its record of refused requests per deployment and minute (``request_minutes``);
- instances: the store's ``instances``, one that died without stopping.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from dgxmm.alerts.rules import Condition, Rule
from dgxmm.decider import ScheduleService
from dgxmm.fleet import DeploymentState, Fleet, Severity
from dgxmm.jobs import Outcome, SkipReason
from dgxmm.store import InstanceRole, RunRecord, Store, Trigger
from dgxmm.time_units import MINUTE_US, SECOND_US

__all__ = ["Conditions", "Finding"]

RUNS_READ = 500
# Skips that mean a job's work did not happen: not a switched-off job, nor a time another
# instance ran, nor a group's wait (which runs once after).
_SKIPS = (SkipReason.OVERLAP, SkipReason.MISSED)


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """The condition holds for one subject."""

    subject: str
    token: str  # changes with each new occurrence
    title: str


class Conditions:
    """Reads what each condition needs from the services that record it."""

    def __init__(
        self,
        store: Store,
        fleet: Fleet,
        schedules: ScheduleService | None = None,
        *,
        skips: Callable[[str], int] | None = None,
    ) -> None:
        self._store = store
        self._fleet = fleet
        self._schedules = schedules
        self._skips = skips or self._engine_skips
        # A job's skip count when its last run was seen: the streak is the count since.
        self._skip_base: dict[str, tuple[int, int]] = {}

    def find(self, rule: Rule, now_us: int) -> dict[str, Finding]:
        """Return the subjects ``rule``'s condition holds for at ``now_us``."""
        found = self._finders[rule.condition](self, rule, now_us)
        return {f.subject: f for f in found}

    # -- jobs -----------------------------------------------------------------------------

    def _latest_runs(self) -> dict[str, tuple[RunRecord | None, RunRecord]]:
        """Return each job's latest finished run (or None) and latest run, from the newest."""
        latest: dict[str, RunRecord] = {}
        finished: dict[str, RunRecord] = {}
        for run in self._store.runs.page(limit=RUNS_READ):
            latest.setdefault(run.job, run)
            if not run.under_way:
                finished.setdefault(run.job, run)
        return {job: (finished.get(job), run) for job, run in latest.items()}

    def _job_outcome(self, outcome: Outcome, words: str) -> list[Finding]:
        found = []
        for job, (ended, _) in self._latest_runs().items():
            if ended is not None and ended.outcome is outcome:
                why = f": {ended.public_error}" if ended.public_error else ""
                found.append(
                    Finding(
                        subject=f"job:{job}",
                        token=str(ended.id),
                        title=f"job {job} {words} (run {ended.id}){why}",
                    )
                )
        return found

    def _job_failed(self, rule: Rule, now_us: int) -> list[Finding]:
        return self._job_outcome(Outcome.FAILED, "failed")

    def _job_over_time(self, rule: Rule, now_us: int) -> list[Finding]:
        return self._job_outcome(Outcome.OVER_TIME, "went over its time limit")

    def _job_late(self, rule: Rule, now_us: int) -> list[Finding]:
        limit_us = (rule.window_minutes or 1) * MINUTE_US
        found = []
        for job, (_, run) in self._latest_runs().items():
            late = run.started_at - run.scheduled_at
            if run.trigger is Trigger.SCHEDULE and late > limit_us:
                found.append(
                    Finding(
                        subject=f"job:{job}",
                        token=str(run.id),
                        title=f"job {job} started {late // SECOND_US} s after its time "
                        f"(more than {rule.window_minutes} min)",
                    )
                )
        return found

    def _job_skipped(self, rule: Rule, now_us: int) -> list[Finding]:
        latest = self._latest_runs()
        names = set(self._store.workload_stats.names()) | set(latest)
        found = []
        for job in sorted(names):
            total = self._skips(job)
            run_id = latest[job][1].id if job in latest else 0
            seen = self._skip_base.get(job)
            if seen is None or seen[0] != run_id:
                # First seen, or a run began since: the streak starts again from here.
                self._skip_base[job] = seen = (run_id, total)
            streak = total - seen[1]
            if streak >= (rule.threshold or 1):
                found.append(
                    Finding(
                        subject=f"job:{job}",
                        token=str(streak),
                        title=f"job {job} was skipped {streak} times in a row",
                    )
                )
        return found

    def _engine_skips(self, job: str) -> int:
        counts = self._store.workload_stats.skips(job)
        return sum(counts.get(reason, 0) for reason in _SKIPS)

    # -- schedules, deployments, insights --------------------------------------------------

    def _schedule_paused(self, rule: Rule, now_us: int) -> list[Finding]:
        if self._schedules is None:
            return []
        names = {d.id: d.name for d in self._fleet.deployments.list()}
        return [
            Finding(
                subject=f"schedule:{s.id}",
                token=str(s.paused_for_event or s.updated_at),
                title=f"the {s.action.value} schedule {s.id} of "
                f"{names.get(s.deployment_id, s.deployment_id)} failed and is paused: "
                f"{s.paused_reason}",
            )
            for s in self._schedules.list()
            if not s.enabled and s.paused_reason
        ]

    def _deployment_failed(self, rule: Rule, now_us: int) -> list[Finding]:
        return [
            Finding(
                subject=f"deployment:{d.name}",
                token=str(d.state_since),
                title=f"deployment {d.name} failed: {d.last_error or 'no reason recorded'}",
            )
            for d in self._fleet.deployments.list()
            if d.state is DeploymentState.FAILED
        ]

    def _critical_insight(self, rule: Rule, now_us: int) -> list[Finding]:
        return [
            Finding(subject=f"insight:{i.id}", token=str(i.id), title=i.message)
            for i in self._fleet.insights.list()
            if i.severity is Severity.CRITICAL
        ]

    # -- the proxy, instances --------------------------------------------------------------

    def _proxy_refused(self, rule: Rule, now_us: int) -> list[Finding]:
        minutes = rule.window_minutes or 1
        since = now_us - minutes * MINUTE_US
        found = []
        for d in self._fleet.deployments.list():
            rows = self._fleet.request_minutes.read(d.id, since, now_us + MINUTE_US)
            refused = sum(sum(r.refused.values()) for r in rows)
            if refused > (rule.threshold or 0):
                found.append(
                    Finding(
                        subject=f"deployment:{d.name}",
                        token=str(refused),
                        title=f"the proxy refused {refused} requests of {d.name} "
                        f"in {minutes} min (more than {rule.threshold})",
                    )
                )
        return found

    def _instance_lost(self, rule: Rule, now_us: int) -> list[Finding]:
        news_us = (rule.window_minutes or 60) * MINUTE_US
        instances = self._store.presence.all()
        holders = [i.id for i in instances if i.alive and i.role is InstanceRole.HOLDER]
        found = []
        for i in instances:
            if i.alive or i.stopped_at is not None or i.role is InstanceRole.PROCESS:
                continue
            if now_us - i.last_seen > news_us:
                continue
            lease = ""
            if i.role is InstanceRole.HOLDER:
                lease = (
                    f"; it held the ticker's lease, {holders[0]} took it over"
                    if holders
                    else ("; it held the ticker's lease, nobody holds it yet")
                )
            found.append(
                Finding(
                    subject=f"instance:{i.id}",
                    token=str(i.last_seen),
                    title=f"instance {i.id} on {i.place.get('host', '?')} was lost" + lease,
                )
            )
        return found

    _finders: ClassVar[dict[Condition, Callable[[Conditions, Rule, int], list[Finding]]]] = {
        Condition.JOB_FAILED: _job_failed,
        Condition.JOB_OVER_TIME: _job_over_time,
        Condition.JOB_LATE: _job_late,
        Condition.JOB_SKIPPED: _job_skipped,
        Condition.SCHEDULE_PAUSED: _schedule_paused,
        Condition.DEPLOYMENT_FAILED: _deployment_failed,
        Condition.CRITICAL_INSIGHT: _critical_insight,
        Condition.PROXY_REFUSED: _proxy_refused,
        Condition.INSTANCE_LOST: _instance_lost,
    }
