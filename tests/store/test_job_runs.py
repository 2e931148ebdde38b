"""job_runs: a run claimed by inserting its row, once per scheduled time; kept 90 days."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from support import at

from dgxmm.clock import ManualClock
from dgxmm.errors import Busy, InvalidInput
from dgxmm.jobs import CronSchedule, Job, JobKind, JobRun, Outcome, RunResult
from dgxmm.store import RUNS_PURGE, Store, Trigger
from dgxmm.time_units import DAY_US

CHECKPOINT = Job(
    "cp", JobKind.USER, CronSchedule.parse("* * * * *"), lambda _ctx: None, group="checkpoint"
)


def a_run(scheduled_at: int, *, started_at: int | None = None, job: Job = CHECKPOINT) -> JobRun:
    started = scheduled_at if started_at is None else started_at
    return JobRun(job, scheduled_at=scheduled_at, started_at=started, timer=lambda: 0.0)


def result_of(run: JobRun, outcome: Outcome = Outcome.SUCCEEDED, **more: object) -> RunResult:
    return RunResult(
        name=run.name,
        token=run.token,
        scheduled_at=run.scheduled_at,
        started_at=run.started_at,
        duration_us=2_000,
        outcome=outcome,
        **more,  # type: ignore[arg-type]
    )


def test_it_lets_only_the_first_claim_of_a_scheduled_time_through(
    open_store: Callable[..., Store],
) -> None:
    # Two processes on one database: the same minute, two inserts; one lands.
    first, second = open_store(), open_store()
    minute = at("2026-03-02T10:01:00+00:00")
    run = a_run(minute)
    run_id = first.runs.claim(run, Trigger.SCHEDULE)
    assert run_id is not None
    first.runs.finish(run_id, result_of(run))
    assert second.runs.claim(a_run(minute), Trigger.SCHEDULE) is None
    assert first.runs.claim(a_run(minute), Trigger.SCHEDULE) is None
    later = a_run(minute + 60_000_000)
    assert second.runs.claim(later, Trigger.SCHEDULE) is not None
    rows = first.runs.page(job="cp")
    assert [(r.scheduled_at, r.instance) for r in rows] == [
        (minute + 60_000_000, second.instance),
        (minute, first.instance),
    ]


def test_it_refuses_a_claim_while_the_job_or_its_group_runs_in_another_process(
    open_store: Callable[..., Store],
) -> None:
    server, cli = open_store(), open_store()
    other_of_group = Job(
        "cp2", JobKind.USER, CronSchedule.parse("0 4 * * *"), lambda _ctx: None, group="checkpoint"
    )
    run = a_run(at("2026-03-02T10:01:00+00:00"))
    run_id = cli.runs.claim(run, Trigger.CLI)
    assert run_id is not None
    with pytest.raises(Busy, match=f"job cp is running on instance {cli.instance}"):
        server.runs.claim(a_run(at("2026-03-02T10:02:00+00:00")), Trigger.SCHEDULE)
    with pytest.raises(Busy, match="job cp of group checkpoint is running on instance"):
        server.runs.claim(
            a_run(at("2026-03-02T10:02:00+00:00"), job=other_of_group), Trigger.MANUAL
        )
    with pytest.raises(Busy, match=f"backup: job cp \\(instance {cli.instance}\\) is running"):
        server.backup("backups/one")
    cli.runs.finish(run_id, result_of(run))
    assert server.runs.claim(a_run(at("2026-03-02T10:02:00+00:00")), Trigger.SCHEDULE) is not None


def test_it_claims_a_run_by_hand_whatever_its_time(store: Store) -> None:
    minute = at("2026-03-02T10:01:00+00:00")
    store.runs.claim(a_run(minute), Trigger.SCHEDULE)
    assert store.runs.claim(a_run(minute), Trigger.MANUAL) is not None
    assert store.runs.claim(a_run(minute), Trigger.CLI) is not None
    assert [r.trigger for r in store.runs.page()] == [Trigger.CLI, Trigger.MANUAL, Trigger.SCHEDULE]


def test_it_writes_the_start_then_the_end_and_the_first_end_stands(store: Store) -> None:
    run = a_run(at("2026-03-02T10:01:00+00:00"), started_at=at("2026-03-02T10:01:00.5+00:00"))
    run_id = store.runs.claim(run, Trigger.SCHEDULE)
    assert run_id is not None
    started = store.runs.get(run_id)
    assert started is not None
    assert started.under_way
    assert (started.outcome, started.finished_at, started.kind, started.group) == (
        None,
        None,
        JobKind.USER,
        "checkpoint",
    )
    failed = result_of(
        run, Outcome.FAILED, error="StoreError: disk gone", public_error="StoreError"
    )
    assert store.runs.finish(run_id, failed) is True
    assert store.runs.finish(run_id, result_of(run, detail="late")) is False
    ended = store.runs.get(run_id)
    assert ended is not None
    assert (ended.outcome, ended.error, ended.public_error, ended.result) == (
        Outcome.FAILED,
        "StoreError: disk gone",
        "StoreError",
        None,
    )
    assert ended.finished_at == run.started_at + 2_000
    assert ended.to_json(full_errors=False)["error"] == "StoreError"
    assert ended.to_json(full_errors=True)["duration_ms"] == 2.0


def test_it_pages_newest_first_by_job_and_before(store: Store) -> None:
    other = Job("other", JobKind.SYSTEM, CronSchedule.parse("* * * * *"), lambda _ctx: None)
    base = at("2026-03-02T10:00:00+00:00")
    for i in range(5):
        store.runs.claim(a_run(base + i * 60_000_000), Trigger.SCHEDULE)
        store.runs.claim(a_run(base + i * 60_000_000, job=other), Trigger.SCHEDULE)
    first = store.runs.page(job="cp", limit=2)
    assert [r.scheduled_at for r in first] == [base + 240_000_000, base + 180_000_000]
    rest = store.runs.page(job="cp", before=first[-1].id, limit=10)
    assert [r.scheduled_at for r in rest] == [base + 120_000_000, base + 60_000_000, base]
    assert {r.job for r in store.runs.page(limit=10)} == {"cp", "other"}
    assert store.runs.page(job="ghost") == []


@pytest.mark.parametrize(
    ("keys", "field"),
    [({"limit": 0}, "limit"), ({"limit": 1001}, "limit"), ({"before": 0}, "before")],
    ids=["limit-zero", "limit-too-big", "before-zero"],
)
def test_it_refuses_a_bad_page(store: Store, keys: dict[str, int], field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        store.runs.page(**keys)  # type: ignore[arg-type]
    assert caught.value.field == field


def test_runs_purge_deletes_the_ended_runs_older_than_the_setting(
    store: Store, clock: ManualClock
) -> None:
    now = clock.now_us()
    old = a_run(now - 91 * DAY_US)
    store.runs.finish(store.runs.claim(old, Trigger.SCHEDULE) or 0, result_of(old))
    kept = a_run(now - 89 * DAY_US)
    store.runs.finish(store.runs.claim(kept, Trigger.SCHEDULE) or 0, result_of(kept))
    stuck = a_run(now - 200 * DAY_US)  # never ended: the store cannot tell it is over
    store.runs.claim(stuck, Trigger.SCHEDULE)
    purge = next(job for job in store.system_jobs() if job.name == RUNS_PURGE)
    assert (str(purge.schedule), purge.enabled) == ("10 4 * * *", True)
    assert purge.action(None) == "deleted 1 run older than 90 days"  # type: ignore[arg-type]
    assert sorted(r.scheduled_at for r in store.runs.page()) == [
        stuck.scheduled_at,
        kept.scheduled_at,
    ]
    store.set_setting("jobs.runs_keep_days", 30)
    assert purge.action(None) == "deleted 1 run older than 30 days"  # type: ignore[arg-type]
    store.set_setting("jobs.runs_keep_days", "soon")
    with pytest.raises(InvalidInput) as caught:
        purge.action(None)  # type: ignore[arg-type]
    assert caught.value.field == "jobs.runs_keep_days"


def test_it_claims_a_ticks_runs_in_one_step_answering_each(
    open_store: Callable[..., Store],
) -> None:
    server, cli = open_store(), open_store()
    minute = at("2026-03-02T10:01:00+00:00")
    taken = a_run(minute)
    taken_id = server.runs.claim(taken, Trigger.SCHEDULE)
    server.runs.finish(taken_id or 0, result_of(taken))
    busy = Job(
        "bk", JobKind.USER, CronSchedule.parse("* * * * *"), lambda _ctx: None, group="backup"
    )
    cli.runs.claim(a_run(minute, job=busy), Trigger.CLI)  # under way in the CLI
    other = Job("other", JobKind.SYSTEM, CronSchedule.parse("* * * * *"), lambda _ctx: None)
    answers = server.runs.claim_all(
        [a_run(minute), a_run(minute + 60_000_000, job=busy), a_run(minute, job=other)],
        Trigger.SCHEDULE,
    )
    assert answers[0] is None  # that time was claimed already
    assert isinstance(answers[1], Busy)
    assert "job bk is running on instance" in str(answers[1])
    assert isinstance(answers[2], int)
    assert [r.job for r in server.runs.page() if r.instance == server.instance] == ["other", "cp"]
