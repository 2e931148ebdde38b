"""A group drains within its minute: when a run ends, the host starts its group's next one."""

from __future__ import annotations

from support import at, wait_for

from dgxmm.clock import ManualClock
from dgxmm.jobs import Outcome, SkipReason
from dgxmm.server import Host
from dgxmm.store import RunRecord, Store

JOBS = 100
# A query of some tens of milliseconds: counted up to by a recursive CTE.
SLOW_QUERY = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50000) "
    "SELECT count(*) AS n FROM c"
)


def test_it_runs_every_query_job_due_in_one_minute_within_it(
    store: Store, clock: ManualClock
) -> None:
    store.define_query("slow", None, SLOW_QUERY)
    for i in range(JOBS):  # every query job is of one group, "query"
        store.define_job(name=f"q{i:03}", schedule="1 10 * * *", action="query", query="slow")
    # A tick an hour apart: only a run's end can start the next one of the group.
    host = Host(store, time_zone="Europe/Berlin", clock=clock, tick_seconds=3600)
    host.start()  # plans
    try:
        due = at("2026-06-01T10:01:00+02:00")
        clock.set(due)
        started = [run.name for run in host.tick() if run.name.startswith("q")]
        assert len(started) == 1  # the minute's tick: one runs, 99 wait for their group
        runs = wait_for(lambda: _finished_queries(store), f"{JOBS} query runs to finish")
        assert clock.now_us() == due  # the manual clock never moved: all within the minute
        assert {run.outcome for run in runs} == {Outcome.SUCCEEDED}
        assert {run.scheduled_at for run in runs} == {due}  # lateness counts from the time
        skips = {skip.reason for skip in host.scheduler.skips}
        assert skips <= {SkipReason.GROUP_BUSY}  # they waited; none was missed
    finally:
        host.stop()


def _finished_queries(store: Store) -> list[RunRecord] | None:
    runs = [run for run in store.runs.page(limit=2 * JOBS) if run.job.startswith("q")]
    done = len(runs) == JOBS and all(run.outcome is not None for run in runs)
    return runs if done else None
