"""Traffic profiles from synthetic rollups with answers computed by hand."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from decider.traffickit import (
    Minute,
    add_deployment,
    add_minutes,
    local_minutes,
    office_hours,
    weekly_traffic,
)
from support import at

from dgxmm.clock import ManualClock
from dgxmm.decider.profiles import ProfileService
from dgxmm.decider.traffic import requests_per_minute
from dgxmm.errors import NotFound
from dgxmm.jobs import JobLimits, RunContext
from dgxmm.store import Store
from dgxmm.time_units import DAY_US, MINUTE_US

MONDAY_10 = 10  # hours of the week, local
TUESDAY_09 = 24 + 9
SUNDAY_02 = 6 * 24 + 2
SUNDAY_03 = 6 * 24 + 3


def _ints(*values: int) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def _floats(*values: float) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)


def test_it_divides_requests_in_flight_by_latency() -> None:
    rpm = requests_per_minute(
        _ints(10, 30, 0, 5, 0),
        _floats(2.0, 6.0, 2.0, 0.0, 0.0),
        _floats(2.0, 4.0, 0.0, 0.0, 0.0),
    )
    # 60 * 2 / 2; 60 * 6 / 4; in flight with nothing completed: the typical latency,
    # (10 * 2 + 30 * 4) / 40 = 3.5 s, so 60 * 2 / 3.5; nothing in flight but 5 completed: 5.
    assert rpm.tolist() == pytest.approx([60.0, 90.0, 120 / 3.5, 5.0, 0.0])


def test_it_takes_a_minute_as_the_latency_when_nothing_ever_completed() -> None:
    rpm = requests_per_minute(_ints(0, 0), _floats(1.0, 3.0), _floats(0.0, 0.0))
    assert rpm.tolist() == [1.0, 3.0]


def _by_hour(service: ProfileService, deployment: int) -> dict[int, dict[str, object]]:
    return {h.hour_of_week: h.to_json() for h in service.profile(deployment).hours}


def test_it_builds_hours_with_known_answers(
    profile_store: Store, profile_service: ProfileService
) -> None:
    deployment = add_deployment(profile_store, zone="Europe/Berlin")
    minutes: list[Minute] = []
    # Monday 10:00 local (08:00 UTC in May), four Mondays in the 30 days before June 1st.
    monday = at("2026-05-04T08:00:00+00:00")
    week = 7 * DAY_US
    minutes += [  # running 0.5 + waiting 0.5 = 1 in flight over 2 s: 30 a minute
        Minute(at_us=monday + i * MINUTE_US, requests=1, running=0.5, waiting=0.5, latency_s=2.0)
        for i in range(60)
    ]
    minutes += [Minute(at_us=monday + week + i * MINUTE_US) for i in range(60)]  # idle
    minutes += [  # 20 minutes of 2 in flight over 1 s (120 a minute), 20 idle: 40 observed
        Minute(at_us=monday + 2 * week + i * MINUTE_US, requests=2, running=2.0, latency_s=1.0)
        for i in range(20)
    ] + [Minute(at_us=monday + 2 * week + (20 + i) * MINUTE_US) for i in range(20)]
    minutes += [Minute(at_us=monday + 3 * week + i * MINUTE_US) for i in range(29)]  # too few
    # Tuesday 09:00 local: 240 minutes completing 1, 2, ... 240 requests, none seen in flight.
    tuesday = at("2026-05-05T07:00:00+00:00")
    minutes += [
        Minute(
            at_us=tuesday + (i // 60) * week + (i % 60) * MINUTE_US,
            requests=i + 1,
            latency_s=0.5,
        )
        for i in range(240)
    ]
    add_minutes(profile_store, deployment, minutes)

    assert profile_service.rebuild() == [deployment]

    hours = _by_hour(profile_service, deployment)
    assert len(hours) == 168
    # 189 minutes: 109 of rate 0, 60 of 30, 20 of 120. Nearest rank: the 95th and 180th.
    assert hours[MONDAY_10] == {
        "hour_of_week": MONDAY_10,
        "day": 0,
        "hour": 10,
        "rpm_p50": 0.0,
        "rpm_p95": 120.0,
        "active_share": pytest.approx(80 / 189),
        "observed_minutes": 189,
        "observed_weeks": 3,  # the fourth Monday has 29 minutes, under the 30 a week needs
        "idle_weeks": 1,
    }
    assert hours[TUESDAY_09]["rpm_p50"] == 120.0  # ceil(0.5 * 240) = 120th of 1..240
    assert hours[TUESDAY_09]["rpm_p95"] == 228.0  # ceil(0.95 * 240) = 228th
    assert hours[TUESDAY_09]["active_share"] == 1.0
    assert (hours[TUESDAY_09]["observed_weeks"], hours[TUESDAY_09]["idle_weeks"]) == (4, 0)
    assert hours[MONDAY_10 + 1] == {
        "hour_of_week": MONDAY_10 + 1,
        "day": 0,
        "hour": 11,
        "rpm_p50": 0.0,
        "rpm_p95": 0.0,
        "active_share": 0.0,
        "observed_minutes": 0,
        "observed_weeks": 0,
        "idle_weeks": 0,
    }


def test_it_reads_only_the_last_30_days(
    profile_store: Store, profile_service: ProfileService, profile_clock: ManualClock
) -> None:
    deployment = add_deployment(profile_store, zone="UTC")
    now = profile_clock.now_us()
    since = now - 30 * DAY_US
    add_minutes(
        profile_store,
        deployment,
        [
            Minute(at_us=t, requests=1, latency_s=1.0)
            for t in (since - MINUTE_US, since, now - MINUTE_US, now)
        ],
    )
    profile_service.rebuild(deployment)
    hours = profile_service.profile(deployment).hours
    assert sum(h.observed_minutes for h in hours) == 2
    # 2026-05-02 00:00 is a Saturday (hour 120); 2026-05-31 23:59 a Sunday (hour 167).
    assert {h.hour_of_week for h in hours if h.observed_minutes} == {120, 167}
    assert profile_service.profile(deployment).built_at == now


def _sundays(
    store: Store, deployment: int, zone: str, spans: list[tuple[str, str]], busy: set[int]
) -> None:
    """Minutes from each span's start to its end, idle but for the ``busy`` ones."""
    for start, end in spans:
        add_minutes(
            store,
            deployment,
            [
                Minute(at_us=t, requests=1, latency_s=1.0) if t in busy else Minute(at_us=t)
                for t, _ in local_minutes(zone, at(start), at(end))
            ],
        )


def test_the_repeated_hour_gets_both_passes(
    profile_store: Store, profile_service: ProfileService, profile_clock: ManualClock
) -> None:
    # Berlin goes back from 03:00 CEST to 02:00 CET on Sunday 2026-10-25.
    profile_clock.set(at("2026-11-05T00:00:00+00:00"))
    deployment = add_deployment(profile_store, zone="Europe/Berlin")
    spans = [
        ("2026-10-11T00:00:00+02:00", "2026-10-11T05:00:00+02:00"),
        ("2026-10-18T00:00:00+02:00", "2026-10-18T05:00:00+02:00"),
        ("2026-10-25T00:00:00+02:00", "2026-10-25T05:00:00+01:00"),  # six hours long
        ("2026-11-01T00:00:00+01:00", "2026-11-01T05:00:00+01:00"),
    ]
    busy = {at("2026-10-25T02:30:00+02:00"), at("2026-10-25T02:30:00+01:00")}
    _sundays(profile_store, deployment, "Europe/Berlin", spans, busy)
    profile_service.rebuild(deployment)
    hours = _by_hour(profile_service, deployment)
    assert hours[SUNDAY_02]["observed_minutes"] == 4 * 60 + 60  # 2026-10-25 had two 02:00s
    assert hours[SUNDAY_02]["observed_weeks"] == 4
    assert hours[SUNDAY_02]["idle_weeks"] == 3  # both busy minutes fell in its one 02:00 hour
    assert hours[SUNDAY_02]["active_share"] == pytest.approx(2 / 300)
    assert hours[SUNDAY_03]["observed_minutes"] == 4 * 60
    assert (hours[SUNDAY_03]["observed_weeks"], hours[SUNDAY_03]["idle_weeks"]) == (4, 4)


def test_the_skipped_hour_gets_nothing(
    profile_store: Store, profile_service: ProfileService, profile_clock: ManualClock
) -> None:
    # Berlin jumps from 02:00 CET to 03:00 CEST on Sunday 2026-03-29.
    profile_clock.set(at("2026-04-10T00:00:00+00:00"))
    deployment = add_deployment(profile_store, zone="Europe/Berlin")
    spans = [
        ("2026-03-15T00:00:00+01:00", "2026-03-15T05:00:00+01:00"),
        ("2026-03-22T00:00:00+01:00", "2026-03-22T05:00:00+01:00"),
        ("2026-03-29T00:00:00+01:00", "2026-03-29T05:00:00+02:00"),  # four hours long
        ("2026-04-05T00:00:00+02:00", "2026-04-05T05:00:00+02:00"),
    ]
    busy = {at("2026-03-29T03:00:00+02:00")}  # the first minute after the gap
    _sundays(profile_store, deployment, "Europe/Berlin", spans, busy)
    profile_service.rebuild(deployment)
    hours = _by_hour(profile_service, deployment)
    assert hours[SUNDAY_02]["observed_minutes"] == 3 * 60
    assert (hours[SUNDAY_02]["observed_weeks"], hours[SUNDAY_02]["idle_weeks"]) == (3, 3)
    assert hours[SUNDAY_03]["observed_minutes"] == 4 * 60
    assert (hours[SUNDAY_03]["observed_weeks"], hours[SUNDAY_03]["idle_weeks"]) == (4, 3)


def test_a_deployment_without_rollups_gets_168_empty_hours(
    profile_store: Store, profile_service: ProfileService
) -> None:
    deployment = add_deployment(profile_store)
    assert profile_service.profile(deployment).hours == ()
    profile_service.rebuild()
    hours = profile_service.profile(deployment).hours
    assert [h.hour_of_week for h in hours] == list(range(168))
    assert all(h.observed_minutes == 0 and h.rpm_p95 == 0.0 for h in hours)


def test_a_rebuild_replaces_the_rows(
    profile_store: Store, profile_service: ProfileService, profile_clock: ManualClock
) -> None:
    deployment = add_deployment(profile_store, zone="UTC")
    add_minutes(profile_store, deployment, [Minute(at_us=at("2026-05-31T23:00:00+00:00"))])
    profile_service.rebuild()
    first = profile_service.profile(deployment)
    profile_clock.advance(timedelta(days=31))
    profile_service.rebuild()
    second = profile_service.profile(deployment)
    assert sum(h.observed_minutes for h in first.hours) == 1
    assert sum(h.observed_minutes for h in second.hours) == 0
    assert second.built_at == first.built_at + 31 * DAY_US  # type: ignore[operator]


def test_an_unknown_deployment_is_not_found(profile_service: ProfileService) -> None:
    with pytest.raises(NotFound):
        profile_service.rebuild(999)
    with pytest.raises(NotFound):
        profile_service.profile(999)


def test_the_system_job_rebuilds_daily(
    profile_store: Store, profile_service: ProfileService, profile_clock: ManualClock
) -> None:
    deployment = add_deployment(profile_store, zone="UTC")
    (job,) = profile_service.system_jobs()
    assert job.name == "traffic_profiles"
    assert job.schedule.text == "20 0 * * *"
    now = profile_clock.now_us()
    context = RunContext(
        name=job.name, scheduled_at=now, started_at=now, limits=JobLimits(), timer=lambda: 0.0
    )
    assert job.action(context) == "1 profile rebuilt"
    assert profile_service.profile(deployment).built_at == now


def test_rebuilding_all_in_one_pass_matches_one_at_a_time(
    profile_store: Store, profile_service: ProfileService, profile_clock: ManualClock
) -> None:
    now = profile_clock.now_us()
    berlin = add_deployment(profile_store, "berlin", zone="Europe/Berlin")
    new_york = add_deployment(profile_store, "new_york", zone="America/New_York")
    quiet = add_deployment(profile_store, "quiet", zone="Asia/Kolkata")  # no rollups at all
    inserted = {
        berlin: add_minutes(
            profile_store,
            berlin,
            weekly_traffic("Europe/Berlin", now - 30 * DAY_US, now, busy=office_hours),
        ),
        new_york: add_minutes(
            profile_store,
            new_york,
            weekly_traffic("America/New_York", now - 30 * DAY_US, now, busy=office_hours),
        ),
    }
    assert profile_service.rebuild() == [berlin, new_york, quiet]
    together = {d: profile_service.profile(d).hours for d in (berlin, new_york, quiet)}
    for deployment in (berlin, new_york, quiet):
        assert profile_service.rebuild(deployment) == [deployment]
        assert profile_service.profile(deployment).hours == together[deployment]
    for deployment, count in inserted.items():
        assert sum(h.observed_minutes for h in together[deployment]) == count
        # Monday 10:00 local is busy in its own zone: 1 in flight over 1.5 s, 40 a minute.
        assert together[deployment][MONDAY_10].rpm_p95 == pytest.approx(40.0)
        assert together[deployment][3].active_share == 0.0  # Monday 03:00
    assert sum(h.observed_minutes for h in together[quiet]) == 0
