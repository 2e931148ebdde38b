"""The schedule runner: a pass that only decides, and actions that run beside it.

A pass (``start_pass``) reads the switched-on schedules, finds the slots due at its planned
minute (the job's scheduled time, not the moment the pass began: a pass that starts at
22:15:03 still runs the 22:00 slot) and hands each deployment's slot to a bounded pool of
worker threads. It never waits for a model server, so it takes well under a second whatever
the actions take, and a deployment whose start takes minutes delays no other deployment.

- **One action per deployment**: a deployment whose action is still under way is left out of
  the pass (its slot stays due; the next pass looks again), and a worker takes the
  deployment's lock without waiting: when a manual action holds it, the slot is
  ``skipped: an action on it is under way``.
- **The latest slot wins**: of one deployment's slots due in one pass only the latest acts;
  the earlier ones are recorded ``superseded`` (a 12:05 sleep and a 12:00 wake due together
  leave it asleep, not woken straight back up).
- **Skipped, not failed**: the state is read under the lock, and a state that changed under
  the runner (stopped, asleep, already awake, refused by the deployer) is ``skipped: <reason>``.
  Only a model server that was asked and failed makes a run ``failed``, which pauses the
  deployment's sleep and wake schedules.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from datetime import date
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo

from dgxmm.decider.action_pool import ActionPool
from dgxmm.decider.acts import PolicyAct
from dgxmm.decider.schedules.lead import MEASURED_WAKES, Lead, due_early, lead_for
from dgxmm.decider.schedules.pauses import PAUSING, Pauses
from dgxmm.decider.schedules.rows import Schedule, ScheduleAction, ScheduleRows
from dgxmm.decider.schedules.slots import Slot, due_slot, local_today, parse_time
from dgxmm.decider.schedules.verdicts import (
    DeployerCall,
    Skip,
    down_verdict,
    quiet_verdict,
    slot_order,
    superseded_reason,
    up_verdict,
)
from dgxmm.errors import (
    BackendError,
    Conflict,
    DgxmmError,
    DoesNotFit,
    NotFound,
    ServerGone,
    TimedOut,
)
from dgxmm.fleet import (
    AuditSubject,
    Deployment,
    DeploymentState,
    Door,
    EventAction,
    EventOutcome,
    Fleet,
    InsightKind,
    LeadKind,
    Severity,
)
from dgxmm.jobs import resolve_zone
from dgxmm.store import Store, writing

__all__ = [
    "ACTION_WORKERS",
    "PendingRun",
    "ResultKind",
    "ScheduleRunner",
    "SlotRun",
    "lead_now",
]

# Deployments acted on at once. Start-ups still go one at a time (the deployer's start-up
# gate), but sleeps, stops and a hung server's wait no longer queue behind them.
ACTION_WORKERS = 32


class ResultKind(StrEnum):
    """How a slot's run ended."""

    DONE = "done"
    DEFERRED = "deferred"
    SKIPPED = "skipped"
    SUPERSEDED = "superseded"  # a later slot of the same deployment acted in the same pass
    FAILED = "failed"

    @property
    def event(self) -> EventOutcome:
        """The outcome of the deployment event that records it."""
        if self is ResultKind.SUPERSEDED:
            return EventOutcome.SKIPPED  # nothing was done
        return EventOutcome(self.value)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Outcome:
    kind: ResultKind
    reason: str | None = None
    deferred_since: int | None = None
    acted: bool = False  # the deployer ran the action (and wrote its event)
    timed_out_event: int | None = None  # a sleep that timed out: its failed event


@dataclass(frozen=True, slots=True, kw_only=True)
class SlotRun:
    """One slot the runner handled."""

    schedule_id: int
    deployment_id: int
    action: ScheduleAction
    day: str  # the latest local date it served, recorded as the schedule's last run day
    at_us: int  # the slot's planned instant (a wake begun early by its lead is before it)
    days: tuple[str, ...]  # every local date it served (two where the zone skipped a day)
    kind: ResultKind
    reason: str | None = None

    @property
    def result(self) -> str:
        """The result as the schedule records it: done, deferred, skipped: ..., failed: ..."""
        if self.kind in (ResultKind.SKIPPED, ResultKind.SUPERSEDED, ResultKind.FAILED):
            return f"{self.kind.value}: {self.reason}"
        return self.kind.value


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingRun:
    """A slot a pass handed on; ``future`` gives its run (None: another worker recorded it)."""

    schedule_id: int
    deployment_id: int
    action: ScheduleAction
    future: Future[SlotRun | None]

    def describe(self) -> str:
        """Say how it stands: its result, or that its action is under way."""
        if self.future.done() and self.future.exception() is None:
            run = self.future.result()
            if run is not None:
                return f"schedule {self.schedule_id}: {run.result}"
        return f"schedule {self.schedule_id}: {self.action.value} under way"


class ScheduleRunner:
    """Finds due slots and runs their actions on a bounded pool; see the module docstring."""

    def __init__(
        self,
        store: Store,
        fleet: Fleet,
        rows: ScheduleRows,
        *,
        pauses: Pauses,
        workers: int = ACTION_WORKERS,
    ) -> None:
        self._store = store
        self._fleet = fleet
        self._rows = rows
        self._pauses = pauses
        self._actions: ActionPool[SlotRun | None] = ActionPool(workers, "schedule-action")

    def start_pass(self, now: int, *, leads: bool = True) -> list[PendingRun]:
        """Hand every slot due at the planned minute ``now`` to a worker; do not wait.

        ``leads``: wakes and starts begin early by their wake lead (not in forecast-only
        mode, where the schedules in force act at their minute and the decider adds nothing).
        """
        due: dict[int, list[tuple[Any, Slot]]] = {}
        zones: dict[str, tuple[ZoneInfo, date]] = {}
        found_leads = _Leads(self._fleet)
        for row in self._rows.runnable():  # light rows first: most slots are not due
            known = zones.get(row.time_zone)
            if known is None:
                zone = resolve_zone(row.time_zone)
                known = zones[row.time_zone] = (zone, local_today(now, zone))
            lead_us = 0
            if leads and not ScheduleAction(row.action).quiets:
                lead_us = found_leads.us(row.deployment_id)
            if lead_us:
                slot = due_early(
                    days=row.days, time=parse_time(row.at_time), zone=known[0], now_us=now,
                    last_run_day=row.last_run_day, lead_us=lead_us, today=known[1],
                )  # fmt: skip
            else:
                slot = due_slot(
                    days=row.days,
                    time=parse_time(row.at_time),
                    zone=known[0],
                    now_us=now,
                    last_run_day=row.last_run_day,
                    deferred_since=row.deferred_since,
                    today=known[1],
                )
            if slot is not None:
                due.setdefault(row.deployment_id, []).append((row, slot))
        pending: list[PendingRun] = []
        for deployment_id, slots in due.items():
            if self._actions.is_acting(deployment_id):
                continue  # its action is under way; the slot stays due for the next pass
            slots.sort(key=lambda found: slot_order(found[0].id, found[1]))
            *earlier, (last_row, last_slot) = slots
            latest = self._rows.get(last_row.id)
            for row, slot in earlier:
                pending.append(self._supersede(self._rows.get(row.id), slot, latest, now))
            future = self._actions.submit(deployment_id, self._run, latest, last_slot, now)
            if future is None:
                continue  # one began meanwhile: the slot stays due for the next pass
            pending.append(
                PendingRun(
                    schedule_id=latest.id,
                    deployment_id=deployment_id,
                    action=latest.action,
                    future=future,
                )
            )
        return pending

    def drain(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the actions under way; tell whether all finished."""
        return self._actions.drain(timeout_s)

    def close(self) -> None:
        """Take no more actions; those under way finish on their threads."""
        self._actions.close()

    # -- one slot -----------------------------------------------------------------------------

    def _supersede(self, schedule: Schedule, slot: Slot, latest: Schedule, now: int) -> PendingRun:
        reason = superseded_reason(schedule_id=latest.id, action=latest.action, time=latest.time)
        run = self._slot_run(schedule, slot, _Outcome(kind=ResultKind.SUPERSEDED, reason=reason))
        self._record(schedule, run, now, _Outcome(kind=run.kind, reason=reason))
        done: Future[SlotRun | None] = Future()
        done.set_result(run)
        return PendingRun(
            schedule_id=schedule.id,
            deployment_id=schedule.deployment_id,
            action=schedule.action,
            future=done,
        )

    def _run(self, schedule: Schedule, slot: Slot, now: int) -> SlotRun | None:
        try:
            fresh = self._rows.get(schedule.id)
        except NotFound:
            return None  # removed since the pass read it
        if not fresh.enabled or fresh.last_run_day in {day.isoformat() for day in slot.days}:
            return None  # paused since, or an earlier worker recorded this slot already
        actor = f"schedule:{schedule.id}"
        lock = self._fleet.deployer.lock(schedule.deployment_id)
        if not lock.acquire(blocking=False):  # a manual action: never queue behind it
            outcome = _Outcome(kind=ResultKind.SKIPPED, reason="an action on it is under way")
        else:
            try:
                if fresh.action.quiets:
                    outcome = self._quiet_down(fresh, slot, now, actor)
                else:
                    outcome = self._bring_up(fresh, actor)
            except DgxmmError as error:  # before the deployer acted: no event of its own
                outcome = _Outcome(kind=ResultKind.FAILED, reason=str(error))
            except Exception as error:  # an odd error is still recorded; the slot is not lost
                reason = f"unexpected {type(error).__name__}: {error}"
                outcome = _Outcome(kind=ResultKind.FAILED, reason=reason)
            finally:
                lock.release()
        run = self._slot_run(fresh, slot, outcome)
        self._record(fresh, run, now, outcome)
        return run

    @staticmethod
    def _slot_run(schedule: Schedule, slot: Slot, outcome: _Outcome) -> SlotRun:
        return SlotRun(
            schedule_id=schedule.id,
            deployment_id=schedule.deployment_id,
            action=schedule.action,
            day=slot.day.isoformat(),
            at_us=slot.at_us,
            days=tuple(day.isoformat() for day in slot.days),
            kind=outcome.kind,
            reason=outcome.reason,
        )

    def _quiet_down(self, schedule: Schedule, slot: Slot, now: int, actor: str) -> _Outcome:
        """Sleep or stop once quiet; the caller holds the deployment's lock."""
        deployment = self._fleet.deployments.get(schedule.deployment_id)
        verdict = down_verdict(
            action=schedule.action,
            state=deployment.state,
            deferred_since=schedule.deferred_since,
            slot_at_us=slot.at_us,
            now_us=now,
        )
        if isinstance(verdict, Skip):
            return _Outcome(kind=ResultKind.SKIPPED, reason=verdict.reason)
        # The door stays shut from the check to the end of the action: a request that arrives
        # meanwhile is held by the proxy (never sent to a server going to sleep) and defers a
        # sleep whose check it caught.
        with self._fleet.activity.closing(deployment.id) as door:
            busy = self._busy(deployment, now, door)
            if busy is not None:
                return _Outcome(
                    kind=ResultKind.DEFERRED, reason=busy, deferred_since=verdict.deferred_since
                )
            return self._act(schedule, deployment, actor, verdict.call)

    def _busy(self, deployment: Deployment, now: int, door: Door) -> str | None:
        """Read what the quiet check needs; say why the deployment is not quiet, or None.

        A running one's fresh sample is taken first (it may take a while: what the proxy
        counts, and the door's knocks, are read after it). ``quiet_verdict`` decides.
        """
        sample = None
        if deployment.state is DeploymentState.RUNNING:
            try:
                sample = self._fleet.metrics.sample_now(deployment.id)
            except ServerGone:
                raise  # the deployment has failed: a real failure
            except BackendError as error:  # unreadable is not quiet; try again at the next pass
                return f"its metrics could not be read: {error}"
        activity = self._fleet.activity
        held = activity.in_flight(deployment.id)
        seen = (self._fleet.metrics.last_request_at(deployment.id),
                activity.last_request_at(deployment.id))  # fmt: skip
        busy = quiet_verdict(
            held_through_proxy=held,
            sample=sample,
            last_request_at=max((at for at in seen if at is not None), default=None),
            knocked=door.knocked,
            now_us=now,
        )
        return None if busy is None else busy.reason

    def _bring_up(self, schedule: Schedule, actor: str) -> _Outcome:
        """Wake or start; the caller holds the deployment's lock, so the state holds."""
        deployment = self._fleet.deployments.get(schedule.deployment_id)
        verdict = up_verdict(
            action=schedule.action,
            state=deployment.state,
            # Read whatever the state: one query per wake or start keeps the rule of when
            # it matters in up_verdict alone.
            stopped_by=self._fleet.events.stopped_by(deployment.id),
        )
        if isinstance(verdict, Skip):
            return _Outcome(kind=ResultKind.SKIPPED, reason=verdict.reason)
        return self._act(schedule, deployment, actor, verdict.call)

    def _act(
        self, schedule: Schedule, deployment: Deployment, actor: str, call: DeployerCall
    ) -> _Outcome:
        """Ask the deployer; it writes the event (done, failed, or skipped when it refuses)."""
        deployer = self._fleet.deployer
        try:
            if call is DeployerCall.SLEEP:
                result = deployer.sleep(deployment.id, actor=actor)
            elif call is DeployerCall.STOP:
                result = deployer.stop(deployment.id, actor=actor)
            elif call is DeployerCall.WAKE:
                result = deployer.wake(deployment.id, actor=actor, plans=False)
            else:
                result = deployer.start(deployment.id, actor=actor, plans=False)
        except DoesNotFit as refused:
            self._fleet.insights.raise_insight(
                InsightKind.SCHEDULE_DOES_NOT_FIT,
                deployment_id=deployment.id,
                severity=Severity.WARNING,
                message=(
                    f"Schedule {schedule.id} could not {schedule.action.value} "
                    f"{deployment.name}: {refused}"
                ),
                key=f"schedule:{schedule.id}:does-not-fit",
            )
            reason = f"it does not fit: {refused}"
            return _Outcome(kind=ResultKind.SKIPPED, reason=reason, acted=True)
        except Conflict as refused:  # the deployer found a state that rules it out
            return _Outcome(kind=ResultKind.SKIPPED, reason=str(refused), acted=True)
        except DgxmmError as error:
            late = None
            if isinstance(error, TimedOut) and call is DeployerCall.SLEEP:
                # No answer in time says nothing of the outcome: the server may still sleep.
                # Its failed event (the deployer's, just written under this lock) lets the
                # pause be lifted when a reconciliation finds that sleep finished after all.
                failed = self._fleet.events.latest(
                    deployment.id, EventAction.SLEEP, outcome=EventOutcome.FAILED
                )
                late = None if failed is None else failed.id
            return _Outcome(
                kind=ResultKind.FAILED, reason=str(error), acted=True, timed_out_event=late
            )
        if result.outcome is EventOutcome.SKIPPED:  # its own event says so: so does the run
            return _Outcome(kind=ResultKind.SKIPPED, reason=result.detail, acted=True)
        return _Outcome(kind=ResultKind.DONE, acted=True)

    # -- records ------------------------------------------------------------------------------

    def _record(self, schedule: Schedule, run: SlotRun, now: int, outcome: _Outcome) -> None:
        fleet = self._fleet
        actor = f"schedule:{schedule.id}"
        values: dict[str, Any] = {"last_run_at": now, "last_result": run.result}
        if run.kind is ResultKind.DEFERRED:
            values["deferred_since"] = outcome.deferred_since
        else:
            values["last_run_day"] = run.day
            values["deferred_since"] = None
        pause = run.kind is ResultKind.FAILED and schedule.action in PAUSING
        with writing(self._store.engine) as connection:
            self._rows.change(connection, schedule.id, values)
            if not outcome.acted:  # the deployer writes the event of an action it ran
                fleet.events.record(
                    schedule.deployment_id, schedule.action.event, actor=actor,
                    outcome=run.kind.event, detail=run.reason, connection=connection,
                )  # fmt: skip
            fleet.audit.record(
                actor=actor, action=schedule.action.audited, subject=AuditSubject.DEPLOYMENT,
                subject_id=str(schedule.deployment_id),
                detail={"schedule": schedule.id, "day": run.day, "days": list(run.days),
                        "result": run.result},
                connection=connection,
            )  # fmt: skip
            if pause:
                self._pauses.pause(
                    connection, schedule, run.reason, now, timed_out_event=outcome.timed_out_event
                )
        fleet.telemetry.slot_decided(schedule.action, run.kind)
        if run.kind is ResultKind.DONE and not schedule.action.quiets and now < run.at_us:
            fleet.telemetry.policy_acted(PolicyAct.EARLY_WAKE)
        if pause:
            timed_out = outcome.timed_out_event is not None
            self._pauses.warn(schedule, run.day, run.reason, timed_out=timed_out)


class _Leads:
    """The wake leads of one pass, read once per deployment (only those with a lead on)."""

    def __init__(self, fleet: Fleet) -> None:
        self._fleet = fleet
        self._deployments: dict[int, Deployment] | None = None
        self._found: dict[int, int] = {}

    def us(self, deployment_id: int) -> int:
        """Return how early a wake or start of the deployment begins now (0: at its slot)."""
        found = self._found.get(deployment_id)
        if found is None:
            if self._deployments is None:
                self._deployments = {d.id: d for d in self._fleet.deployments.list()}
            deployment = self._deployments.get(deployment_id)
            found = 0 if deployment is None else lead_now(self._fleet, deployment).us
            self._found[deployment_id] = found
        return found


def lead_now(fleet: Fleet, deployment: Deployment) -> Lead:
    """Return the lead of the deployment's next wake or start, as it stands now.

    The level is the one it would come up from: its sleep's while it sleeps, a start's (0)
    while stopped or failed, and its configured sleep level while it is up (a wake
    schedule's next wake will find it asleep at that level).
    """
    if deployment.wake_lead.kind is LeadKind.OFF:
        return lead_for(deployment.wake_lead, level=1, ready_times_us=())
    if deployment.state is DeploymentState.SLEEPING:
        level = deployment.sleeps_at
    elif deployment.state in (DeploymentState.STOPPED, DeploymentState.FAILED):
        level = 0
    else:
        level = deployment.sleep_level
    times: list[int] = []
    if deployment.wake_lead.kind is LeadKind.MEASURED:
        times = fleet.events.ready_times(deployment.id, level, MEASURED_WAKES)
    return lead_for(deployment.wake_lead, level=level, ready_times_us=times)
