"""The host claims each run in the store's job_runs before it starts it, and records its end."""

from __future__ import annotations

from pathlib import Path

from support import at

from dgxmm.clock import ManualClock
from dgxmm.jobs import CronSchedule, Job, JobKind, Outcome, SkipReason
from dgxmm.server import Host
from dgxmm.store import Store, Trigger


def counting_job(ran: list[str], label: str) -> Job:
    return Job("tally", JobKind.SYSTEM, CronSchedule.parse("* * * * *"),
               lambda _ctx: ran.append(label))  # fmt: skip


def test_two_hosts_on_one_database_run_each_minute_once(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    # The found defect: two servers on one database both ran the same minute.
    assert store.path is not None
    other = Store.open(store.path, clock=clock)
    ran: list[str] = []
    first = Host(store, time_zone="UTC", clock=clock, system_jobs=[counting_job(ran, "first")])
    second = Host(other, time_zone="UTC", clock=clock, system_jobs=[counting_job(ran, "second")])
    try:
        first.tick()
        second.tick()
        for minute in ("10:01", "10:02", "10:03"):
            clock.set(at(f"2026-06-01T{minute}:00+02:00"))
            first.tick()
            first.wait_idle()  # ended: the second is refused for the claim, not a run under way
            second.tick()
            second.wait_idle()
        assert sorted(ran) == ["first", "first", "first"]
        rows = [r for r in store.runs.page() if r.job == "tally"]
        assert [(r.trigger, r.instance, r.outcome) for r in rows] == [
            (Trigger.SCHEDULE, store.instance, Outcome.SUCCEEDED)
        ] * 3
        skips = other.workload_stats.skips("tally")
        assert skips == {SkipReason.CLAIMED: 3}
        assert second.scheduler.next_run("tally") == at("2026-06-01T10:04:00+02:00")
    finally:
        first.stop()
        second.stop()
        other.close()


def test_it_records_a_run_now_with_its_trigger_and_end(store: Store, clock: ManualClock) -> None:
    host = Host(store, time_zone="UTC", clock=clock)
    host.tick()
    result = host.run_now("stats_flush")
    (row,) = [r for r in store.runs.page() if r.job == "stats_flush"]
    assert (row.trigger, row.outcome) == (Trigger.MANUAL, Outcome.SUCCEEDED)
    assert row.result == result.detail
    assert row.finished_at == result.finished_at
    host.stop()
