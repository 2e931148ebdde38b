"""What the schedule runner decides about a due slot: pure functions of what it read and ``now``.

The runner reads (the deployment's state, a fresh metrics sample, the proxy's counts, who
stopped it last) and acts (the deployer, the records) under the deployment's lock. What it
does in between is decided here, with no clock, no lock and no I/O, so that the savings lab
replays the product's own rules by calling these same functions rather than a model of them.

- ``slot_order``, ``superseded_reason``: of one deployment's slots due in one pass, the latest
  acts and the others are superseded.
- ``down_verdict``: a sleep or stop is skipped (the deployment's state; still busy 60 minutes
  after its first deferral) or goes on to its quiet check.
- ``quiet_verdict``: why a deployment is not quiet (``NotQuiet``), or None.
- ``up_verdict``: a wake or start is skipped, or names the deployer's call (a wake that finds
  its deployment stopped starts it, and only when a schedule stopped it).

Each reason is the text the runner records as ``skipped: <reason>`` or ``deferred``'s detail.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from dgxmm.decider.schedules.rows import ScheduleAction
from dgxmm.decider.schedules.slots import DEFER_WINDOW_US, Slot
from dgxmm.fleet import DeploymentState, MetricsSample, is_policy
from dgxmm.time_units import MINUTE_US, SECOND_US
from dgxmm.words import counted

__all__ = [
    "QUIET_US",
    "Act",
    "CheckQuiet",
    "DeployerCall",
    "NotQuiet",
    "Skip",
    "Traffic",
    "down_verdict",
    "quiet_verdict",
    "slot_order",
    "superseded_reason",
    "up_verdict",
]

QUIET_US = 10 * MINUTE_US  # no request activity for this long before a sleep or stop

S = DeploymentState


class DeployerCall(Enum):
    """The deployer's method a slot's action comes to."""

    SLEEP = "sleep"
    STOP = "stop"
    WAKE = "wake"
    START = "start"  # a start, or a wake that found its deployment stopped


class Traffic(Enum):
    """What kept a deployment from being quiet."""

    HELD = "held"  # requests under way through the proxy, or held there for a wake
    SERVING = "serving"  # the fresh sample's gauges: requests running or waiting
    RECENT = "recent"  # a request less than QUIET_US ago
    KNOCKED = "knocked"  # a request reached the proxy while the door was shut for the check


@dataclass(frozen=True, slots=True, kw_only=True)
class Skip:
    """Record the slot ``skipped: <reason>`` without asking the deployer."""

    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckQuiet:
    """Check that the deployment is quiet: then ask for ``call``, else defer the slot."""

    call: DeployerCall
    deferred_since: int  # the slot's first deferral, should the check defer it (now if first)


@dataclass(frozen=True, slots=True, kw_only=True)
class Act:
    """Ask the deployer for ``call``."""

    call: DeployerCall


@dataclass(frozen=True, slots=True, kw_only=True)
class NotQuiet:
    """Why a sleep or stop waits: the kind of traffic, and the text recorded for it."""

    traffic: Traffic
    reason: str


def slot_order(schedule_id: int, slot: Slot) -> tuple[int, int]:
    """Return the sort key of one deployment's due slots: the last one acts."""
    # A 12:05 sleep and a 12:00 wake due together leave it asleep, not woken straight back
    # up; two slots at one instant act in schedule-id order, so the one made later wins.
    return (slot.at_us, schedule_id)


def superseded_reason(*, schedule_id: int, action: ScheduleAction, time: str) -> str:
    """Say why an earlier slot did nothing: the named later slot acted in the same pass."""
    return f"schedule {schedule_id}'s {action.value} at {time} is later"


def down_verdict(
    *,
    action: ScheduleAction,
    state: DeploymentState,
    deferred_since: int | None,
    slot_at_us: int,
    now_us: int,
) -> Skip | CheckQuiet:
    """Decide whether a sleep or stop goes on to its quiet check, or is skipped.

    ``deferred_since`` is the schedule's recorded first deferral; one from before this slot
    belongs to an earlier day's and does not count.
    """
    if action is ScheduleAction.SLEEP:
        if state is not S.RUNNING:
            return Skip(reason=_not_for(state, "put to sleep"))
        call = DeployerCall.SLEEP
    elif action is ScheduleAction.STOP:
        # A sleeping deployment still holds memory and a server: a stop frees both.
        if state not in (S.RUNNING, S.SLEEPING):
            return Skip(reason=_not_for(state, "stopped"))
        call = DeployerCall.STOP
    else:
        raise ValueError(f"action: {action.value} does not take a deployment down")
    since = deferred_since
    if since is None or since < slot_at_us:
        since = now_us  # the first deferral of this slot, if it is deferred now
    if now_us - since >= DEFER_WINDOW_US:
        minutes = DEFER_WINDOW_US // MINUTE_US
        return Skip(reason=f"busy: not quiet within {minutes} minutes of its first deferral")
    return CheckQuiet(call=call, deferred_since=since)


def quiet_verdict(
    *,
    held_through_proxy: int,
    sample: MetricsSample | None,
    last_request_at: int | None,
    knocked: bool,
    now_us: int,
) -> NotQuiet | None:
    """Say why the deployment is not quiet, or None when a sleep or stop may go ahead.

    ``held_through_proxy``: the proxy's requests for it under way or held for a wake, exact
    for the traffic through it. ``sample``: a fresh sample of a running deployment; None for
    a sleeping one, where nothing runs on its server and a past request does not keep it
    from a stop (one that wants it now is held, and counts). ``last_request_at``: the latest
    request either the metrics or the proxy saw. ``knocked``: a request reached the proxy
    while the door was shut for this check.
    """
    if held_through_proxy:
        # Held requests count too, so a sleeping deployment with requests waiting for its
        # wake is not stopped under them.
        reason = f"{counted(held_through_proxy, 'request')} under way through the proxy"
        return NotQuiet(traffic=Traffic.HELD, reason=reason)
    if sample is not None:
        if not sample.is_idle:
            running = counted(sample.requests_running, "request")
            reason = f"{running} running, {sample.requests_waiting} waiting"
            return NotQuiet(traffic=Traffic.SERVING, reason=reason)
        if last_request_at is not None and now_us - last_request_at < QUIET_US:
            reason = (
                f"a request {max(0, now_us - last_request_at) // SECOND_US} s ago "
                f"(quiet needs {QUIET_US // MINUTE_US} minutes)"
            )
            return NotQuiet(traffic=Traffic.RECENT, reason=reason)
    if knocked:
        reason = "a request arrived through the proxy during its quiet check"
        return NotQuiet(traffic=Traffic.KNOCKED, reason=reason)
    return None


def up_verdict(
    *, action: ScheduleAction, state: DeploymentState, stopped_by: str | None
) -> Skip | Act:
    """Decide whether a wake or start asks the deployer, and for which call.

    ``stopped_by`` is the actor of the deployment's latest stop (None: never stopped, or a
    stop that names no actor); only a wake of a deployment that is not asleep reads it.
    """
    if action.quiets:
        raise ValueError(f"action: {action.value} does not bring a deployment up")
    wake = action is ScheduleAction.WAKE
    if state is S.RUNNING:
        return Skip(reason="it is already awake and running")
    if state is S.SLEEPING and not wake:
        return Skip(reason="it is asleep; a start does not wake it")
    if state in (S.STARTING, S.STOPPING):
        return Skip(reason=f"it is {state.value}")
    if wake and state is not S.SLEEPING and not is_policy(stopped_by):
        # Woken from stopped only when a policy (a schedule, the idle ladder) stopped it: a
        # person's stop stays a stop.
        # Older events name no actor, and count as not stopped by a schedule.
        who = stopped_by or "someone unknown (the stop names no actor)"
        return Skip(reason=f"it was stopped by {who}, not by a schedule or its idle policy")
    return Act(call=DeployerCall.WAKE if state is S.SLEEPING else DeployerCall.START)


def _not_for(state: DeploymentState, what: str) -> str:
    return f"it is {state.value}, so it is not {what}"
