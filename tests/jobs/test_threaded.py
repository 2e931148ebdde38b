"""The two-phase form: runs on worker threads while the host's thread keeps ticking."""

from __future__ import annotations

import queue
import threading
from concurrent.futures import ThreadPoolExecutor

from support import at

from dgxmm.jobs import (
    CronSchedule,
    Job,
    JobKind,
    JobRun,
    Outcome,
    RunContext,
    RunResult,
    Scheduler,
    WorkloadStats,
)

MINUTE = 60_000_000


def test_it_runs_jobs_on_workers_while_the_host_keeps_ticking() -> None:
    release = threading.Event()
    entered = threading.Event()
    ran_on: list[str] = []

    def blocking(context: RunContext) -> str:
        ran_on.append(threading.current_thread().name)
        entered.set()
        # Waits until the host has ticked on meanwhile: proof that it was not blocked.
        assert release.wait(timeout=30), "the host stopped ticking while the job ran"
        return "done"

    quick_runs: list[int] = []

    def quick(context: RunContext) -> None:
        quick_runs.append(context.scheduled_at)

    stats = WorkloadStats()
    scheduler = Scheduler("Europe/Berlin", stats)
    scheduler.add(
        Job("blocking", JobKind.USER, CronSchedule.parse("0 * * * *"), blocking, group="q")
    )
    scheduler.add(Job("quick", JobKind.USER, CronSchedule.parse("* * * * *"), quick))
    finished: queue.Queue[RunResult] = queue.Queue()
    now = at("2026-06-01T09:59:30+02:00")
    host = threading.current_thread().name
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="job") as workers:

        def work(run: JobRun) -> None:
            finished.put(run.run())

        done: list[str] = []

        def tick(now: int) -> list[str]:
            """One host tick: take finished runs back, hand due runs to workers."""
            while not finished.empty():
                # Noted as done too: a run taken back here is one wait_for need not wait for
                # (the blocking job's end, landing between two ticks, was lost and waited 30 s).
                result = finished.get_nowait()
                scheduler.finish(result)
                done.append(result.name)
            started = scheduler.start_due(now)
            for run in started:
                workers.submit(work, run)
            return [run.name for run in started]

        def wait_for(name: str) -> None:
            """Block until a run of ``name`` has finished, taking back whatever finishes."""
            while name not in done:
                result = finished.get(timeout=30)
                scheduler.finish(result)
                done.append(result.name)
            done.remove(name)

        tick(now)  # plans
        ticks_while_blocked = 0
        for _ in range(12):  # twelve minutes of ticks, one a minute
            now += MINUTE
            if "quick" in tick(now):
                wait_for("quick")
            if entered.is_set() and not release.is_set():
                ticks_while_blocked += 1
                if ticks_while_blocked == 5:
                    release.set()
        release.set()
        wait_for("blocking")

    assert ticks_while_blocked == 5
    assert ran_on[0] != host
    assert ran_on[0].startswith("job")
    last = stats.last_run("blocking")
    assert last is not None
    assert (last.outcome, last.detail) == (Outcome.SUCCEEDED, "done")
    # The quick job kept its every-minute rhythm beside the blocked one.
    assert len(quick_runs) == 12
    assert scheduler.running() == []
