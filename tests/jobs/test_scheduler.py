"""The scheduler's rules, each with a manual clock (instants) and a manual timer (durations)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from support import at

from dgxmm.errors import Abandoned, Busy, Conflict, NotFound
from dgxmm.jobs import (
    CronSchedule,
    Job,
    JobKind,
    JobLimits,
    Outcome,
    RunContext,
    Scheduler,
    SkipReason,
    WorkloadStats,
)

MINUTE = 60_000_000
SECOND = 1_000_000


class Timer:
    """A monotonic timer the test moves by hand (seconds)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Recorder:
    """An action that remembers every context it ran with."""

    def __init__(self, effect: object = None) -> None:
        self.contexts: list[RunContext] = []
        self.effect = effect

    def __call__(self, context: RunContext) -> object:
        self.contexts.append(context)
        if callable(self.effect):
            return self.effect(context)
        return None

    @property
    def count(self) -> int:
        return len(self.contexts)


def job(name: str, schedule: str, action: object, **keys: object) -> Job:
    kind = keys.pop("kind", JobKind.USER)
    return Job(name, kind, CronSchedule.parse(schedule), action, **keys)  # type: ignore[arg-type]


def make(timer: Timer | None = None, **keys: object) -> Scheduler:
    return Scheduler("Europe/Berlin", WorkloadStats(), timer=timer or Timer(), **keys)  # type: ignore[arg-type]


T0 = at("2026-06-01T10:00:30+02:00")


def test_it_only_plans_on_the_first_tick() -> None:
    action = Recorder()
    scheduler = make()
    scheduler.add(job("every_minute", "* * * * *", action))
    assert scheduler.next_run("every_minute") is None
    assert scheduler.tick(T0) == []
    assert action.count == 0
    assert scheduler.next_run("every_minute") == at("2026-06-01T10:01:00+02:00")
    results = scheduler.tick(at("2026-06-01T10:01:02+02:00"))
    assert [r.outcome for r in results] == [Outcome.SUCCEEDED]
    assert action.contexts[0].scheduled_at == at("2026-06-01T10:01:00+02:00")
    assert action.contexts[0].started_at == at("2026-06-01T10:01:02+02:00")
    assert scheduler.next_run("every_minute") == at("2026-06-01T10:02:00+02:00")


def test_it_never_overlaps_a_job_with_itself() -> None:
    timer = Timer()

    def slow(context: RunContext) -> None:
        timer.now += 200  # the run takes 200 s: 10:01:00 to 10:04:20

    scheduler = make(timer)
    scheduler.add(job("slow", "* * * * *", slow))
    scheduler.tick(T0)
    (run,) = scheduler.start_due(at("2026-06-01T10:01:00+02:00"))
    # While it runs, three more of its times pass: nothing else starts.
    for minute in (2, 3, 4):
        assert scheduler.start_due(at(f"2026-06-01T10:0{minute}:00+02:00")) == []
    assert scheduler.state("slow").run is run
    scheduler.finish(run.run())
    # Its next time is after the instant it finished; the times it ran over are one skip.
    assert scheduler.next_run("slow") == at("2026-06-01T10:05:00+02:00")
    skip = scheduler.skips[-1]
    assert skip.reason is SkipReason.OVERLAP
    assert skip.at_us == at("2026-06-01T10:02:00+02:00")
    assert skip.detail == "3 times while it ran"


def test_it_skips_times_missed_while_nothing_ticked_without_a_burst() -> None:
    action = Recorder()
    scheduler = make()
    scheduler.add(job("hourly", "0 * * * *", action))
    scheduler.tick(T0)  # plans 11:00
    # The host was stopped from 10:00 until 13:20: three times passed, none runs late.
    assert scheduler.tick(at("2026-06-01T13:20:00+02:00")) == []
    assert action.count == 0
    assert scheduler.next_run("hourly") == at("2026-06-01T14:00:00+02:00")
    skip = scheduler.skips[-1]
    assert (skip.reason, skip.at_us) == (SkipReason.MISSED, at("2026-06-01T11:00:00+02:00"))
    scheduler.tick(at("2026-06-01T14:00:03+02:00"))
    assert action.count == 1


def test_it_runs_a_time_reached_within_the_lateness_allowed() -> None:
    action = Recorder()
    scheduler = make(max_lateness=timedelta(seconds=30))
    scheduler.add(job("hourly", "0 * * * *", action))
    scheduler.tick(T0)
    scheduler.tick(at("2026-06-01T11:00:30+02:00"))  # exactly 30 s late: still runs
    assert action.count == 1
    scheduler.tick(at("2026-06-01T12:00:31+02:00"))  # 31 s late: missed
    assert action.count == 1
    assert scheduler.skips[-1].reason is SkipReason.MISSED


def test_it_records_a_failing_job_and_runs_it_again_at_its_next_time() -> None:
    def fail(context: RunContext) -> None:
        raise RuntimeError("disk on fire")

    stats = WorkloadStats()
    scheduler = Scheduler("UTC", stats, timer=Timer())
    scheduler.add(job("flaky", "*/5 * * * *", fail))
    scheduler.tick(at("2026-06-01T10:00:30+00:00"))
    (result,) = scheduler.tick(at("2026-06-01T10:05:00+00:00"))
    assert result.outcome is Outcome.FAILED
    assert result.error == "RuntimeError: disk on fire"
    last = stats.last_run("flaky")
    assert last is not None
    assert last.error == "RuntimeError: disk on fire"
    assert scheduler.next_run("flaky") == at("2026-06-01T10:10:00+00:00")
    (again,) = scheduler.tick(at("2026-06-01T10:10:01+00:00"))
    assert again.outcome is Outcome.FAILED


class Panic(BaseException):
    """A panic-like error: not an Exception (as a Rust extension's PanicException is not)."""


@pytest.mark.parametrize(
    "raised",
    [SystemExit(3), Panic("the extension panicked"), GeneratorExit()],
    ids=["system-exit", "panic", "generator-exit"],
)
def test_it_records_a_base_exception_as_failed_and_runs_the_job_again(
    raised: BaseException,
) -> None:
    def die(context: RunContext) -> None:
        raise raised

    scheduler = Scheduler("UTC", WorkloadStats(), timer=Timer())
    scheduler.add(job("odd", "*/5 * * * *", die, group="g"))
    scheduler.tick(at("2026-06-01T10:00:30+00:00"))
    (result,) = scheduler.tick(at("2026-06-01T10:05:00+00:00"))
    assert result.outcome is Outcome.FAILED
    assert (result.error or "").startswith(type(raised).__name__)
    assert scheduler.running() == []  # its group is free
    (again,) = scheduler.tick(at("2026-06-01T10:10:01+00:00"))
    assert again.outcome is Outcome.FAILED


def test_it_lets_a_keyboard_interrupt_through() -> None:
    def interrupted(context: RunContext) -> None:
        raise KeyboardInterrupt

    scheduler = Scheduler("UTC", WorkloadStats(), timer=Timer())
    scheduler.add(job("ctrl_c", "*/5 * * * *", interrupted))
    scheduler.tick(at("2026-06-01T10:00:30+00:00"))
    with pytest.raises(KeyboardInterrupt):
        scheduler.tick(at("2026-06-01T10:05:00+00:00"))


def test_it_makes_a_job_wait_for_its_group_and_run_once() -> None:
    timer = Timer()
    backup, checkpoint = Recorder(), Recorder()
    scheduler = make(timer)
    scheduler.add(job("backup", "0 * * * *", backup, group="store"))
    scheduler.add(job("checkpoint", "*/10 * * * *", checkpoint, group="store"))
    scheduler.tick(at("2026-06-01T09:59:00+02:00"))
    runs = scheduler.start_due(at("2026-06-01T10:00:00+02:00"))
    assert [r.name for r in runs] == ["backup"]  # both due; the group lets one through
    assert scheduler.skips[-1].reason is SkipReason.GROUP_BUSY
    assert scheduler.state("checkpoint").waiting_since == at("2026-06-01T10:00:00+02:00")
    # The backup runs 25 minutes; checkpoint's 10:10 and 10:20 pass while it waits.
    assert scheduler.start_due(at("2026-06-01T10:15:00+02:00")) == []
    scheduler.finish(runs[0].run())
    (late,) = scheduler.start_due(at("2026-06-01T10:25:05+02:00"))
    assert late.name == "checkpoint"
    assert late.scheduled_at == at("2026-06-01T10:00:00+02:00")  # its time was not missed
    scheduler.finish(late.run())
    assert checkpoint.count == 1  # once, although three of its times passed
    assert scheduler.next_run("checkpoint") == at("2026-06-01T10:30:00+02:00")


def test_it_lets_jobs_of_other_groups_run_beside_each_other() -> None:
    scheduler = make()
    scheduler.add(job("a", "* * * * *", Recorder(), group="query"))
    scheduler.add(job("b", "* * * * *", Recorder(), group="backup"))
    scheduler.add(job("c", "* * * * *", Recorder()))
    scheduler.tick(T0)
    runs = scheduler.start_due(at("2026-06-01T10:01:00+02:00"))
    assert sorted(r.name for r in runs) == ["a", "b", "c"]


def test_it_refuses_start_now_while_the_job_or_its_group_runs() -> None:
    scheduler = make()
    scheduler.add(job("a", "0 0 * * *", Recorder(), group="query"))
    scheduler.add(job("b", "0 0 * * *", Recorder(), group="query"))
    scheduler.add(job("c", "0 0 * * *", Recorder()))
    scheduler.tick(T0)
    run = scheduler.start_now("a", T0 + SECOND)
    with pytest.raises(Busy, match="job a is running"):
        scheduler.start_now("a", T0 + 2 * SECOND)
    with pytest.raises(Busy, match="job a of group query is running"):
        scheduler.start_now("b", T0 + 2 * SECOND)
    scheduler.start_now("c", T0 + 2 * SECOND)  # another group: fine
    scheduler.finish(run.run())
    scheduler.start_now("b", T0 + 3 * SECOND)


def test_it_runs_now_whatever_the_schedule_and_keeps_the_next_time() -> None:
    action = Recorder()
    scheduler = make()
    scheduler.add(job("nightly", "0 3 * * *", action))
    scheduler.tick(T0)
    planned = scheduler.next_run("nightly")
    run = scheduler.start_now("nightly", T0 + SECOND)
    assert run.scheduled_at == T0 + SECOND
    scheduler.finish(run.run())
    assert action.count == 1
    assert scheduler.next_run("nightly") == planned == at("2026-06-02T03:00:00+02:00")


def test_it_does_not_run_a_disabled_job_and_records_why() -> None:
    action = Recorder()
    scheduler = make()
    scheduler.add(job("off", "* * * * *", action, enabled=False))
    scheduler.tick(T0)
    assert scheduler.next_run("off") is None  # off: no next time to show
    scheduler.tick(at("2026-06-01T10:01:00+02:00"))
    assert action.count == 0
    assert scheduler.skips[-1].reason is SkipReason.DISABLED
    scheduler.set_enabled("off", True)
    scheduler.tick(at("2026-06-01T10:02:00+02:00"))
    assert action.count == 1


def test_it_records_a_run_that_finishes_past_its_timeout_as_over_time() -> None:
    timer = Timer()

    def long(context: RunContext) -> None:
        timer.now += 12

    scheduler = make(timer)
    scheduler.add(job("long", "* * * * *", long, limits=JobLimits(timeout=timedelta(seconds=10))))
    scheduler.tick(T0)
    (result,) = scheduler.tick(at("2026-06-01T10:01:00+02:00"))
    assert result.outcome is Outcome.OVER_TIME
    assert result.duration_us == 12 * SECOND
    assert result.error is not None
    assert "past its timeout of 10 s" in result.error


def test_it_records_a_run_stopped_by_its_timeout_as_failed_with_the_reason() -> None:
    timer = Timer()

    def careful(context: RunContext) -> None:
        context.check()
        timer.now += 11
        context.check()  # the second check finds the timeout passed
        raise AssertionError("not reached")

    scheduler = make(timer)
    scheduler.add(
        job("careful", "* * * * *", careful, limits=JobLimits(timeout=timedelta(seconds=10)))
    )
    scheduler.tick(T0)
    (result,) = scheduler.tick(at("2026-06-01T10:01:00+02:00"))
    assert result.outcome is Outcome.FAILED
    assert result.error is not None
    assert result.error.startswith("TimeoutExceeded: job careful: timeout of 10 s passed")


def test_it_records_a_run_stopped_by_its_memory_limit_as_failed_with_the_reason() -> None:
    def hungry(context: RunContext) -> None:
        context.charge(600)
        context.release(500)
        context.charge(800)  # 900 live: within 1000
        assert context.live_bytes == 900
        context.charge(200)  # 1100 live: over

    scheduler = make()
    scheduler.add(job("hungry", "* * * * *", hungry, limits=JobLimits(memory_bytes=1000)))
    scheduler.tick(T0)
    (result,) = scheduler.tick(at("2026-06-01T10:01:00+02:00"))
    assert result.outcome is Outcome.FAILED
    assert result.error == (
        "MemoryLimitExceeded: job hungry: memory limit of 1000 bytes passed (1100 bytes live)"
    )


def test_it_gives_the_action_its_context() -> None:
    action = Recorder(effect=lambda context: "42 rows")
    limits = JobLimits(timeout=timedelta(seconds=30), memory_bytes=1 << 20)
    scheduler = make()
    scheduler.add(job("ctx", "* * * * *", action, limits=limits))
    scheduler.tick(T0)
    (result,) = scheduler.tick(at("2026-06-01T10:01:05+02:00"))
    context = action.contexts[0]
    assert context.name == "ctx"
    assert context.limits == limits
    assert context.remaining() == 30.0
    assert result.detail == "42 rows"


def test_it_abandons_a_run_as_failed_with_the_reason() -> None:
    stats = WorkloadStats()
    scheduler = Scheduler("UTC", stats, timer=Timer())
    scheduler.add(job("x", "* * * * *", Recorder(), group="g"))
    scheduler.tick(T0)
    (run,) = scheduler.start_due(T0 + MINUTE)
    result = run.abandon("no worker thread")
    assert (result.outcome, result.error) == (Outcome.FAILED, "abandoned: no worker thread")
    scheduler.finish(result)
    assert not scheduler.is_group_busy("g")
    with pytest.raises(Conflict, match="already used"):
        run.run()
    with pytest.raises(Conflict, match="not under way"):
        scheduler.finish(result)


def test_it_syncs_user_jobs_and_leaves_system_jobs_and_runs_alone() -> None:
    scheduler = make()
    scheduler.add(job("stats_flush", "* * * * *", Recorder(), kind=JobKind.SYSTEM))
    scheduler.add(job("keep", "0 3 * * *", Recorder()))
    scheduler.add(job("change", "0 3 * * *", Recorder()))
    scheduler.add(job("drop", "* * * * *", Recorder()))
    scheduler.add(job("running", "* * * * *", Recorder()))
    scheduler.tick(T0)
    run = scheduler.start_now("running", T0 + SECOND)
    kept_time = scheduler.next_run("keep")
    scheduler.sync_user_jobs(
        [
            job("keep", "0 3 * * *", Recorder()),
            job("change", "0 4 * * *", Recorder()),
            job("new", "0 5 * * *", Recorder()),
        ]
    )
    assert [j.name for j in scheduler.jobs()] == ["stats_flush", "change", "keep", "new"]
    assert scheduler.next_run("keep") == kept_time
    assert scheduler.running() == [run]  # the dropped job's run goes on
    scheduler.tick(T0 + 2 * SECOND)
    assert scheduler.next_run("change") == at("2026-06-02T04:00:00+02:00")
    assert scheduler.next_run("new") == at("2026-06-02T05:00:00+02:00")
    scheduler.finish(run.run())  # recorded, though the job is gone
    assert scheduler.stats is not None
    assert scheduler.stats.last_run("running") is not None


def test_it_does_not_start_a_job_added_again_while_its_old_run_goes_on() -> None:
    scheduler = make()
    scheduler.add(job("x", "* * * * *", Recorder()))
    scheduler.tick(T0)
    run = scheduler.start_now("x", T0 + SECOND)
    scheduler.sync_user_jobs([])
    scheduler.sync_user_jobs([job("x", "* * * * *", Recorder())])
    assert scheduler.start_due(at("2026-06-01T10:01:00+02:00")) == []
    scheduler.finish(run.run())
    assert scheduler.next_run("x") == at("2026-06-01T10:01:00+02:00")


def test_it_keeps_a_system_jobs_overrides_in_the_stats() -> None:
    stats = WorkloadStats()
    scheduler = Scheduler("UTC", stats, timer=Timer())
    scheduler.add(job("compact", "0 3 * * *", Recorder(), kind=JobKind.SYSTEM, enabled=False))
    scheduler.set_schedule("compact", CronSchedule.parse("30 4 * * *"))
    scheduler.set_enabled("compact", True)
    override = stats.job_override("compact")
    assert override is not None
    assert (override.schedule, override.enabled) == ("30 4 * * *", True)
    # A new scheduler (a restart) applies the overrides to the built-in job.
    again = Scheduler("UTC", WorkloadStats.from_json(stats.to_json()), timer=Timer())
    again.add(job("compact", "0 3 * * *", Recorder(), kind=JobKind.SYSTEM, enabled=False))
    assert str(again.get("compact").schedule) == "30 4 * * *"
    assert again.get("compact").enabled
    again.set_schedule("compact", None)  # empty: the built-in schedule again
    again.set_enabled("compact", False)
    assert str(again.get("compact").schedule) == "0 3 * * *"
    assert again.stats is not None
    assert again.stats.job_override("compact") is None


def test_it_refuses_what_makes_no_sense() -> None:
    scheduler = make()
    scheduler.add(job("sys", "* * * * *", Recorder(), kind=JobKind.SYSTEM))
    scheduler.add(job("user", "* * * * *", Recorder()))
    with pytest.raises(Conflict, match="already exists"):
        scheduler.add(job("user", "* * * * *", Recorder()))
    with pytest.raises(Conflict, match="cannot be removed"):
        scheduler.remove("sys")
    with pytest.raises(NotFound, match="no job named 'ghost'"):
        scheduler.remove("ghost")
    with pytest.raises(Conflict, match="no built-in schedule"):
        scheduler.set_schedule("user", None)
    with pytest.raises(Conflict, match="a system job has that name"):
        scheduler.sync_user_jobs([job("sys", "* * * * *", Recorder())])
    with pytest.raises(TypeError, match="integer microseconds"):
        scheduler.tick(1.5)  # type: ignore[arg-type]


def test_it_plans_a_job_added_between_ticks_from_the_previous_tick() -> None:
    action = Recorder()
    scheduler = make()
    scheduler.tick(at("2026-06-01T10:00:58+02:00"))
    scheduler.add(job("late", "1 10 * * *", action))  # added at 10:00:59, due 10:01
    scheduler.tick(at("2026-06-01T10:01:03+02:00"))
    assert action.count == 1


def test_it_abandons_a_run_under_way_and_the_action_sees_it_at_its_next_check() -> None:
    entered, proceed = threading.Event(), threading.Event()
    seen: list[BaseException] = []

    def cooperative(context: RunContext) -> None:
        entered.set()
        proceed.wait(timeout=30)
        assert context.remaining() == 0.0  # no time left once given up, even without a timeout
        try:
            context.check()
        except Abandoned as error:
            seen.append(error)
            raise

    scheduler = make()
    scheduler.add(job("coop", "0 0 * * *", cooperative))
    scheduler.tick(T0)
    run = scheduler.start_now("coop", T0 + SECOND)
    late: list[object] = []
    worker = threading.Thread(target=lambda: late.append(run.run()))
    worker.start()
    assert entered.wait(timeout=30)
    given_up = run.abandon("server stopped")
    assert (given_up.outcome, given_up.error) == (Outcome.FAILED, "abandoned: server stopped")
    scheduler.finish(given_up)
    proceed.set()
    worker.join(timeout=30)
    assert str(seen[0]) == "job coop: abandoned: server stopped"
    assert run.is_abandoned
    with pytest.raises(Conflict, match="already abandoned"):
        run.abandon("again")


def test_it_forgoes_a_run_another_process_claimed_without_counting_it() -> None:
    action = Recorder()
    scheduler = make()
    scheduler.add(job("a", "* * * * *", action, group="g"))
    scheduler.add(job("b", "0 4 * * *", Recorder(), group="g"))
    scheduler.tick(T0)
    (run,) = scheduler.start_due(at("2026-06-01T10:01:00+02:00"))
    assert scheduler.is_group_busy("g")
    scheduler.forgo(run, at("2026-06-01T10:01:00.2+02:00"), "another instance claimed it")
    assert not scheduler.is_group_busy("g")
    assert scheduler.running() == []
    assert action.count == 0
    assert scheduler.next_run("a") == at("2026-06-01T10:02:00+02:00")
    skip = scheduler.skips[-1]
    assert (skip.reason, skip.at_us, skip.detail) == (
        SkipReason.CLAIMED,
        at("2026-06-01T10:01:00+02:00"),
        "another instance claimed it",
    )
    assert scheduler.stats is not None
    assert scheduler.stats.last_run("a") is None
    with pytest.raises(Conflict):
        scheduler.forgo(run, at("2026-06-01T10:01:01+02:00"))


def test_it_names_its_system_jobs_in_the_order_added_as_user_jobs_come_and_go() -> None:
    scheduler = Scheduler("UTC", WorkloadStats(), timer=Timer())
    schedule = CronSchedule.parse("0 3 * * *")

    def job(name: str, kind: JobKind) -> Job:
        return Job(name, kind, schedule, lambda _context: None)

    scheduler.add(job("zeta", JobKind.SYSTEM))
    scheduler.add(job("mine", JobKind.USER))
    scheduler.add(job("alpha", JobKind.SYSTEM))
    scheduler.sync_user_jobs([job("other", JobKind.USER)])  # "mine" goes
    scheduler.replace(job("zeta", JobKind.SYSTEM))
    with pytest.raises(Conflict):
        scheduler.remove("alpha")
    assert scheduler.system_names() == ["zeta", "alpha"]
    assert [j.name for j in scheduler.jobs()] == ["zeta", "alpha", "other"]
