"""Each skip reaches the scheduler's telemetry with the times it covers (``/metrics``)."""

from __future__ import annotations

from enum import Enum

from support import at

from dgxmm.jobs import CronSchedule, Job, JobKind, RunContext, Scheduler, SkipReason, WorkloadStats
from dgxmm.telemetry import NoTelemetry


class Counted(NoTelemetry):
    """The skips told, as (job, reason, count)."""

    def __init__(self) -> None:
        self.skips: list[tuple[str, Enum, int]] = []

    def runs_skipped(self, job: str, reason: Enum, count: int) -> None:
        self.skips.append((job, reason, count))


class Timer:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_it_tells_an_overlap_with_every_time_the_run_covered() -> None:
    timer, told = Timer(), Counted()

    def slow(_context: RunContext) -> None:
        timer.now += 200  # 10:01:00 to 10:04:20: 10:02, 10:03 and 10:04 pass meanwhile

    scheduler = Scheduler("Europe/Berlin", WorkloadStats(), timer=timer, telemetry=told)
    scheduler.add(Job("slow", JobKind.USER, CronSchedule.parse("* * * * *"), slow))
    scheduler.tick(at("2026-06-01T10:00:30+02:00"))
    (run,) = scheduler.start_due(at("2026-06-01T10:01:00+02:00"))
    scheduler.finish(run.run())
    assert told.skips == [("slow", SkipReason.OVERLAP, 3)]


def test_it_tells_a_group_wait_and_a_time_another_instance_claimed_once_each() -> None:
    told = Counted()
    scheduler = Scheduler("UTC", WorkloadStats(), timer=Timer(), telemetry=told)
    every = CronSchedule.parse("* * * * *")
    scheduler.add(Job("a", JobKind.USER, every, lambda _c: None, group="query"))
    scheduler.add(Job("b", JobKind.USER, every, lambda _c: None, group="query"))
    scheduler.tick(at("2026-06-01T10:00:30+00:00"))
    (first,) = scheduler.start_due(at("2026-06-01T10:01:00+00:00"))  # b waits for a
    scheduler.forgo(first, at("2026-06-01T10:01:01+00:00"))  # another instance ran a
    assert told.skips == [("b", SkipReason.GROUP_BUSY, 1), ("a", SkipReason.CLAIMED, 1)]
