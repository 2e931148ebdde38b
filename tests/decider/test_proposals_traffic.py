"""From rollups to accepted schedules: a month of office-hours traffic over a DST change."""

from __future__ import annotations

import pytest
from decider.traffickit import add_deployment, add_minutes, office_hours, weekly_traffic
from support import at

from dgxmm.clock import ManualClock
from dgxmm.decider.profiles import ProfileService
from dgxmm.decider.proposals.rows import ProposalStatus
from dgxmm.decider.proposals.service import ProposalService
from dgxmm.decider.schedules.service import ScheduleService
from dgxmm.store import Store
from dgxmm.time_units import DAY_US

SUNDAY_02 = 6 * 24 + 2
ZONE = "Europe/Berlin"


@pytest.mark.parametrize(
    ("now", "sunday_02_weeks"),
    [
        # Clocks went back on 2026-10-25: that Sunday's 02:00 hour happened twice (Sundays of
        # the window: Oct 4, 11, 18, 25 and Nov 1).
        pytest.param("2026-11-02T00:00:00+00:00", 5, id="autumn"),
        # Clocks went forward on 2026-03-29: that Sunday had no 02:00 hour (Sundays of the
        # window: Mar 8, 15, 22, 29 and Apr 5).
        pytest.param("2026-04-06T00:00:00+00:00", 4, id="spring"),
    ],
)
def test_office_hours_become_weeknight_and_weekend_proposals(
    profile_store: Store,
    profile_service: ProfileService,
    proposals: ProposalService,
    profile_schedules: ScheduleService,
    profile_clock: ManualClock,
    now: str,
    sunday_02_weeks: int,
) -> None:
    profile_clock.set(at(now))
    deployment = add_deployment(profile_store, zone=ZONE)
    until = profile_clock.now_us()
    add_minutes(
        profile_store,
        deployment,
        weekly_traffic(ZONE, until - 30 * DAY_US, until, busy=office_hours),
    )
    profile_service.rebuild()
    sunday_02 = profile_service.profile(deployment).hours[SUNDAY_02]
    assert sunday_02.observed_weeks == sunday_02_weeks
    assert sunday_02.idle_weeks == sunday_02_weeks

    run = proposals.propose()
    assert run.model is None  # the feedback model has nothing to learn from: the rules decide
    made = proposals.list(deployment, status=ProposalStatus.OPEN)
    assert sorted((p.sleep_days, p.sleep_time, p.wake_days, p.wake_time) for p in made) == [
        (15, "22:00", 30, "06:45"),  # Monday to Thursday nights, waking Tuesday to Friday
        (16, "22:00", 1, "06:45"),  # Friday 22:00 over the week's end to Monday 06:45
    ]
    weekend = next(p for p in made if p.sleep_days == 16)
    assert weekend.evidence["hours"] == 57
    assert weekend.evidence["windows"][0]["start"] == "Fri 22:00"
    assert weekend.evidence["windows"][0]["wake"] == "Mon 06:45"
    assert weekend.evidence["requests_30d"] == 0
    assert (weekend.source, weekend.confidence) == ("rules", 1.0)

    proposals.accept(weekend.id, actor="user:alice")
    assert [(s.action.value, s.days, s.time) for s in profile_schedules.list(deployment)] == [
        ("sleep", 16, "22:00"),
        ("wake", 1, "06:45"),
    ]
