"""The runner's decisions as pure functions: each state and action, the window's edges, quiet.

The reasons are asserted literally: they are what a schedule's last result and its events say
(``skipped: <reason>``, a deferral's detail), and what the savings lab counts.
"""

from __future__ import annotations

from datetime import date

import pytest
from support import at

from dgxmm.decider.schedules import (
    QUIET_US,
    Act,
    CheckQuiet,
    DeployerCall,
    NotQuiet,
    ScheduleAction,
    Skip,
    Traffic,
    down_verdict,
    quiet_verdict,
    slot_order,
    superseded_reason,
    up_verdict,
)
from dgxmm.decider.schedules.slots import DEFER_WINDOW_US, Slot
from dgxmm.fleet import DeploymentState, MetricsSample, SleepState
from dgxmm.time_units import MINUTE_US, SECOND_US

A = ScheduleAction
S = DeploymentState
SLOT = at("2026-06-03T22:00:00+02:00")
NOW = SLOT + 5 * MINUTE_US
WINDOW_PASSED = "busy: not quiet within 60 minutes of its first deferral"


def case(*given: object, expected: object) -> object:
    """One row of a table, named by its enums and actors: ``wake-stopped-user:alice``."""
    name = "-".join(
        value.value if isinstance(value, A | S) else str(value or "no-actor") for value in given
    )
    return pytest.param(*given, expected, id=name)


def sample(*, running: int = 0, waiting: int = 0) -> MetricsSample:
    return MetricsSample(
        taken_at_us=NOW,
        requests_running=running,
        requests_waiting=waiting,
        requests_finished_total=40,
        latency_sum_s=12.0,
        latency_count=40,
        sleep_state=SleepState.AWAKE,
    )


def down(
    action: ScheduleAction,
    state: DeploymentState = S.RUNNING,
    *,
    deferred_since: int | None = None,
    now: int = NOW,
) -> Skip | CheckQuiet:
    return down_verdict(
        action=action, state=state, deferred_since=deferred_since, slot_at_us=SLOT, now_us=now
    )


def quiet(
    *,
    held: int = 0,
    gauges: MetricsSample | None = None,
    last: int | None = None,
    knocked: bool = False,
) -> NotQuiet | None:
    return quiet_verdict(
        held_through_proxy=held, sample=gauges, last_request_at=last, knocked=knocked, now_us=NOW
    )


# -- a sleep or a stop, before its quiet check ------------------------------------------------


@pytest.mark.parametrize(
    ("action", "state", "expected"),
    [
        case(A.SLEEP, S.RUNNING, expected=CheckQuiet(call=DeployerCall.SLEEP, deferred_since=NOW)),
        case(
            A.SLEEP, S.SLEEPING, expected=Skip(reason="it is sleeping, so it is not put to sleep")
        ),
        case(A.SLEEP, S.STOPPED, expected=Skip(reason="it is stopped, so it is not put to sleep")),
        case(
            A.SLEEP, S.STARTING, expected=Skip(reason="it is starting, so it is not put to sleep")
        ),
        case(
            A.SLEEP, S.STOPPING, expected=Skip(reason="it is stopping, so it is not put to sleep")
        ),
        case(A.SLEEP, S.FAILED, expected=Skip(reason="it is failed, so it is not put to sleep")),
        case(A.STOP, S.RUNNING, expected=CheckQuiet(call=DeployerCall.STOP, deferred_since=NOW)),
        case(A.STOP, S.SLEEPING, expected=CheckQuiet(call=DeployerCall.STOP, deferred_since=NOW)),
        case(A.STOP, S.STOPPED, expected=Skip(reason="it is stopped, so it is not stopped")),
        case(A.STOP, S.STARTING, expected=Skip(reason="it is starting, so it is not stopped")),
        case(A.STOP, S.STOPPING, expected=Skip(reason="it is stopping, so it is not stopped")),
        case(A.STOP, S.FAILED, expected=Skip(reason="it is failed, so it is not stopped")),
    ],
)
def test_it_skips_a_sleep_or_stop_by_the_state(
    action: ScheduleAction, state: DeploymentState, expected: Skip | CheckQuiet
) -> None:
    assert down(action, state) == expected


def test_it_skips_by_the_state_before_the_window() -> None:
    # A stopped deployment says so, even when its busy deferrals ran out as well.
    long_ago = SLOT
    verdict = down(A.SLEEP, S.STOPPED, deferred_since=long_ago, now=long_ago + DEFER_WINDOW_US)
    assert verdict == Skip(reason="it is stopped, so it is not put to sleep")


@pytest.mark.parametrize(
    ("after_first_deferral", "expected"),
    [
        (DEFER_WINDOW_US - 1, CheckQuiet(call=DeployerCall.SLEEP, deferred_since=SLOT)),
        (DEFER_WINDOW_US, Skip(reason=WINDOW_PASSED)),  # exactly 60 minutes: given up
        (DEFER_WINDOW_US + MINUTE_US, Skip(reason=WINDOW_PASSED)),
    ],
    ids=["59m59.999999s", "60m", "61m"],
)
def test_it_gives_up_sixty_minutes_after_the_first_deferral(
    after_first_deferral: int, expected: Skip | CheckQuiet
) -> None:
    verdict = down(A.SLEEP, deferred_since=SLOT, now=SLOT + after_first_deferral)
    assert verdict == expected


def test_it_keeps_the_first_deferral_of_this_slot() -> None:
    first = SLOT + 2 * MINUTE_US
    verdict = down(A.STOP, S.SLEEPING, deferred_since=first, now=first + 30 * MINUTE_US)
    assert verdict == CheckQuiet(call=DeployerCall.STOP, deferred_since=first)


@pytest.mark.parametrize(
    "deferred_since",
    [None, SLOT - 1, SLOT - 24 * 60 * MINUTE_US],
    ids=["never", "just-before-the-slot", "yesterdays-slot"],
)
def test_a_deferral_from_before_the_slot_starts_the_window_now(deferred_since: int | None) -> None:
    # Yesterday's slot left its deferral behind: it must not run today's window out.
    now = SLOT + DEFER_WINDOW_US
    verdict = down(A.SLEEP, deferred_since=deferred_since, now=now)
    assert verdict == CheckQuiet(call=DeployerCall.SLEEP, deferred_since=now)


@pytest.mark.parametrize("action", [A.WAKE, A.START], ids=lambda action: action.value)
def test_it_refuses_a_wake_or_start_as_a_way_down(action: ScheduleAction) -> None:
    with pytest.raises(ValueError, match=f"action: {action.value} does not take"):
        down(action)


# -- the quiet check --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("since_last", "expected"),
    [
        (QUIET_US, None),  # exactly 10 minutes: quiet
        (QUIET_US + SECOND_US, None),
        (
            QUIET_US - 1,
            NotQuiet(traffic=Traffic.RECENT, reason="a request 599 s ago (quiet needs 10 minutes)"),
        ),
        (
            0,
            NotQuiet(traffic=Traffic.RECENT, reason="a request 0 s ago (quiet needs 10 minutes)"),
        ),
        (
            -5 * SECOND_US,  # a clock behind the proxy's: never a negative age
            NotQuiet(traffic=Traffic.RECENT, reason="a request 0 s ago (quiet needs 10 minutes)"),
        ),
    ],
    ids=["exactly-10m", "10m1s", "10m-less-1us", "now", "in-the-future"],
)
def test_it_is_quiet_ten_minutes_after_the_last_request(
    since_last: int, expected: NotQuiet | None
) -> None:
    assert quiet(gauges=sample(), last=NOW - since_last) == expected


def test_it_is_quiet_with_an_idle_sample_and_no_request_ever() -> None:
    assert quiet(gauges=sample(), last=None) is None


@pytest.mark.parametrize(
    ("running", "waiting", "reason"),
    [
        (0, 3, "0 requests running, 3 waiting"),
        (2, 0, "2 requests running, 0 waiting"),
        (1, 4, "1 request running, 4 waiting"),
    ],
    ids=["waiting", "running", "both"],
)
def test_a_sample_with_requests_is_not_quiet(running: int, waiting: int, reason: str) -> None:
    # The gauges speak before the last request's age: a long request has no recent arrival.
    verdict = quiet(gauges=sample(running=running, waiting=waiting), last=NOW - QUIET_US)
    assert verdict == NotQuiet(traffic=Traffic.SERVING, reason=reason)


@pytest.mark.parametrize(
    "gauges",
    [None, sample(), sample(running=1, waiting=2)],
    ids=["asleep", "idle-sample", "busy-sample"],
)
def test_requests_held_through_the_proxy_are_not_quiet(gauges: MetricsSample | None) -> None:
    verdict = quiet(held=2, gauges=gauges, last=NOW - 1, knocked=True)
    assert verdict == NotQuiet(
        traffic=Traffic.HELD, reason="2 requests under way through the proxy"
    )


def test_an_asleep_deployment_is_quiet_whatever_its_last_request() -> None:
    # Nothing runs on a sleeping server; a request that wants it now is held, and counts.
    assert quiet(gauges=None, last=NOW - SECOND_US) is None


@pytest.mark.parametrize(
    ("gauges", "last", "expected"),
    [
        (
            sample(),
            NOW - QUIET_US,
            NotQuiet(
                traffic=Traffic.KNOCKED,
                reason="a request arrived through the proxy during its quiet check",
            ),
        ),
        (
            None,
            None,
            NotQuiet(
                traffic=Traffic.KNOCKED,
                reason="a request arrived through the proxy during its quiet check",
            ),
        ),
        (
            sample(waiting=1),
            None,
            NotQuiet(traffic=Traffic.SERVING, reason="0 requests running, 1 waiting"),
        ),
    ],
    ids=["quiet-otherwise", "asleep", "busy-says-so-first"],
)
def test_a_knock_during_the_check_is_not_quiet(
    gauges: MetricsSample | None, last: int | None, expected: NotQuiet
) -> None:
    assert quiet(gauges=gauges, last=last, knocked=True) == expected


# -- a wake or a start ------------------------------------------------------------------------

BY_SCHEDULE = "schedule:3"
BY_PERSON = "user:alice"
STOPPED_BY_PERSON = Skip(
    reason="it was stopped by user:alice, not by a schedule or its idle policy"
)
STOPPED_BY_NOBODY = Skip(
    reason="it was stopped by someone unknown (the stop names no actor), not by a schedule "
    "or its idle policy"
)


@pytest.mark.parametrize(
    ("action", "state", "stopped_by", "expected"),
    [
        case(
            A.WAKE, S.RUNNING, BY_SCHEDULE, expected=Skip(reason="it is already awake and running")
        ),
        case(A.WAKE, S.SLEEPING, BY_PERSON, expected=Act(call=DeployerCall.WAKE)),
        case(A.WAKE, S.SLEEPING, None, expected=Act(call=DeployerCall.WAKE)),
        case(A.WAKE, S.STOPPED, BY_SCHEDULE, expected=Act(call=DeployerCall.START)),
        case(A.WAKE, S.STOPPED, "idle", expected=Act(call=DeployerCall.START)),
        case(
            A.WAKE,
            S.STOPPED,
            "idler",
            expected=Skip(reason="it was stopped by idler, not by a schedule or its idle policy"),
        ),
        case(A.WAKE, S.STOPPED, BY_PERSON, expected=STOPPED_BY_PERSON),
        case(A.WAKE, S.STOPPED, None, expected=STOPPED_BY_NOBODY),
        case(A.WAKE, S.FAILED, BY_SCHEDULE, expected=Act(call=DeployerCall.START)),
        case(A.WAKE, S.FAILED, BY_PERSON, expected=STOPPED_BY_PERSON),
        case(A.WAKE, S.STARTING, BY_SCHEDULE, expected=Skip(reason="it is starting")),
        case(A.WAKE, S.STOPPING, BY_SCHEDULE, expected=Skip(reason="it is stopping")),
        case(A.START, S.RUNNING, None, expected=Skip(reason="it is already awake and running")),
        case(
            A.START,
            S.SLEEPING,
            None,
            expected=Skip(reason="it is asleep; a start does not wake it"),
        ),
        case(A.START, S.STOPPED, BY_PERSON, expected=Act(call=DeployerCall.START)),
        case(A.START, S.STOPPED, None, expected=Act(call=DeployerCall.START)),
        case(A.START, S.FAILED, None, expected=Act(call=DeployerCall.START)),
        case(A.START, S.STARTING, None, expected=Skip(reason="it is starting")),
        case(A.START, S.STOPPING, None, expected=Skip(reason="it is stopping")),
    ],
)
def test_a_wake_starts_only_what_a_schedule_or_the_idle_policy_stopped(
    action: ScheduleAction,
    state: DeploymentState,
    stopped_by: str | None,
    expected: Skip | Act,
) -> None:
    assert up_verdict(action=action, state=state, stopped_by=stopped_by) == expected


@pytest.mark.parametrize("action", [A.SLEEP, A.STOP], ids=lambda action: action.value)
def test_it_refuses_a_sleep_or_stop_as_a_way_up(action: ScheduleAction) -> None:
    with pytest.raises(ValueError, match=f"action: {action.value} does not bring"):
        up_verdict(action=action, state=S.STOPPED, stopped_by=BY_SCHEDULE)


# -- one deployment's slots in one pass -------------------------------------------------------


def slot(at_us: int) -> Slot:
    day = date(2026, 6, 3)
    return Slot(day=day, at_us=at_us, moved=False, days=(day,))


def test_the_latest_slot_acts_and_ties_go_to_the_later_schedule() -> None:
    due = [(9, slot(SLOT + 5 * MINUTE_US)), (4, slot(SLOT)), (2, slot(SLOT + 5 * MINUTE_US))]
    ordered = sorted(due, key=lambda found: slot_order(*found))
    assert [schedule_id for schedule_id, _ in ordered] == [4, 2, 9]


def test_a_superseded_slot_names_the_one_that_acted() -> None:
    reason = superseded_reason(schedule_id=7, action=A.SLEEP, time="22:05")
    assert reason == "schedule 7's sleep at 22:05 is later"
