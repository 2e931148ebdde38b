"""A user job's retries: checked with every wrong field named, scheduled, and each attempt its
own row in ``job_runs`` (trigger ``retry``), told by ``explain`` as retried."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from support import at

from dgxmm.clock import ManualClock
from dgxmm.errors import DefinitionError
from dgxmm.jobs import JobRun, Outcome, RetryPolicy, RunResult, Verdict
from dgxmm.store import Store, Trigger


def test_it_schedules_a_job_with_its_retries(store: Store) -> None:
    store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint", retries=3,
                     retry_backoff_s=30, retry_backoff_max_s=300.5)  # fmt: skip
    (job,) = store.user_jobs().jobs
    assert job.retry == RetryPolicy(
        retries=3, backoff=timedelta(seconds=30), backoff_max=timedelta(seconds=300.5)
    )
    store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    assert store.user_jobs().jobs[0].retry == RetryPolicy()  # none by default


@pytest.mark.parametrize(
    ("keys", "fields"),
    [
        ({"retries": -1, "retry_backoff_s": 5}, ["retries"]),
        ({"retries": 2}, ["retry_backoff_s"]),
        ({"retries": 2, "retry_backoff_s": 0, "retry_backoff_max_s": -3},
         ["retry_backoff_s", "retry_backoff_max_s"]),
        ({"retries": 2, "retry_backoff_s": 60, "retry_backoff_max_s": 30}, ["retry_backoff_max_s"]),
        ({"retries": "3", "retry_backoff_s": 5}, ["retries"]),
        ({"retries": 1, "retry_backoff_s": 86_401}, ["retry_backoff_s"]),
    ],
    ids=["negative", "no-backoff", "both-wrong", "max-below", "text", "too-long"],
)  # fmt: skip
def test_it_refuses_retries_it_cannot_use_naming_every_field_and_changes_nothing(
    store: Store, keys: dict[str, Any], fields: list[str]
) -> None:
    version = store.catalog_version()
    with pytest.raises(DefinitionError) as refused:
        store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint", **keys)
    assert [field for field, _ in refused.value.errors] == fields
    assert store.catalog_version() == version
    assert store.jobs() == []


def test_each_attempt_is_its_own_run_and_explain_tells_it_was_retried(
    store: Store, clock: ManualClock
) -> None:
    store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint", retries=2,
                     retry_backoff_s=60)  # fmt: skip
    (job,) = store.user_jobs().jobs
    ids = []
    for attempt, started, outcome in (
        (1, "2026-06-01T03:00:01+02:00", Outcome.FAILED),
        (2, "2026-06-01T03:00:40+02:00", Outcome.SUCCEEDED),
    ):
        run = JobRun(job, scheduled_at=at("2026-06-01T03:00:00+02:00"), started_at=at(started),
                     timer=lambda: 0.0, attempt=attempt)  # fmt: skip
        run_id = store.runs.claim(run, Trigger.SCHEDULE)
        assert run_id is not None  # a retry is not refused as the time already claimed
        store.runs.finish(run_id, RunResult(
            name="cp", token=run.token, scheduled_at=run.scheduled_at, started_at=run.started_at,
            duration_us=1000, outcome=outcome, attempt=attempt,
        ))  # fmt: skip
        ids.append(run_id)
    rows = store.runs.page(job="cp")
    assert [(r.attempt, r.trigger) for r in rows] == [(2, Trigger.RETRY), (1, Trigger.SCHEDULE)]
    clock.set(at("2026-06-01T12:00:00+02:00"))
    told = store.explain_time(
        job, at("2026-06-01T03:00:00+02:00"), zone=ZoneInfo("Europe/Berlin"),
        max_lateness_us=60_000_000,
    )  # fmt: skip
    assert (told.verdict, told.run and told.run.id) == (Verdict.RAN, ids[1])
    assert f"it was retried: attempt 1 (run {ids[0]}) failed, attempt 2 (run {ids[1]})" in (
        told.detail
    )
