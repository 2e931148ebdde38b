"""``Store.explain_time``: each cause told from the store's own records, on both databases.

The runs are written the way a host writes them (claimed, then finished) at literal instants;
the switches are the catalog's own journal. No scheduler's skip records are given: what is
told comes from the store alone, as ``dgxmm jobs explain --offline`` tells it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from support import at

from dgxmm.clock import ManualClock
from dgxmm.jobs import (
    Cause,
    CronSchedule,
    Explanation,
    Job,
    JobKind,
    JobRun,
    Outcome,
    RunResult,
    Verdict,
)
from dgxmm.store import Store, Trigger

BERLIN = ZoneInfo("Europe/Berlin")
MINUTE = 60_000_000


def nothing(_context: object) -> None:
    return None


def job(name: str, schedule: str = "* * * * *", group: str = "checkpoint") -> Job:
    return Job(name, JobKind.USER, CronSchedule.parse(schedule), nothing, group=group)


def ran(store: Store, of: Job, scheduled: str, started: str, finished: str) -> int:
    """Write a run of ``of`` as a host does: claimed, then finished."""
    run = JobRun(of, scheduled_at=at(scheduled), started_at=at(started), timer=lambda: 0.0)
    run_id = store.runs.claim(run, Trigger.SCHEDULE)
    assert run_id is not None
    result = RunResult(
        name=of.name, token=run.token, scheduled_at=run.scheduled_at,
        started_at=run.started_at, duration_us=at(finished) - at(started),
        outcome=Outcome.SUCCEEDED,
    )  # fmt: skip
    store.runs.finish(run_id, result)
    return run_id


def explainer(store: Store, of: Job) -> Callable[[str], Explanation]:
    def told(asked: str) -> Explanation:
        moment = datetime.fromisoformat(asked)
        return store.explain_time(
            of,
            moment if moment.tzinfo is None else at(asked),
            zone=BERLIN,
            max_lateness_us=MINUTE,
        )

    return told


def test_it_tells_a_run_an_overlap_a_group_wait_and_a_miss_from_the_runs(
    store: Store, clock: ManualClock
) -> None:
    store.define_job(name="a", schedule="* * * * *", action="checkpoint")
    store.define_job(name="b", schedule="*/5 * * * *", action="checkpoint")
    a, b = job("a"), job("b", "*/5 * * * *")
    long = ran(store, a, "2026-06-01T10:01:00+02:00", "2026-06-01T10:01:02+02:00",
               "2026-06-01T10:03:30+02:00")  # fmt: skip
    holder = ran(store, b, "2026-06-01T10:05:00+02:00", "2026-06-01T10:05:01+02:00",
                 "2026-06-01T10:07:10+02:00")  # fmt: skip
    waited = ran(store, a, "2026-06-01T10:06:00+02:00", "2026-06-01T10:07:12+02:00",
                 "2026-06-01T10:07:13+02:00")  # fmt: skip
    clock.set(at("2026-06-01T11:00:00+02:00"))
    told = explainer(store, a)
    first = told("2026-06-01T10:01:00+02:00")
    assert (first.verdict, first.run and first.run.id) == (Verdict.RAN, long)
    assert "succeeded" in first.detail
    for overlapped in ("2026-06-01T10:02:00+02:00", "2026-06-01T10:03:00+02:00"):
        skipped = told(overlapped)
        assert (skipped.verdict, skipped.cause) == (Verdict.SKIPPED, Cause.OVERLAP)
        assert skipped.run is not None
        assert skipped.run.id == long
    assert told("2026-06-01T10:04:00+02:00").cause is Cause.MISSED  # no run of it at all
    late = told("2026-06-01T10:06:00+02:00")
    assert (late.verdict, late.run and late.run.id) == (Verdict.RAN, waited)
    assert f"b's run {holder} ran then" in late.detail
    passed = told("2026-06-01T10:07:00+02:00")
    assert (passed.cause, passed.run and passed.run.id) == (Cause.GROUP_BUSY, waited)


def test_it_tells_a_switch_and_a_time_before_the_job_from_the_journal(
    store: Store, clock: ManualClock
) -> None:
    clock.set(at("2026-06-01T10:00:30+02:00"))
    store.define_job(name="a", schedule="* * * * *", action="checkpoint")
    clock.set(at("2026-06-01T10:05:30+02:00"))
    store.set_job_enabled("a", False, note="maintenance")
    clock.set(at("2026-06-01T10:08:30+02:00"))
    store.set_job_enabled("a", True)
    clock.set(at("2026-06-01T11:00:00+02:00"))
    told = explainer(store, job("a"))
    assert told("2026-06-01T10:00:00+02:00").cause is Cause.NOT_DEFINED
    assert told("2026-06-01T10:03:00+02:00").cause is Cause.MISSED
    assert told("2026-06-01T10:06:00+02:00").cause is Cause.DISABLED
    assert told("2026-06-01T10:08:00+02:00").cause is Cause.DISABLED
    assert told("2026-06-01T10:09:00+02:00").cause is Cause.MISSED


def test_it_tells_a_time_a_gap_moved_a_repeated_hour_and_none_of_its_times(
    store: Store, clock: ManualClock
) -> None:
    store.define_job(name="n", schedule="30 2 * * *", action="checkpoint")
    nightly = job("n", "30 2 * * *")
    clock.set(at("2026-03-01T12:00:00+01:00"))
    told = explainer(store, nightly)
    moved = told("2026-03-29T02:30")  # a wall time the clocks skip that night
    assert (moved.verdict, moved.placement.moved) == (Verdict.UPCOMING, True)
    assert moved.placement.time_us == at("2026-03-29T03:00:00+02:00")
    assert "moved by a DST gap to 2026-03-29T03:00:00+02:00" in moved.detail
    again = told("2026-10-25T02:30:00+01:00")  # the second 02:30 of that night
    assert again.placement.repeated
    assert again.placement.time_us == at("2026-10-25T02:30:00+02:00")
    assert "comes twice" in again.detail
    none = told("2026-06-01T12:00:00+02:00")
    assert none.verdict is Verdict.NOT_A_TIME
    assert none.to_json()["next"] == "2026-06-02T02:30:00+02:00"


def test_it_tells_a_run_another_instance_claimed(
    open_store: Callable[..., Store], clock: ManualClock, tmp_path: Path
) -> None:
    here, there = open_store(), open_store(data_dir=tmp_path / "elsewhere")
    here.define_job(name="a", schedule="* * * * *", action="checkpoint")
    run_id = ran(there, job("a"), "2026-06-01T10:01:00+02:00", "2026-06-01T10:01:01+02:00",
                 "2026-06-01T10:01:02+02:00")  # fmt: skip
    clock.set(at("2026-06-01T11:00:00+02:00"))
    told = explainer(here, job("a"))("2026-06-01T10:01:00+02:00")
    assert (told.verdict, told.run and told.run.id) == (Verdict.RAN, run_id)
    assert told.run is not None
    assert told.run.instance == there.presence.instance
    assert f"on {there.presence.instance}" in told.detail
