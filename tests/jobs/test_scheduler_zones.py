"""A zone per job: its schedule is read in its own zone, across DST, on a manual clock."""

from __future__ import annotations

from zoneinfo import ZoneInfo

from support import at

from dgxmm.jobs import CronSchedule, Job, JobKind, RunContext, Scheduler, WorkloadStats

MINUTE = 60_000_000


def nothing(_context: RunContext) -> None:
    return None


def job(name: str, schedule: str, zone: str | None = None) -> Job:
    return Job(
        name,
        JobKind.USER,
        CronSchedule.parse(schedule),
        nothing,
        time_zone=None if zone is None else ZoneInfo(zone),
    )


def ran(scheduler: Scheduler, start: int, end: int) -> dict[str, list[int]]:
    """Tick every minute (2 s past it) from ``start`` to ``end``; the times each job ran."""
    times: dict[str, list[int]] = {}
    scheduler.tick(start)
    now = start
    while now < end:
        now += MINUTE
        for result in scheduler.tick(now):
            times.setdefault(result.name, []).append(result.scheduled_at)
    return times


def test_it_reads_a_jobs_schedule_in_its_own_zone_across_a_gap() -> None:
    # New York moves to summer time on 2026-03-08 (02:00 -> 03:00); Berlin three weeks later.
    scheduler = Scheduler("Europe/Berlin", WorkloadStats())
    scheduler.add(job("new_york", "30 2 * * *", "America/New_York"))
    scheduler.add(job("berlin", "30 2 * * *"))
    times = ran(scheduler, at("2026-03-07T12:00:02-05:00"), at("2026-03-09T12:00:02-04:00"))
    assert times["new_york"] == [
        at("2026-03-08T03:00:00-04:00"),  # 02:30 does not exist that night: right after the gap
        at("2026-03-09T02:30:00-04:00"),
    ]
    assert times["berlin"] == [at("2026-03-08T02:30:00+01:00"), at("2026-03-09T02:30:00+01:00")]


def test_it_runs_a_repeated_hour_of_the_jobs_zone_once() -> None:
    # New York goes back to winter time on 2026-11-01: 01:30 happens twice.
    scheduler = Scheduler("UTC", WorkloadStats())
    scheduler.add(job("new_york", "30 1 * * *", "America/New_York"))
    times = ran(scheduler, at("2026-10-31T12:00:02-04:00"), at("2026-11-02T03:00:02-05:00"))
    assert times["new_york"] == [at("2026-11-01T01:30:00-04:00"), at("2026-11-02T01:30:00-05:00")]


def test_it_plans_a_job_again_when_only_its_zone_changed() -> None:
    scheduler = Scheduler("Europe/Berlin", WorkloadStats())
    scheduler.sync_user_jobs([job("report", "0 9 * * *")])
    scheduler.tick(at("2026-06-01T08:00:00+02:00"))
    assert scheduler.next_run("report") == at("2026-06-01T09:00:00+02:00")
    scheduler.sync_user_jobs([job("report", "0 9 * * *", "Asia/Tokyo")])
    scheduler.tick(at("2026-06-01T08:00:30+02:00"))
    assert scheduler.next_run("report") == at("2026-06-02T09:00:00+09:00")
    assert scheduler.zone_of(scheduler.get("report")) == ZoneInfo("Asia/Tokyo")
