"""Catch-up, coalesce and overlap policies through the scheduler on a manual clock, across
Berlin's DST changes (literal instants); every default stays the spec's rule."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from support import at

from dgxmm.jobs import (
    CANCELLED_BY_OVERLAP,
    CatchUp,
    Cause,
    Coalesce,
    CronSchedule,
    Explanation,
    Job,
    JobKind,
    Outcome,
    Overlap,
    RunContext,
    RunFact,
    RunResult,
    Scheduler,
    SkipReason,
    Verdict,
    WorkloadStats,
    explain,
    place,
)


class Timer:
    """A monotonic timer the test moves by hand (seconds)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def scheduler(timer: Timer | None = None) -> Scheduler:
    return Scheduler("Europe/Berlin", WorkloadStats(), timer=timer or Timer())


def hourly(**keys: object) -> Job:
    return Job("hourly", JobKind.USER, CronSchedule.parse("0 * * * *"), lambda _c: None, **keys)  # type: ignore[arg-type]


# Berlin, 2026-03-29: clocks jump from 02:00+01:00 to 03:00+02:00. The host stops after
# 00:30 and ticks again at 04:20+02:00: 01:00+01:00, 03:00+02:00 (the gap's 02:00 moved
# there, one time) and 04:00+02:00 passed. A window of two hours holds the last two.
STOPPED = at("2026-03-29T00:30:00+01:00")
BACK = at("2026-03-29T04:20:00+02:00")
WINDOW = CatchUp(window=timedelta(hours=2))


def test_without_a_catch_up_a_gap_is_skipped_whole_as_the_spec_has_it() -> None:
    s = scheduler()
    s.add(hourly())
    s.tick(STOPPED)
    assert s.tick(BACK) == []
    skip = s.skips[-1]
    assert (skip.reason, skip.at_us) == (SkipReason.MISSED, at("2026-03-29T01:00:00+01:00"))
    assert s.next_run("hourly") == at("2026-03-29T05:00:00+02:00")


@pytest.mark.parametrize(
    ("coalesce", "ran", "coalesced"),
    [
        (Coalesce.LATEST, "2026-03-29T04:00:00+02:00", "2026-03-29T03:00:00+02:00"),
        (Coalesce.EARLIEST, "2026-03-29T03:00:00+02:00", "2026-03-29T04:00:00+02:00"),
    ],
    ids=["latest", "earliest"],
)
def test_a_catch_up_runs_one_time_inside_its_window_across_the_gap(
    coalesce: Coalesce, ran: str, coalesced: str
) -> None:
    s = scheduler()
    s.add(hourly(catch_up=CatchUp(window=timedelta(hours=2), coalesce=coalesce)))
    s.tick(STOPPED)
    (result,) = s.tick(BACK)
    assert (result.scheduled_at, result.started_at) == (at(ran), BACK)
    missed, merged = list(s.skips)
    assert (missed.reason, missed.at_us) == (SkipReason.MISSED, at("2026-03-29T01:00:00+01:00"))
    assert "past its catch-up window of 7200 s" in (missed.detail or "")
    assert (merged.reason, merged.at_us) == (SkipReason.MISSED, at(coalesced))
    assert (merged.detail or "").startswith(f"coalesced ({coalesce.value})")
    assert s.next_run("hourly") == at("2026-03-29T05:00:00+02:00")


def test_a_catch_up_of_all_runs_every_time_inside_its_window_one_after_another() -> None:
    timer = Timer()

    def slow(_context: RunContext) -> None:
        timer.now += 30

    s = scheduler(timer)
    s.add(
        Job("hourly", JobKind.USER, CronSchedule.parse("0 * * * *"), slow,
            catch_up=CatchUp(window=timedelta(hours=2), coalesce=Coalesce.ALL))
    )  # fmt: skip
    s.tick(STOPPED)
    (first,) = s.start_due(BACK)
    assert first.scheduled_at == at("2026-03-29T03:00:00+02:00")
    assert s.start_due(BACK + 5_000_000) == []  # never beside itself
    s.finish(first.run())  # ends at 04:20:30
    assert s.has_released()
    (second,) = s.start_due(at("2026-03-29T04:20:35+02:00"))
    assert (second.scheduled_at, second.started_at) == (
        at("2026-03-29T04:00:00+02:00"),
        at("2026-03-29T04:20:35+02:00"),
    )
    s.finish(second.run())
    assert s.next_run("hourly") == at("2026-03-29T05:00:00+02:00")
    assert [(k.reason, k.at_us) for k in s.skips] == [
        (SkipReason.MISSED, at("2026-03-29T01:00:00+01:00"))
    ]


def test_a_time_outside_a_short_window_is_missed_even_when_a_tick_is_late() -> None:
    s = scheduler()
    s.add(hourly(catch_up=CatchUp(window=timedelta(seconds=10))))
    s.tick(at("2026-03-29T03:59:50+02:00"))
    assert s.tick(at("2026-03-29T04:00:20+02:00")) == []  # 20 s late: outside 10 s
    assert s.skips[-1].reason is SkipReason.MISSED
    (ran,) = s.tick(at("2026-03-29T05:00:05+02:00"))  # 5 s late: inside
    assert ran.scheduled_at == at("2026-03-29T05:00:00+02:00")


# Berlin, 2026-10-25: clocks go back from 03:00+02:00 to 02:00+01:00. A quarter-hourly job
# runs from 01:45+02:00 for 40 minutes: 02:00+02:00 and 02:15+02:00 come while it runs.
FALL = "*/15 * * * *"


def quarterly(action: object, overlap: Overlap, **keys: object) -> Job:
    return Job("q", JobKind.USER, CronSchedule.parse(FALL), action, overlap=overlap, **keys)  # type: ignore[arg-type]


def test_buffer_one_starts_the_first_time_that_came_as_soon_as_the_run_ends() -> None:
    timer = Timer()

    def long(_context: RunContext) -> None:
        timer.now += 40 * 60

    s = scheduler(timer)
    s.add(quarterly(long, Overlap.BUFFER_ONE))
    s.tick(at("2026-10-25T01:44:00+02:00"))
    (run,) = s.start_due(at("2026-10-25T01:45:00+02:00"))
    assert s.start_due(at("2026-10-25T02:00:00+02:00")) == []  # waits: one is buffered
    assert s.start_due(at("2026-10-25T02:15:00+02:00")) == []  # one waits already: skipped
    skip = s.skips[-1]
    assert (skip.reason, skip.at_us) == (SkipReason.OVERLAP, at("2026-10-25T02:15:00+02:00"))
    s.finish(run.run())  # ends 02:25+02:00
    (waited,) = s.start_due(at("2026-10-25T02:25:05+02:00"))
    assert waited.scheduled_at == at("2026-10-25T02:00:00+02:00")
    # Its next time was planned when the waiting one started.
    assert s.state("q").next_at == at("2026-10-25T02:30:00+02:00")
    s.finish(waited.run())
    assert [(k.reason, k.at_us) for k in s.skips] == [
        (SkipReason.OVERLAP, at("2026-10-25T02:15:00+02:00"))
    ]


def test_the_default_overlap_skips_the_times_a_run_covered() -> None:
    timer = Timer()

    def long(_context: RunContext) -> None:
        timer.now += 40 * 60

    s = scheduler(timer)
    s.add(quarterly(long, Overlap.SKIP))
    s.tick(at("2026-10-25T01:44:00+02:00"))
    (run,) = s.start_due(at("2026-10-25T01:45:00+02:00"))
    assert s.state("q").next_at is None  # nothing planned while it runs, as the spec has it
    s.finish(run.run())
    assert s.start_due(at("2026-10-25T02:25:05+02:00")) == []
    assert s.skips[-1].detail == "2 times while it ran"
    assert s.next_run("q") == at("2026-10-25T02:30:00+02:00")


def test_cancel_other_cancels_the_run_under_way_and_starts_the_new_time() -> None:
    s = Scheduler("Europe/Berlin", WorkloadStats())
    started = threading.Event()

    def endless(context: RunContext) -> None:
        started.set()
        while True:
            context.check()
            time.sleep(0.005)

    s.add(quarterly(endless, Overlap.CANCEL_OTHER))
    s.tick(at("2026-10-25T02:44:00+02:00"))
    (run,) = s.start_due(at("2026-10-25T02:45:00+02:00"))
    done: list[object] = []
    worker = threading.Thread(target=lambda: done.append(run.run()))
    worker.start()
    assert started.wait(5)
    # The clocks go back at 03:00+02:00, and the repeated hour makes no second pass: the
    # next time is 03:00+01:00, 75 real minutes on.
    due = s.state("q").next_at
    assert due == at("2026-10-25T03:00:00+01:00")
    assert s.start_due(due) == []  # the run under way is cancelled; this time waits
    worker.join(5)
    (result,) = done
    assert result.outcome is Outcome.CANCELLED  # type: ignore[attr-defined]
    assert result.cancelled_by == CANCELLED_BY_OVERLAP  # type: ignore[attr-defined]
    s.finish(result)  # type: ignore[arg-type]
    (new,) = s.start_due(due + 2_000_000)
    assert new.scheduled_at == due
    new.cancel("test")
    assert new.run().outcome is Outcome.CANCELLED  # cancelled before it began: no work


def test_a_buffered_time_whose_group_is_busy_waits_and_is_never_missed() -> None:
    timer = Timer()

    def long(_context: RunContext) -> None:
        timer.now += 20 * 60

    s = scheduler(timer)
    s.add(quarterly(long, Overlap.BUFFER_ONE, group="g"))
    s.add(Job("other", JobKind.USER, CronSchedule.parse("20 2 * * *"), long, group="g"))
    s.tick(at("2026-10-25T01:59:00+02:00"))
    (run,) = s.start_due(at("2026-10-25T02:00:00+02:00"))
    assert s.start_due(at("2026-10-25T02:15:00+02:00")) == []  # buffered
    s.finish(run.run())  # ends 02:20+02:00
    # The other job of the group is due at that tick: it starts, and the buffered time
    # waits for the group (recorded group_busy), then starts when the group frees.
    (other,) = s.start_due(at("2026-10-25T02:20:00+02:00"))
    assert other.name == "other"
    assert s.state("q").waiting_since == at("2026-10-25T02:15:00+02:00")
    assert s.skips[-1].reason is SkipReason.GROUP_BUSY
    s.finish(other.run())  # ends 02:40+02:00
    (late,) = s.start_due(at("2026-10-25T02:40:05+02:00"))
    assert late.scheduled_at == at("2026-10-25T02:15:00+02:00")


def fact(result: RunResult) -> RunFact:
    return RunFact(
        id=result.token, job=result.name, scheduled=True, scheduled_at=result.scheduled_at,
        started_at=result.started_at, finished_at=result.finished_at, outcome=result.outcome,
    )  # fmt: skip


def told(job: Job, t: int, runs: list[RunFact]) -> Explanation:
    zone = ZoneInfo("Europe/Berlin")
    return explain(
        place(job.schedule, zone, t), name=job.name, now_us=t + 86_400_000_000,
        max_lateness_us=60_000_000, runs=runs,
    )  # fmt: skip


def test_explain_tells_a_time_caught_up_and_one_coalesced_into_it() -> None:
    job = hourly(catch_up=CatchUp(window=timedelta(hours=2), coalesce=Coalesce.EARLIEST))
    s = scheduler()
    s.add(job)
    s.tick(STOPPED)
    (result,) = s.tick(BACK)
    runs = [fact(result)]
    ran = told(job, at("2026-03-29T03:00:00+02:00"), runs)
    assert ran.verdict is Verdict.RAN
    assert "caught up 4800 s late after a gap" in ran.detail
    merged = told(job, at("2026-03-29T04:00:00+02:00"), runs)
    assert (merged.verdict, merged.cause) == (Verdict.SKIPPED, Cause.MISSED)
    assert "coalesced" in merged.detail
    before = told(job, at("2026-03-29T01:00:00+01:00"), runs)
    assert (before.verdict, before.cause) == (Verdict.SKIPPED, Cause.MISSED)


def test_explain_tells_a_buffered_time_waited_for_the_run_before_it() -> None:
    timer = Timer()

    def long(_context: RunContext) -> None:
        timer.now += 40 * 60

    s = scheduler(timer)
    job = quarterly(long, Overlap.BUFFER_ONE)
    s.add(job)
    s.tick(at("2026-10-25T01:44:00+02:00"))
    (run,) = s.start_due(at("2026-10-25T01:45:00+02:00"))
    s.start_due(at("2026-10-25T02:00:00+02:00"))
    s.start_due(at("2026-10-25T02:15:00+02:00"))
    first = run.run()
    s.finish(first)
    (waited,) = s.start_due(at("2026-10-25T02:25:05+02:00"))
    runs = [fact(first), fact(waited.run())]
    buffered = told(job, at("2026-10-25T02:00:00+02:00"), runs)
    assert buffered.verdict is Verdict.RAN
    assert f"for run {first.token} of it to end (its overlap policy)" in buffered.detail
    skipped = told(job, at("2026-10-25T02:15:00+02:00"), runs)
    assert (skipped.verdict, skipped.cause) == (Verdict.SKIPPED, Cause.OVERLAP)
