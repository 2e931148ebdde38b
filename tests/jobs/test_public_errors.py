"""What of a failed run's error anyone may read: dgxmm's own words, never a foreign message."""

from __future__ import annotations

import pytest
from support import at

from dgxmm.errors import NotAllowed, StoreError
from dgxmm.jobs import CronSchedule, Job, JobKind, Outcome, RunContext, Scheduler, WorkloadStats

NOW = at("2026-06-01T10:00:00+00:00")


def _fail_with(error: Exception) -> Job:
    def action(_ctx: RunContext) -> None:
        raise error

    return Job("j", JobKind.USER, CronSchedule.parse("0 3 * * *"), action)


@pytest.mark.parametrize(
    ("error", "whole", "public"),
    [
        pytest.param(
            StoreError("statement 2 failed: bad JSON path: 'hunter2'", public="statement 2 failed"),
            "StoreError: statement 2 failed: bad JSON path: 'hunter2'",
            "StoreError: statement 2 failed",
            id="database-words-withheld",
        ),
        pytest.param(
            NotAllowed("job j: would delete from audit"),
            "NotAllowed: job j: would delete from audit",
            "NotAllowed: job j: would delete from audit",
            id="our-own-words-shown",
        ),
        pytest.param(
            ValueError("hunter2"),
            "ValueError: hunter2",
            "ValueError (the message is shown to admins)",
            id="foreign-message-withheld",
        ),
    ],
)
def test_a_failed_run_keeps_both_forms(error: Exception, whole: str, public: str) -> None:
    stats = WorkloadStats()
    scheduler = Scheduler("UTC", stats=stats)
    scheduler.add(_fail_with(error))
    result = scheduler.start_now("j", NOW).run()
    scheduler.finish(result)
    assert (result.outcome, result.error, result.public_error) == (Outcome.FAILED, whole, public)
    last = stats.last_run("j")
    assert last is not None
    assert (last.error, last.public_error) == (whole, public)


def test_a_sidecar_written_before_public_errors_shows_only_the_kind() -> None:
    stats = WorkloadStats()
    scheduler = Scheduler("UTC", stats=stats)
    scheduler.add(_fail_with(StoreError("statement 1 failed: 'hunter2'")))
    scheduler.finish(scheduler.start_now("j", NOW).run())
    data = stats.to_json()
    del data["jobs"]["j"]["last"]["public_error"]
    last = WorkloadStats.from_json(data).last_run("j")
    assert last is not None
    assert last.public_error == "StoreError"
