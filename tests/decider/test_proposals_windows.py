"""Idle windows and candidates from 168-hour profiles: every threshold on both sides."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from decider.traffickit import hours

from dgxmm.decider.profiles import HourProfile
from dgxmm.decider.proposals.candidates import (
    Candidate,
    DeploymentFacts,
    Skip,
    idle_windows,
    is_strong,
    make_candidates,
    skip_reason,
)
from dgxmm.decider.traffic import MinuteSeries, days_of_data

FACTS = DeploymentFacts(
    id=1,
    name="llama",
    priority=50,
    time_zone="Europe/Berlin",
    gpus=2,
    memory_gib_awake=40.0,
    memory_gib_asleep=4.0,
)


def _candidates(
    profile: list[HourProfile], requests: dict[int, int] | None = None
) -> list[Candidate]:
    windows = [w for w in idle_windows(profile) if skip_reason(w) is None]
    by_hour = [0] * 168
    for hour, count in (requests or {}).items():
        by_hour[hour] = count
    return make_candidates(windows, deployment=FACTS, hours=profile, requests_by_hour=by_hour)


def _first_hours(count: int) -> Callable[[int], bool]:
    """Idle on Monday from 00:00 for ``count`` hours."""
    return lambda hour: hour < count


@pytest.mark.parametrize(
    ("idle_weeks", "observed", "windows"),
    [
        pytest.param(9, 10, 1, id="idle in 90 % of its weeks: a window"),
        pytest.param(8, 10, 0, id="idle in 80 %: none"),
        pytest.param(18, 20, 1, id="18 of 20 (90 %): a window"),
        pytest.param(17, 20, 0, id="17 of 20 (85 %): none"),
    ],
)
def test_an_hour_is_idle_in_at_least_90_percent_of_its_weeks(
    idle_weeks: int, observed: int, windows: int
) -> None:
    profile = hours(_first_hours(6), observed=observed, idle_weeks=idle_weeks)
    assert len(idle_windows(profile)) == windows


@pytest.mark.parametrize(
    ("length", "found", "skip"),
    [
        pytest.param(1, False, None, id="1 h: not a window"),
        pytest.param(2, True, Skip.SHORT, id="2 h: a window, skipped as shorter than 4 h"),
        pytest.param(3, True, Skip.SHORT, id="3 h: skipped as shorter than 4 h"),
        pytest.param(4, True, None, id="4 h: a candidate"),
    ],
)
def test_windows_are_2_hours_long_and_candidates_4(
    length: int, found: bool, skip: Skip | None
) -> None:
    windows = idle_windows(hours(_first_hours(length)))
    assert bool(windows) is found
    if found:
        (window,) = windows
        assert (window.start, window.hours) == (0, length)
        assert skip_reason(window) is skip


@pytest.mark.parametrize(
    ("observed", "skip"),
    [
        pytest.param(1, Skip.ONE_WEEK, id="seen in one week only: skipped"),
        pytest.param(2, None, id="seen in two weeks: a candidate"),
    ],
)
def test_a_window_seen_in_one_week_only_is_skipped(observed: int, skip: Skip | None) -> None:
    (window,) = idle_windows(hours(_first_hours(6), observed=observed))
    assert skip_reason(window) is skip


def test_one_hour_seen_in_one_week_makes_the_window_seen_in_one_week() -> None:
    profile = hours(_first_hours(6), observed=4)
    profile[3] = HourProfile(
        hour_of_week=3, rpm_p50=0.0, rpm_p95=0.0, active_share=0.0,
        observed_minutes=60, observed_weeks=1, idle_weeks=1,
    )  # fmt: skip
    (window,) = idle_windows(profile)
    assert (window.weeks_observed, window.weeks_idle) == (1, 1)
    assert skip_reason(window) is Skip.ONE_WEEK


def test_an_hour_never_observed_breaks_a_window() -> None:
    profile = hours(_first_hours(8), observed=4)
    profile[4] = HourProfile(
        hour_of_week=4, rpm_p50=0.0, rpm_p95=0.0, active_share=0.0,
        observed_minutes=0, observed_weeks=0, idle_weeks=0,
    )  # fmt: skip
    assert [(w.start, w.hours) for w in idle_windows(profile)] == [(0, 4), (5, 3)]


@pytest.mark.parametrize(
    ("observed", "idle_weeks", "strong"),
    [
        pytest.param(3, 3, True, id="idle in every one of 3 weeks: strong"),
        pytest.param(2, 2, False, id="every one of 2 weeks: not strong"),
        pytest.param(10, 9, False, id="9 of 10 weeks: a window, not strong"),
        pytest.param(10, 10, True, id="every one of 10 weeks: strong"),
    ],
)
def test_strong_windows_are_idle_in_every_one_of_at_least_three_weeks(
    observed: int, idle_weeks: int, strong: bool
) -> None:
    (window,) = idle_windows(hours(_first_hours(6), observed=observed, idle_weeks=idle_weeks))
    assert is_strong(window) is strong


def test_a_window_wraps_from_sunday_to_monday() -> None:
    # Sunday 22:00 to Monday 06:00.
    profile = hours(lambda hour: hour >= 166 or hour < 6)
    (window,) = idle_windows(profile)
    assert (window.start, window.hours) == (166, 8)
    assert window.hours_of_week == (166, 167, 0, 1, 2, 3, 4, 5)
    (candidate,) = _candidates(profile)
    assert (candidate.sleep_days, candidate.sleep_time) == (64, "22:00")  # Sunday
    assert (candidate.wake_days, candidate.wake_time) == (1, "05:45")  # Monday
    assert candidate.description == "sleep Sunday at 22:00, wake Monday at 05:45"


def _weeknights(hour: int) -> bool:
    """Idle from 22:00 to 07:00 after each of Monday to Friday; busy otherwise."""
    day, at = divmod(hour, 24)
    return (at >= 22 and day <= 4) or (at < 7 and 1 <= day <= 5)


def test_windows_with_the_same_times_become_one_candidate_waking_the_next_day() -> None:
    (candidate,) = _candidates(hours(_weeknights))
    assert [(w.start, w.hours) for w in candidate.windows] == [
        (22, 9), (46, 9), (70, 9), (94, 9), (118, 9)
    ]  # fmt: skip
    assert (candidate.sleep_days, candidate.sleep_time) == (31, "22:00")  # Monday to Friday
    assert (candidate.wake_days, candidate.wake_time) == (62, "06:45")  # Tuesday to Saturday
    assert candidate.evidence["sleep"]["days_text"] == "Monday to Friday"
    assert candidate.evidence["wake"]["days_text"] == "Tuesday to Saturday"


def test_a_window_ending_at_midnight_wakes_the_same_day() -> None:
    (candidate,) = _candidates(hours(lambda hour: 18 <= hour < 24))  # Monday 18:00-24:00
    assert (candidate.sleep_days, candidate.sleep_time) == (1, "18:00")
    assert (candidate.wake_days, candidate.wake_time) == (1, "23:45")


def test_windows_of_other_lengths_make_other_candidates() -> None:
    # Weeknights, and Saturday 00:00 runs on to Monday 07:00 when the weekend is idle too.
    def nights_and_weekend(hour: int) -> bool:
        return _weeknights(hour) or hour >= 5 * 24 or hour < 7

    candidates = _candidates(hours(nights_and_weekend))
    assert [(c.sleep_days, c.sleep_time, c.wake_days, c.wake_time) for c in candidates] == [
        (15, "22:00", 30, "06:45"),  # Monday-Thursday nights
        (16, "22:00", 1, "06:45"),  # Friday 22:00 to Monday 06:45 (57 h)
    ]
    assert candidates[1].windows[0].hours == 57


def test_a_profile_idle_all_week_gives_no_window() -> None:
    assert idle_windows(hours(lambda hour: True)) == []
    assert idle_windows(hours(lambda hour: False)) == []


def test_the_evidence_counts_requests_and_the_memory_freed() -> None:
    (candidate,) = _candidates(hours(_weeknights), requests={23: 3, 24 + 23: 4, 12: 50})
    evidence = candidate.evidence
    assert evidence["requests_30d"] == 7  # Monday and Tuesday 23:00; Monday 12:00 is busy
    assert [w["requests_30d"] for w in evidence["windows"]] == [3, 4, 0, 0, 0]
    assert (evidence["weeks_observed"], evidence["weeks_idle"]) == (4, 4)
    # (40 - 4) GiB on each of 2 GPUs, asleep 8.75 h on each of 5 nights.
    assert evidence["gpu_memory_gib_hours_per_week"] == pytest.approx(36 * 2 * 8.75 * 5)
    assert evidence["windows"][0]["start"] == "Mon 22:00"
    assert evidence["windows"][0]["wake"] == "Tue 06:45"
    assert candidate.features["hours"] == 9.0
    assert candidate.features["days"] == 5.0
    assert candidate.features["rpm_p95_before"] == 12.0
    assert candidate.features["priority"] == 50.0


def _series(minutes_per_day: list[int]) -> MinuteSeries:
    """Minutes of local days 0, 1, ... (wall clock = UTC), the first n minutes of each."""
    wall = np.asarray(
        [day * 86400 + m * 60 for day, n in enumerate(minutes_per_day) for m in range(n)],
        dtype=np.int64,
    )
    zeros = np.zeros(len(wall))
    return MinuteSeries(
        minute_us=wall * 1_000_000,
        wall_s=wall,
        requests=zeros.astype(np.int64),
        in_flight=zeros,
        rpm=zeros,
    )


@pytest.mark.parametrize(
    ("minutes_per_day", "days"),
    [
        pytest.param([1440] * 7, 7, id="7 whole days"),
        pytest.param([1440] * 6 + [719], 6, id="6 days and one of 11 h 59 min"),
        pytest.param([1440] * 6 + [720], 7, id="6 days and one of 12 h"),
        pytest.param([720, 0, 720], 2, id="a gap day does not count"),
    ],
)
def test_a_day_of_data_has_12_observed_hours(minutes_per_day: list[int], days: int) -> None:
    assert days_of_data(_series(minutes_per_day)) == days
