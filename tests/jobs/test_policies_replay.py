"""Hypothesis: random ticks, stalls and run lengths through a scheduler on a manual clock,
for every overlap policy and catch-up choice, across Berlin's spring gap, with times another
instance claimed. Whatever happens, a
job never runs beside itself, no time runs twice, and every time of the job is accounted
for once: run, or counted in a skip record (what ``/metrics`` adds up)."""

from __future__ import annotations

from datetime import timedelta
from enum import Enum
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st
from support import at

from dgxmm.jobs import (
    CatchUp,
    Coalesce,
    CronSchedule,
    Job,
    JobKind,
    JobRun,
    Overlap,
    RunContext,
    Scheduler,
    WorkloadStats,
)
from dgxmm.telemetry import NoTelemetry

SECOND = 1_000_000


class Counted(NoTelemetry):
    def __init__(self) -> None:
        self.skipped = 0

    def runs_skipped(self, job: str, reason: Enum, count: int) -> None:
        self.skipped += count


class Timer:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


# A step: the gap since the last tick, how long a run started at it takes (-1: another
# instance claimed its time, and this one gives it back).
steps = st.lists(
    st.tuples(
        st.sampled_from([5, 5, 5, 5, 20, 75, 190, 700]), st.sampled_from([0, 3, 50, 130, -1])
    ),
    min_size=5,
    max_size=60,
)
catch_ups = st.one_of(
    st.none(),
    st.builds(
        CatchUp,
        window=st.sampled_from([timedelta(seconds=30), timedelta(minutes=5)]),
        coalesce=st.sampled_from(list(Coalesce)),
    ),
)


@settings(max_examples=200, deadline=None)
@given(
    schedule=st.sampled_from(["* * * * *", "*/2 * * * *", "*/5 1-3 * * *"]),
    overlap=st.sampled_from(list(Overlap)),
    catch_up=catch_ups,
    plan=steps,
)
def test_every_time_is_run_once_or_counted_skipped_and_runs_never_overlap(
    schedule: str, overlap: Overlap, catch_up: CatchUp | None, plan: list[tuple[int, int]]
) -> None:
    timer, told = Timer(), Counted()
    scheduler = Scheduler("Europe/Berlin", WorkloadStats(), timer=timer, telemetry=told)
    seconds_of: dict[int, int] = {}

    def work(context: RunContext) -> None:
        timer.now += seconds_of[context.started_at]

    cron = CronSchedule.parse(schedule)
    scheduler.add(Job("a", JobKind.USER, cron, work, overlap=overlap, catch_up=catch_up))
    start = at("2026-03-29T00:57:32+00:00")  # Berlin's clocks jump at 01:00 UTC
    now = start
    scheduler.start_due(now)
    running: list[tuple[int, JobRun]] = []  # (ends at, run)
    started: list[int] = []  # the scheduled times that ran

    def take_back(until: int) -> None:
        for end, run in sorted(running, key=lambda item: item[0]):
            if end <= until:
                running.remove((end, run))
                timer.now = 0.0
                scheduler.finish(run.run())

    # The plan, then twenty quiet minutes of 5 s ticks and instant runs: everything settles.
    for gap, seconds in [*plan, *[(5, 0)] * 240]:
        now += gap * SECOND
        take_back(now)
        for run in scheduler.start_due(now):
            assert not running, "a job ran beside itself"
            if seconds < 0:
                scheduler.forgo(run, now)  # counted skipped (claimed)
                continue
            seconds_of[run.started_at] = seconds
            running.append((now + seconds * SECOND, run))
            started.append(run.scheduled_at)
        for end, run in list(running):
            if run.cancelled_by is not None and end > now:  # it stops at its next check
                running.remove((end, run))
                running.append((now, run))
    take_back(now)
    assert len(started) == len(set(started)), "a time ran twice"
    zone = ZoneInfo("Europe/Berlin")
    due, t = 0, cron.next_after(start, zone)
    while t <= now:
        due += 1
        t = cron.next_after(t, zone)
    assert len(started) + told.skipped == due
