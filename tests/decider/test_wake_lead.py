"""The wake lead: its setting, the lead it gives and where from, and a slot begun early."""

from __future__ import annotations

from datetime import date
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import at

from dgxmm.decider.days import ALL_DAYS, mask_of
from dgxmm.decider.schedules.lead import (
    DEFAULT_LEAD_US,
    MAX_LEAD_US,
    Lead,
    LeadKind,
    WakeLead,
    due_early,
    lead_for,
    parse_wake_lead,
)
from dgxmm.decider.schedules.slots import Slot, due_slot
from dgxmm.errors import DefinitionError
from dgxmm.time_units import MINUTE_US, SECOND_US

BERLIN = ZoneInfo("Europe/Berlin")
WEEKDAYS = mask_of(range(5))
S = SECOND_US

# -- parse_wake_lead -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected", "shown"),
    [
        pytest.param("off", WakeLead(), "off", id="off"),
        pytest.param(None, WakeLead(), "off", id="absent"),
        pytest.param("measured", WakeLead(kind=LeadKind.MEASURED), "measured", id="measured"),
        pytest.param(0, WakeLead(), "off", id="zero-is-off"),
        pytest.param(0.0, WakeLead(), "off", id="zero-float-is-off"),
        pytest.param(30, WakeLead(kind=LeadKind.SECONDS, seconds=30.0), 30.0, id="30"),
        pytest.param(2.5, WakeLead(kind=LeadKind.SECONDS, seconds=2.5), 2.5, id="fraction"),
        pytest.param(900, WakeLead(kind=LeadKind.SECONDS, seconds=900.0), 900.0, id="900"),
    ],
)
def test_it_reads_a_wake_lead(value: object, expected: WakeLead, shown: str | float) -> None:
    lead = parse_wake_lead(value)
    assert lead == expected
    assert lead.to_json() == shown


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(-1, id="negative"),
        pytest.param(901, id="past-15-minutes"),
        pytest.param(900.5, id="just-past-15-minutes"),
        pytest.param(float("nan"), id="nan"),
        pytest.param(float("inf"), id="infinite"),
        pytest.param(True, id="true"),
        pytest.param(False, id="false"),
        pytest.param("soon", id="a-word"),
        pytest.param("30", id="a-number-as-text"),
        pytest.param([30], id="a-list"),
    ],
)
def test_it_refuses_a_bad_wake_lead_naming_the_field(value: object) -> None:
    with pytest.raises(DefinitionError) as caught:
        parse_wake_lead(value)
    assert caught.value.field == "wake_lead"
    assert repr(value) in caught.value.message


def test_it_names_the_callers_field() -> None:
    with pytest.raises(DefinitionError) as caught:
        parse_wake_lead(-1, field="deployments[0].wake_lead")
    assert caught.value.field == "deployments[0].wake_lead"


@given(
    value=st.one_of(
        st.just("off"),
        st.just("measured"),
        st.integers(min_value=0, max_value=900),
        st.floats(min_value=0, max_value=900),
    )
)
def test_a_read_wake_lead_reads_back_from_its_json(value: str | float) -> None:
    lead = parse_wake_lead(value)
    assert parse_wake_lead(lead.to_json()) == lead


# -- lead_for --------------------------------------------------------------------------------


def test_an_off_lead_begins_at_the_minute() -> None:
    lead = lead_for(WakeLead(), level=1, ready_times_us=[600 * S])
    assert lead == Lead(us=0, source="wake lead off")
    assert lead.says == "begins at its minute (wake lead off)"


def test_a_lead_in_seconds_is_that_many() -> None:
    lead = lead_for(parse_wake_lead(30), level=2, ready_times_us=[600 * S])
    assert lead == Lead(us=30 * S, source="set: 30 s")
    assert lead.says == "begins 30 s early: set: 30 s"


@pytest.mark.parametrize(
    ("level", "expected"),
    [
        pytest.param(
            1, Lead(us=6 * S, source="no level-1 wakes measured yet: the default for them")
        ),
        pytest.param(
            2, Lead(us=9 * S, source="no level-2 wakes measured yet: the default for them")
        ),
        pytest.param(0, Lead(us=120 * S, source="no starts measured yet: the default for them")),
    ],
    ids=["level-1", "level-2", "start"],
)
def test_a_measured_lead_with_nothing_measured_takes_the_levels_default(
    level: int, expected: Lead
) -> None:
    lead = lead_for(WakeLead(kind=LeadKind.MEASURED), level=level, ready_times_us=[])
    assert lead == expected
    assert lead.us == DEFAULT_LEAD_US[level]


def test_a_measured_lead_is_the_p95_of_the_last_20_only() -> None:
    old = [600 * S] * 5  # slow wakes of long ago: the 21st to 25th last
    recent = [30 * S] * 9 + [42 * S] + [30 * S] * 8 + [50 * S, 31 * S]
    lead = lead_for(WakeLead(kind=LeadKind.MEASURED), level=1, ready_times_us=old + recent)
    # Nearest rank of 20: the 19th smallest; the 20th (50 s) is the 5 % left out.
    assert lead == Lead(us=42 * S, source="p95 of the last 20 level-1 wakes")
    assert lead.says == "begins 42 s early: p95 of the last 20 level-1 wakes"


@pytest.mark.parametrize(
    ("times_s", "expected_s"),
    [
        pytest.param([7], 7, id="one"),
        pytest.param([5, 9, 6], 9, id="three: the largest"),
        pytest.param(list(range(1, 11)), 10, id="ten: the largest"),
        pytest.param(list(range(1, 21)), 19, id="twenty: the 19th"),
    ],
)
def test_a_measured_lead_takes_the_nearest_rank(times_s: list[int], expected_s: int) -> None:
    lead = lead_for(
        WakeLead(kind=LeadKind.MEASURED), level=2, ready_times_us=[t * S for t in times_s]
    )
    assert lead == Lead(us=expected_s * S, source=f"p95 of the last {len(times_s)} level-2 wakes")


@given(times=st.lists(st.integers(min_value=0, max_value=2 * MAX_LEAD_US), min_size=1))
def test_a_measured_lead_is_the_nearest_rank_p95_of_the_last_20_bounded(
    times: list[int],
) -> None:
    recent = times[-20:]
    # The smallest measured time at least 95 % of the recent ones are within (exact: in %).
    p95 = min(t for t in recent if 100 * sum(r <= t for r in recent) >= 95 * len(recent))
    lead = lead_for(WakeLead(kind=LeadKind.MEASURED), level=0, ready_times_us=times)
    assert lead.us == min(p95, MAX_LEAD_US)
    assert lead.source.startswith(f"p95 of the last {len(recent)} starts")
    assert lead.source.endswith("(bounded to 15 minutes)") is (p95 > MAX_LEAD_US)


def test_a_measured_lead_is_bounded_to_15_minutes_and_says_so() -> None:
    lead = lead_for(WakeLead(kind=LeadKind.MEASURED), level=1, ready_times_us=[20 * MINUTE_US] * 20)
    assert lead == Lead(
        us=15 * MINUTE_US, source="p95 of the last 20 level-1 wakes (bounded to 15 minutes)"
    )
    assert (
        lead.says == "begins 900 s early: p95 of the last 20 level-1 wakes (bounded to 15 minutes)"
    )
    at_the_bound = lead_for(
        WakeLead(kind=LeadKind.MEASURED), level=1, ready_times_us=[15 * MINUTE_US] * 20
    )
    assert at_the_bound == Lead(us=15 * MINUTE_US, source="p95 of the last 20 level-1 wakes")


# -- due_early -------------------------------------------------------------------------------


def early(
    now: str,
    *,
    lead_s: float = 42,
    time: tuple[int, int] = (7, 30),
    days: int = WEEKDAYS,
    last_run_day: str | None = None,
) -> Slot | None:
    return due_early(
        days=days,
        time=time,
        zone=BERLIN,
        now_us=at(now),
        last_run_day=last_run_day,
        lead_us=round(lead_s * S),
    )


@pytest.mark.parametrize(
    ("now", "due"),
    [
        pytest.param("2026-06-03T07:28:00+02:00", False, id="07:28-not-yet"),
        pytest.param("2026-06-03T07:28:59+02:00", False, id="07:28:59-not-yet"),
        pytest.param("2026-06-03T07:29:00+02:00", True, id="07:29-the-pass-before"),
        pytest.param("2026-06-03T07:30:00+02:00", True, id="07:30"),
        pytest.param("2026-06-03T07:45:00+02:00", True, id="07:45-15-late"),
        pytest.param("2026-06-03T07:46:00+02:00", False, id="07:46-16-late"),
        pytest.param("2026-06-06T07:29:00+02:00", False, id="saturday-not-its-day"),
    ],
)
def test_a_42_s_lead_begins_at_the_pass_before_the_slot(now: str, due: bool) -> None:
    slot = early(now)
    if not due:
        assert slot is None
        return
    assert slot is not None
    assert slot.at_us == at("2026-06-03T07:30:00+02:00")  # the slot keeps its minute
    assert slot.day == date(2026, 6, 3)


def test_a_lead_is_rounded_up_to_the_runners_minute() -> None:
    assert early("2026-06-03T07:28:00+02:00", lead_s=60) is None
    assert early("2026-06-03T07:28:00+02:00", lead_s=61) is not None
    assert early("2026-06-03T07:15:00+02:00", lead_s=900) is not None
    assert early("2026-06-03T07:14:00+02:00", lead_s=900) is None


def test_a_slot_run_early_is_not_due_again_that_day() -> None:
    for now in ("2026-06-03T07:29:00+02:00", "2026-06-03T07:30:00+02:00"):
        assert early(now, last_run_day="2026-06-03") is None
    assert early("2026-06-04T07:29:00+02:00", last_run_day="2026-06-03") is not None


def test_a_lead_reaches_over_midnight_into_the_slots_own_day() -> None:
    thursday = mask_of([3])
    slot = early("2026-06-03T23:59:00+02:00", time=(0, 0), days=thursday)
    assert slot is not None
    assert slot.day == date(2026, 6, 4)
    assert slot.at_us == at("2026-06-04T00:00:00+02:00")
    # The runner records the slot's day: the pass at its minute does not run it again.
    assert (
        early("2026-06-04T00:00:00+02:00", time=(0, 0), days=thursday, last_run_day="2026-06-04")
        is None
    )


def test_it_takes_the_local_date_when_the_caller_knows_it() -> None:
    slot = due_early(
        days=WEEKDAYS,
        time=(7, 30),
        zone=BERLIN,
        now_us=at("2026-06-03T07:29:00+02:00"),
        last_run_day=None,
        lead_us=42 * S,
        today=date(2026, 6, 3),
    )
    assert slot is not None
    assert slot.at_us == at("2026-06-03T07:30:00+02:00")


def test_a_wake_in_the_spring_gap_begins_the_lead_before_the_gaps_end() -> None:
    # Berlin, 2026-03-29: 02:00 CET is 03:00 CEST; a 02:30 wake happens at 03:00 CEST.
    assert early("2026-03-29T01:58:00+01:00", time=(2, 30), days=ALL_DAYS) is None
    slot = early("2026-03-29T01:59:00+01:00", time=(2, 30), days=ALL_DAYS)
    assert slot is not None
    assert slot.at_us == at("2026-03-29T03:00:00+02:00")
    assert slot.moved
    assert slot.day == date(2026, 3, 29)


def test_a_lead_counts_real_minutes_across_the_spring_gap() -> None:
    # 01:58 CET is two minutes before 03:00 CEST, though the wall clocks are 62 apart.
    slot = early("2026-03-29T01:58:00+01:00", time=(3, 0), days=ALL_DAYS, lead_s=120)
    assert slot is not None
    assert slot.at_us == at("2026-03-29T03:00:00+02:00")
    assert early("2026-03-29T01:57:00+01:00", time=(3, 0), days=ALL_DAYS, lead_s=120) is None


def test_the_repeated_autumn_hour_does_not_make_a_wake_due_early_again() -> None:
    # Berlin, 2026-10-25: a 02:30 wake happens at the first 02:30 (CEST) only.
    first = early("2026-10-25T02:25:00+02:00", time=(2, 30), days=ALL_DAYS, lead_s=300)
    assert first is not None
    assert first.at_us == at("2026-10-25T02:30:00+02:00")
    for ran in (None, "2026-10-25"):
        again = early(
            "2026-10-25T02:25:00+01:00", time=(2, 30), days=ALL_DAYS, lead_s=300, last_run_day=ran
        )
        assert again is None


@given(
    minute=st.integers(min_value=0, max_value=3 * 24 * 60),
    time=st.tuples(st.integers(0, 23), st.integers(0, 59)),
    days=st.integers(min_value=0, max_value=ALL_DAYS),
    last_run_day=st.sampled_from([None, "2026-03-27", "2026-03-28", "2026-03-29"]),
)
def test_a_lead_of_zero_is_due_slot(
    minute: int, time: tuple[int, int], days: int, last_run_day: str | None
) -> None:
    # Three days around Berlin's spring change, a pass a minute.
    now = at("2026-03-27T00:00:00+01:00") + minute * MINUTE_US
    plain = due_slot(days=days, time=time, zone=BERLIN, now_us=now, last_run_day=last_run_day)
    slot = due_early(
        days=days, time=time, zone=BERLIN, now_us=now, last_run_day=last_run_day, lead_us=0
    )
    assert slot == plain


@given(
    minute=st.integers(min_value=0, max_value=3 * 24 * 60),
    time=st.tuples(st.integers(0, 23), st.integers(0, 59)),
    lead_s=st.integers(min_value=1, max_value=900),
)
def test_a_lead_only_adds_passes_before_the_slot_which_keeps_its_minute(
    minute: int, time: tuple[int, int], lead_s: int
) -> None:
    now = at("2026-03-27T00:00:00+01:00") + minute * MINUTE_US
    plain = due_slot(days=ALL_DAYS, time=time, zone=BERLIN, now_us=now, last_run_day=None)
    slot = due_early(
        days=ALL_DAYS, time=time, zone=BERLIN, now_us=now, last_run_day=None, lead_us=lead_s * S
    )
    if plain is not None:
        assert slot == plain  # a slot due anyway is the same slot
        return
    if slot is not None:
        assert now < slot.at_us <= now + -(-lead_s // 60) * MINUTE_US
