"""The idle ladder: its check, the step it takes when, and the schedules' awake windows."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import at

from dgxmm.decider.days import ALL_DAYS, mask_of
from dgxmm.decider.idle import IdleLadder, IdleStep, ScheduleSlots, awake_window, idle_step
from dgxmm.decider.schedules.rows import ScheduleAction
from dgxmm.errors import DefinitionError
from dgxmm.fleet import DeploymentState
from dgxmm.time_units import SECOND_US

BERLIN = ZoneInfo("Europe/Berlin")
YEAR_S = 365 * 86400
WEEKDAYS = mask_of(range(5))

# -- of_seconds ------------------------------------------------------------------------------


def ladder_of(keys: Mapping[str, object]) -> IdleLadder:
    """Read a ladder from keys named as ``to_json`` names them (``**keys``, but typed)."""
    return IdleLadder.of_seconds(
        sleep_after_s=keys.get("sleep_after_s"),
        deepen_after_s=keys.get("deepen_after_s"),
        stop_after_s=keys.get("stop_after_s"),
    )


@pytest.mark.parametrize(
    ("keys", "field"),
    [
        pytest.param({"sleep_after_s": -1}, "idle_sleep_after_s", id="negative"),
        pytest.param({"sleep_after_s": 0}, "idle_sleep_after_s", id="zero"),
        pytest.param({"sleep_after_s": 0.5}, "idle_sleep_after_s", id="under-a-second"),
        pytest.param({"deepen_after_s": YEAR_S + 1}, "idle_deepen_after_s", id="past-a-year"),
        pytest.param({"stop_after_s": 10**400}, "idle_stop_after_s", id="huge"),
        pytest.param({"stop_after_s": float("inf")}, "idle_stop_after_s", id="infinite"),
        pytest.param({"stop_after_s": float("nan")}, "idle_stop_after_s", id="nan"),
        pytest.param({"sleep_after_s": True}, "idle_sleep_after_s", id="true"),
        pytest.param({"sleep_after_s": False}, "idle_sleep_after_s", id="false"),
        pytest.param({"deepen_after_s": "600"}, "idle_deepen_after_s", id="string"),
        pytest.param({"deepen_after_s": [600]}, "idle_deepen_after_s", id="list"),
        pytest.param(
            {"sleep_after_s": 600, "deepen_after_s": 300}, "idle_deepen_after_s", id="deepen<sleep"
        ),
        pytest.param(
            {"sleep_after_s": 600, "deepen_after_s": 600}, "idle_deepen_after_s", id="deepen=sleep"
        ),
        pytest.param(
            {"sleep_after_s": 600, "deepen_after_s": 3600, "stop_after_s": 1800},
            "idle_stop_after_s",
            id="stop<deepen",
        ),
        pytest.param(
            {"sleep_after_s": 600, "stop_after_s": 300}, "idle_stop_after_s", id="stop<sleep"
        ),
        pytest.param(
            {"deepen_after_s": 600, "stop_after_s": 600}, "idle_stop_after_s", id="stop=deepen"
        ),
        pytest.param(
            {"sleep_after_s": 1.0, "deepen_after_s": 1.0000001},
            "idle_deepen_after_s",
            id="one-microsecond-apart-after-rounding",
        ),
    ],
)
def test_it_refuses_a_bad_ladder_naming_the_field(keys: dict[str, object], field: str) -> None:
    with pytest.raises(DefinitionError) as caught:
        ladder_of(keys)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")


def test_it_names_the_field_with_the_callers_prefix() -> None:
    with pytest.raises(DefinitionError) as caught:
        IdleLadder.of_seconds(sleep_after_s=600, deepen_after_s=60, field_prefix="idle.")
    assert caught.value.field == "idle.deepen_after_s"
    assert "idle.sleep_after_s" in caught.value.message  # the step it is out of order with


def test_it_reads_a_full_ladder_in_seconds() -> None:
    ladder = IdleLadder.of_seconds(sleep_after_s=300, deepen_after_s=3600, stop_after_s=86400)
    assert ladder == IdleLadder(
        sleep_after_us=300 * SECOND_US,
        deepen_after_us=3600 * SECOND_US,
        stop_after_us=86400 * SECOND_US,
    )
    assert ladder.to_json() == {
        "sleep_after_s": 300.0,
        "deepen_after_s": 3600.0,
        "stop_after_s": 86400.0,
    }
    assert ladder.first_after_us() == 300 * SECOND_US
    assert not ladder.is_off


def test_it_accepts_the_bounds_and_fractions() -> None:
    ladder = IdleLadder.of_seconds(sleep_after_s=1, deepen_after_s=1.5, stop_after_s=YEAR_S)
    assert ladder.steps_us() == (SECOND_US, 1_500_000, YEAR_S * SECOND_US)


def test_it_is_off_by_default_and_says_nothing() -> None:
    ladder = IdleLadder.of_seconds()
    assert ladder.is_off
    assert ladder.to_json() == {}
    assert ladder.first_after_us() is None


def test_it_gives_only_the_steps_set() -> None:
    ladder = IdleLadder.of_seconds(stop_after_s=7200)
    assert ladder.to_json() == {"stop_after_s": 7200.0}
    assert ladder.first_after_us() == 7200 * SECOND_US
    assert ladder_of(ladder.to_json()) == ladder


@st.composite
def ladder_seconds(draw: st.DrawFn) -> dict[str, float]:
    """Seconds of a ladder in order, each step present or not (two may share a microsecond)."""
    values = draw(
        st.lists(
            st.one_of(
                st.integers(min_value=1, max_value=YEAR_S),
                st.floats(min_value=1, max_value=YEAR_S, allow_nan=False),
            ),
            min_size=3,
            max_size=3,
        )
    )
    ordered = sorted(values)
    names = ("sleep_after_s", "deepen_after_s", "stop_after_s")
    present = draw(st.lists(st.booleans(), min_size=3, max_size=3))
    return {name: value for name, value, on in zip(names, ordered, present, strict=True) if on}


@given(keys=ladder_seconds())
def test_an_accepted_ladder_round_trips_through_its_json(keys: dict[str, float]) -> None:
    kept_us = [round(seconds * SECOND_US) for seconds in keys.values()]
    increasing = all(a < b for a, b in pairwise(kept_us))
    try:
        ladder = ladder_of(keys)
    except DefinitionError:
        assert not increasing  # refused only for two steps on one microsecond
        return
    assert increasing
    assert ladder_of(ladder.to_json()) == ladder
    assert set(ladder.to_json()) == set(keys)


# -- idle_step -------------------------------------------------------------------------------

LADDER = IdleLadder.of_seconds(sleep_after_s=300, deepen_after_s=3600, stop_after_s=86400)
RUNNING, SLEEPING = DeploymentState.RUNNING, DeploymentState.SLEEPING


@pytest.mark.parametrize(
    ("state", "level", "idle_s", "window", "expected"),
    [
        pytest.param(RUNNING, None, 299, False, None, id="running-not-yet"),
        pytest.param(RUNNING, None, 300, False, IdleStep.SLEEP, id="running-sleeps"),
        pytest.param(RUNNING, None, 3600, False, IdleStep.DEEPEN, id="running-deepens-at-once"),
        pytest.param(RUNNING, None, 86400, False, IdleStep.STOP, id="running-stops-at-once"),
        pytest.param(SLEEPING, 1, 3599, False, None, id="level1-not-yet"),
        pytest.param(SLEEPING, 1, 3600, False, IdleStep.DEEPEN, id="level1-deepens"),
        pytest.param(SLEEPING, 1, 86400, False, IdleStep.STOP, id="level1-stops"),
        pytest.param(SLEEPING, None, 3600, False, IdleStep.DEEPEN, id="level-unknown-as-1"),
        pytest.param(SLEEPING, 2, 3600, False, None, id="level2-never-deepens"),
        pytest.param(SLEEPING, 2, 86399, False, None, id="level2-not-yet"),
        pytest.param(SLEEPING, 2, 86400, False, IdleStep.STOP, id="level2-stops"),
        pytest.param(RUNNING, None, 300, True, IdleStep.SLEEP, id="window-sleeps"),
        pytest.param(RUNNING, None, 86400, True, IdleStep.SLEEP, id="window-only-level1"),
        pytest.param(SLEEPING, 1, 86400, True, None, id="window-level1-stays"),
        pytest.param(SLEEPING, 2, 86400, True, None, id="window-level2-not-stopped"),
    ],
)
def test_it_takes_the_deepest_step_due(
    state: DeploymentState,
    level: int | None,
    idle_s: int,
    window: bool,
    expected: IdleStep | None,
) -> None:
    step = idle_step(
        LADDER,
        state=state,
        asleep_level=level,
        idle_for_us=idle_s * SECOND_US,
        in_awake_window=window,
    )
    assert step is expected


@pytest.mark.parametrize(
    "state",
    [
        DeploymentState.STOPPED,
        DeploymentState.FAILED,
        DeploymentState.STARTING,
        DeploymentState.STOPPING,
    ],
    ids=str,
)
def test_it_leaves_a_deployment_that_is_not_up_alone(state: DeploymentState) -> None:
    assert (
        idle_step(
            LADDER,
            state=state,
            asleep_level=None,
            idle_for_us=YEAR_S * SECOND_US,
            in_awake_window=False,
        )
        is None
    )


def test_an_off_ladder_takes_no_step() -> None:
    for state, level in ((RUNNING, None), (SLEEPING, 1), (SLEEPING, 2)):
        assert (
            idle_step(
                IdleLadder(),
                state=state,
                asleep_level=level,
                idle_for_us=YEAR_S * SECOND_US,
                in_awake_window=False,
            )
            is None
        )


def test_a_ladder_without_a_sleep_deepens_a_running_server() -> None:
    ladder = IdleLadder.of_seconds(deepen_after_s=600)

    def step(window: bool) -> IdleStep | None:
        return idle_step(
            ladder,
            state=RUNNING,
            asleep_level=None,
            idle_for_us=600 * SECOND_US,
            in_awake_window=window,
        )

    assert step(window=False) is IdleStep.DEEPEN
    assert step(window=True) is None  # no level-1 step to fall back on


DEPTH = {None: 0, IdleStep.SLEEP: 1, IdleStep.DEEPEN: 2, IdleStep.STOP: 3}
optional_us = st.none() | st.integers(min_value=0, max_value=YEAR_S * SECOND_US)


@given(
    ladder=st.builds(
        IdleLadder,
        sleep_after_us=optional_us,
        deepen_after_us=optional_us,
        stop_after_us=optional_us,
    ),
    state=st.sampled_from(DeploymentState),
    level=st.sampled_from([None, 1, 2]),
    idle=st.lists(st.integers(min_value=0, max_value=2 * YEAR_S * SECOND_US), min_size=2),
    window=st.booleans(),
)
def test_more_idle_never_gives_a_shallower_step_and_a_window_bounds_it(
    ladder: IdleLadder,
    state: DeploymentState,
    level: int | None,
    idle: list[int],
    window: bool,
) -> None:
    steps = [
        idle_step(ladder, state=state, asleep_level=level, idle_for_us=us, in_awake_window=window)
        for us in sorted(idle)
    ]
    depths = [DEPTH[step] for step in steps]
    assert depths == sorted(depths)
    if window:
        assert IdleStep.STOP not in steps
        assert IdleStep.DEEPEN not in steps


# -- awake_window ----------------------------------------------------------------------------


def slots(
    *specs: tuple[ScheduleAction, tuple[int, int]], days: int = WEEKDAYS
) -> list[ScheduleSlots]:
    return [
        ScheduleSlots(action=action, days=days, time=time, zone=BERLIN) for action, time in specs
    ]


OFFICE = slots((ScheduleAction.WAKE, (7, 30)), (ScheduleAction.SLEEP, (20, 0)))


@pytest.mark.parametrize(
    ("now", "inside"),
    [
        pytest.param("2026-06-03T12:00:00+02:00", True, id="wednesday-noon"),
        pytest.param("2026-06-03T21:00:00+02:00", False, id="wednesday-21h"),
        pytest.param("2026-06-03T07:29:59+02:00", False, id="just-before-the-wake"),
        pytest.param("2026-06-03T07:30:00+02:00", True, id="at-the-wake"),
        pytest.param("2026-06-05T19:59:59+02:00", True, id="friday-before-the-sleep"),
        pytest.param("2026-06-05T20:00:00+02:00", False, id="at-the-sleep"),
        pytest.param("2026-06-06T12:00:00+02:00", False, id="saturday-after-friday-sleep"),
        pytest.param("2026-06-08T06:00:00+02:00", False, id="monday-before-the-wake"),
        pytest.param("2026-06-08T05:30:00+00:00", True, id="monday-wake-in-utc"),
    ],
)
def test_a_weekday_window_runs_from_the_wake_to_the_sleep(now: str, inside: bool) -> None:
    assert awake_window(OFFICE, at(now)) is inside


@pytest.mark.parametrize(
    ("opens", "closes"),
    [
        (ScheduleAction.WAKE, ScheduleAction.SLEEP),
        (ScheduleAction.START, ScheduleAction.STOP),
        (ScheduleAction.WAKE, ScheduleAction.STOP),
        (ScheduleAction.START, ScheduleAction.SLEEP),
    ],
    ids=str,
)
def test_a_start_opens_and_a_stop_closes_as_a_wake_and_a_sleep_do(
    opens: ScheduleAction, closes: ScheduleAction
) -> None:
    schedules = slots((opens, (7, 30)), (closes, (20, 0)))
    assert awake_window(schedules, at("2026-06-03T12:00:00+02:00"))
    assert not awake_window(schedules, at("2026-06-03T21:00:00+02:00"))


def test_of_two_slots_at_one_instant_the_later_schedule_decides() -> None:
    now = at("2026-06-03T12:05:00+02:00")
    wake_then_sleep = slots((ScheduleAction.WAKE, (12, 0)), (ScheduleAction.SLEEP, (12, 0)))
    assert not awake_window(wake_then_sleep, now)
    assert awake_window(list(reversed(wake_then_sleep)), now)


def test_a_wake_in_the_spring_gap_opens_the_window_at_the_gaps_end() -> None:
    # Berlin, 2026-03-29: 02:00 CET is 03:00 CEST; a 02:30 wake happens at 03:00.
    daily = slots((ScheduleAction.WAKE, (2, 30)), (ScheduleAction.SLEEP, (23, 0)), days=ALL_DAYS)
    assert not awake_window(daily, at("2026-03-29T01:59:59+01:00"))
    assert awake_window(daily, at("2026-03-29T03:00:00+02:00"))
    assert awake_window(daily, at("2026-03-29T22:59:59+02:00"))
    assert not awake_window(daily, at("2026-03-29T23:00:00+02:00"))


def test_the_repeated_autumn_hour_does_not_reopen_the_window() -> None:
    # Berlin, 2026-10-25: 03:00 CEST is 02:00 CET; each slot happens at its first 02:xx.
    daily = slots((ScheduleAction.WAKE, (2, 30)), (ScheduleAction.SLEEP, (2, 45)), days=ALL_DAYS)
    assert awake_window(daily, at("2026-10-25T02:40:00+02:00"))
    assert not awake_window(daily, at("2026-10-25T02:50:00+02:00"))
    assert not awake_window(daily, at("2026-10-25T02:35:00+01:00"))  # the second 02:35


def test_a_wake_with_no_sleep_keeps_the_window_open_all_week() -> None:
    monday_wake = slots((ScheduleAction.WAKE, (7, 30)), days=mask_of([0]))
    assert awake_window(monday_wake, at("2026-06-07T23:59:00+02:00"))  # the Sunday after
    assert awake_window(monday_wake, at("2026-06-08T07:00:00+02:00"))  # last Monday's holds


def test_no_schedules_no_window() -> None:
    assert awake_window([], at("2026-06-03T12:00:00+02:00")) is False
    no_days = slots((ScheduleAction.WAKE, (7, 30)), days=0)
    assert awake_window(no_days, at("2026-06-03T12:00:00+02:00")) is False
