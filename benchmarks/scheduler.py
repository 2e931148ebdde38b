"""The cost of `Scheduler.tick`, and the memory a job takes, beside APScheduler 3.

- a tick with 100,000 jobs and nothing due (target: under 20 us), many ticks after the first
  (planning) tick;
- a tick where 1,000 of the 100,000 are due (trivial actions, run on the ticking thread), with
  and without `WorkloadStats` recording the runs;
- memory per job (tracemalloc): the `Job` with its own parsed schedule, and the scheduler's
  bookkeeping once it is planned;
- APScheduler 3 where the comparison is fair: adding the jobs and planning them (its
  `add_job` on a stopped scheduler, then `start`), memory per job, its own tick with nothing
  due (`_process_jobs`, private: APScheduler 3 offers no public tick, and reads the real
  clock), and `CronTrigger.get_next_fire_time` per call against `next_after`.

    .venv/bin/python benchmarks/scheduler.py [--jobs N] [--repeats N] [--no-apscheduler]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable
from datetime import datetime
from zoneinfo import ZoneInfo

from dgxmm.clock import to_us
from dgxmm.jobs import CronSchedule, Job, JobKind, RunContext, Scheduler, WorkloadStats

ZONE = ZoneInfo("Europe/Berlin")
NOON = datetime(2026, 1, 1, 12, 0, tzinfo=ZONE)
SECOND = 1_000_000
MINUTE = 60 * SECOND
DUE_PER_TICK = 1_000


def nothing(ctx: RunContext) -> None:
    """The trivial action."""


def idle_expr(i: int) -> str:
    """A daily time between 03:00 and 05:59: nothing of these is due from noon to 03:00."""
    return f"{i % 60} {3 + i % 3} * * *"


def make_jobs(n: int, *, due_every_minute: int = 0) -> list[Job]:
    """Build n jobs, each with a schedule object of its own; the first few fire every minute.

    `CronSchedule.parse` shares one object per text (an LRU cache); the constructor does not,
    so each job here costs what it would if every job had a different text.
    """
    return [
        Job(
            f"job-{i}",
            JobKind.USER,
            CronSchedule("* * * * *" if i < due_every_minute else idle_expr(i)),
            nothing,
        )
        for i in range(n)
    ]


def timed(fn: Callable[[], object]) -> float:
    """Run fn once with the collector off; return the seconds it took."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start
    finally:
        gc.enable()


# -- dgxmm ------------------------------------------------------------------------------------


def bench_idle_ticks(n_jobs: int, repeats: int) -> dict[str, float]:
    scheduler = Scheduler(time_zone=ZONE)
    jobs = make_jobs(n_jobs)
    add_s = timed(lambda: [scheduler.add(job) for job in jobs])
    now = to_us(NOON)
    plan_s = timed(lambda: scheduler.tick(now))  # the first tick only plans
    ticks = 10_000

    def run_ticks(start: int) -> None:
        tick = scheduler.tick
        for k in range(1, ticks + 1):
            if tick(start + k * SECOND):
                raise AssertionError("a job ran; the idle benchmark measures nothing due")

    best = min(timed(lambda r=r: run_ticks(now + r * ticks * SECOND)) for r in range(repeats))
    return {
        "add_us_per_job": add_s / n_jobs * 1e6,
        "plan_us_per_job": plan_s / n_jobs * 1e6,
        "idle_tick_us": best / ticks * 1e6,
    }


def bench_due_ticks(n_jobs: int, with_stats: bool) -> dict[str, float]:
    stats = WorkloadStats() if with_stats else None
    scheduler = Scheduler(time_zone=ZONE, stats=stats)
    for job in make_jobs(n_jobs, due_every_minute=DUE_PER_TICK):
        scheduler.add(job)
    now = to_us(NOON)
    scheduler.tick(now)
    seconds = []
    for minute in range(1, 31):
        results: list[object] = []
        at = now + minute * MINUTE
        seconds.append(timed(lambda at=at, results=results: results.extend(scheduler.tick(at))))
        if len(results) != DUE_PER_TICK:
            raise AssertionError(f"{len(results)} runs at minute {minute}, not {DUE_PER_TICK}")
    return {"best_ms": min(seconds) * 1e3, "median_ms": statistics.median(seconds) * 1e3}


def measure_memory(n_jobs: int) -> dict[str, float]:
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        schedules = [CronSchedule(idle_expr(i)) for i in range(n_jobs)]  # one object each
        with_schedules = tracemalloc.get_traced_memory()[0]
        jobs = [
            Job(f"job-{i}", JobKind.USER, schedule, nothing) for i, schedule in enumerate(schedules)
        ]
        with_jobs = tracemalloc.get_traced_memory()[0]
        scheduler = Scheduler(time_zone=ZONE)
        for job in jobs:
            scheduler.add(job)
        scheduler.tick(to_us(NOON))
        planned = tracemalloc.get_traced_memory()[0]
        # The same jobs built the usual way: parse() shares one schedule per text (180 here).
        before_shared = tracemalloc.get_traced_memory()[0]
        shared_jobs = [
            Job(f"job-{i}", JobKind.USER, CronSchedule.parse(idle_expr(i)), nothing)
            for i in range(n_jobs)
        ]
        with_shared = tracemalloc.get_traced_memory()[0]
        del shared_jobs
    finally:
        tracemalloc.stop()
    return {
        "schedule_bytes": (with_schedules - base) / n_jobs,
        "job_bytes": (with_jobs - base) / n_jobs,
        "shared_job_bytes": (with_shared - before_shared) / n_jobs,
        "scheduler_bytes": (planned - with_jobs) / n_jobs,
    }


# -- APScheduler 3 ----------------------------------------------------------------------------


def aps_idle_hour() -> int:
    """An hour of the day, in the zone, 12 hours from the real clock: APScheduler reads it."""
    return (datetime.now(ZONE).hour + 12) % 24


def aps_build(n_jobs: int) -> tuple[object, float, float]:
    from apscheduler.schedulers.background import BackgroundScheduler
    from apscheduler.triggers.cron import CronTrigger

    hour = aps_idle_hour()
    scheduler = BackgroundScheduler(timezone=ZONE)
    triggers = [
        CronTrigger.from_crontab(f"{i % 60} {hour} * * *", timezone=ZONE) for i in range(n_jobs)
    ]
    add_s = timed(
        lambda: [
            scheduler.add_job(nothing, triggers[i], id=f"job-{i}", args=(None,))
            for i in range(n_jobs)
        ]
    )
    plan_s = timed(scheduler.start)  # computes each job's next time, fills the job store
    return scheduler, add_s, plan_s


def bench_aps(n_jobs: int, repeats: int) -> dict[str, float]:
    scheduler, add_s, plan_s = aps_build(n_jobs)
    try:
        process = scheduler._process_jobs  # type: ignore[attr-defined]
        ticks = 10_000

        def run_ticks() -> None:
            for _ in range(ticks):
                process()

        best = min(timed(run_ticks) for _ in range(repeats))
    finally:
        scheduler.shutdown(wait=False)  # type: ignore[attr-defined]
    return {
        "add_us_per_job": add_s / n_jobs * 1e6,
        "plan_us_per_job": plan_s / n_jobs * 1e6,
        "idle_tick_us": best / ticks * 1e6,
    }


def aps_memory(n_jobs: int) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        scheduler, _, _ = aps_build(n_jobs)
        planned = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    scheduler.shutdown(wait=False)  # type: ignore[attr-defined]
    return (planned - base) / n_jobs


def bench_triggers(repeats: int) -> list[tuple[str, float, float, str | None]]:
    """Microseconds per next time: successive, from 2026-01-01, dgxmm against APScheduler 3."""
    from apscheduler.triggers.cron import CronTrigger

    rows = []
    for expr, fires in (("*/5 * * * *", 30_000), ("0 3 * * *", 1_500), ("0 0 1-7 * 1", 2_000)):
        schedule = CronSchedule.parse(expr)
        trigger = CronTrigger.from_crontab(expr, timezone=ZONE)

        def ours(schedule: CronSchedule = schedule, fires: int = fires) -> list[int]:
            t, out = to_us(datetime(2026, 1, 1, tzinfo=ZONE)), []
            for _ in range(fires):
                t = schedule.next_after(t, ZONE)
                out.append(t)
            return out

        def theirs(trigger: CronTrigger = trigger, fires: int = fires) -> list[int]:
            t, out = datetime(2026, 1, 1, tzinfo=ZONE), []
            for _ in range(fires):
                t = trigger.get_next_fire_time(t, t)
                out.append(to_us(t))
            return out

        ours_us = min(timed(ours) for _ in range(repeats)) / fires * 1e6
        theirs_us = min(timed(theirs) for _ in range(repeats)) / fires * 1e6
        a, b = ours(), theirs()
        differ = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        note = None
        if differ:
            i = differ[0]
            note = (
                f"WARNING {expr!r}: APScheduler 3 differs from dgxmm at {len(differ)} of {fires} "
                f"fire times; first #{i}: dgxmm {datetime.fromtimestamp(a[i] / 1e6, ZONE)}, "
                f"APScheduler {datetime.fromtimestamp(b[i] / 1e6, ZONE)}"
            )
        rows.append((expr, ours_us, theirs_us, note))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-apscheduler", action="store_true", help="dgxmm only")
    args = parser.parse_args()
    n = args.jobs

    idle = bench_idle_ticks(n, args.repeats)
    due = bench_due_ticks(n, with_stats=False)
    due_stats = bench_due_ticks(n, with_stats=True)
    memory = measure_memory(n)
    print(f"Scheduler in {ZONE.key}, {n:,} jobs, best of {args.repeats} where repeated")
    print(f"  tick, nothing due           {idle['idle_tick_us']:10.2f} us   (target < 20 us)")
    print(
        f"  tick, {DUE_PER_TICK:,} due               {due['best_ms']:10.2f} ms   best of 30 "
        f"(median {due['median_ms']:.2f} ms; {due['best_ms'] / DUE_PER_TICK * 1e3:.1f} us a run)"
    )
    print(
        f"  tick, {DUE_PER_TICK:,} due, with stats    {due_stats['best_ms']:10.2f} ms   best of 30 "
        f"(median {due_stats['median_ms']:.2f} ms; "
        f"{due_stats['best_ms'] / DUE_PER_TICK * 1e3:.1f} us a run)"
    )
    print(f"  add, per job                {idle['add_us_per_job']:10.2f} us")
    print(f"  first tick (plan), per job  {idle['plan_us_per_job']:10.2f} us")
    print(f"  memory: Job + own schedule  {memory['job_bytes']:10.0f} B a job")
    print(f"    of which the schedule     {memory['schedule_bytes']:10.0f} B")
    print(f"  memory: Job, parse() shared {memory['shared_job_bytes']:10.0f} B a job (180 texts)")
    print(f"  memory: scheduler, planned  {memory['scheduler_bytes']:10.0f} B a job")
    if args.no_apscheduler:
        return

    aps = bench_aps(n, args.repeats)
    aps_bytes = aps_memory(n)
    ours_bytes = memory["job_bytes"] + memory["scheduler_bytes"]
    print()
    print(f"Beside APScheduler 3 (BackgroundScheduler, MemoryJobStore), {n:,} jobs")
    print(f"  {'':<34}{'dgxmm':>10}{'APScheduler':>13}{'dgxmm/APS':>11}")
    for label, ours_value, theirs_value, unit in (
        ("add, per job", idle["add_us_per_job"], aps["add_us_per_job"], "us"),
        (
            "plan (first tick / start), per job",
            idle["plan_us_per_job"],
            aps["plan_us_per_job"],
            "us",
        ),
        (
            "add + plan, per job",
            idle["add_us_per_job"] + idle["plan_us_per_job"],
            aps["add_us_per_job"] + aps["plan_us_per_job"],
            "us",
        ),
        ("tick, nothing due", idle["idle_tick_us"], aps["idle_tick_us"], "us"),
        ("memory per job, planned", ours_bytes, aps_bytes, "B"),
    ):
        print(
            f"  {label:<34}{ours_value:>8.2f}{unit}{theirs_value:>11.2f}{unit}"
            f"{ours_value / theirs_value:>11.3f}"
        )
    print()
    print("next fire time per call, Europe/Berlin, successive from 2026-01-01")
    print(f"  {'expression':<14}{'dgxmm us':>10}{'CronTrigger us':>16}{'dgxmm/APS':>11}")
    notes = []
    for expr, ours_us, theirs_us, note in bench_triggers(args.repeats):
        print(f"  {expr:<14}{ours_us:>10.2f}{theirs_us:>16.2f}{ours_us / theirs_us:>11.3f}")
        if note:
            notes.append(note)
    print()
    print(
        "\n".join(notes) if notes else "APScheduler 3's CronTrigger produced the same fire times."
    )


if __name__ == "__main__":
    main()
