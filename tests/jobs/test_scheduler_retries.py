"""Retries: each attempt its own run, full jitter, never at or past the job's next time."""

from __future__ import annotations

from datetime import timedelta

import pytest
from support import at

from dgxmm.errors import DefinitionError, StoreError, TimeoutExceeded
from dgxmm.jobs import (
    Action,
    CronSchedule,
    Job,
    JobKind,
    Outcome,
    RetryPolicy,
    RunContext,
    RunResult,
    Scheduler,
    WorkloadStats,
)

MINUTE = 60_000_000


def no_time() -> float:
    """A monotonic timer that stands still: every run takes no time."""
    return 0.0


def failing(error: BaseException) -> Action:
    def act(_context: RunContext) -> None:
        raise error

    return act


def ticked(scheduler: Scheduler, start: int, end: int) -> list[RunResult]:
    """Tick every minute (2 s past it) from ``start`` to ``end``; every run's result."""
    results: list[RunResult] = []
    scheduler.tick(start)
    now = start
    while now < end:
        now += MINUTE
        results += scheduler.tick(now)
    return results


def test_a_retry_stops_before_the_next_time_across_a_dst_gap() -> None:
    # Berlin's clocks jump from 02:00 to 03:00 on 2026-03-29: after 01:00 the next hourly
    # time is 03:00+02:00, one real hour later, though two wall hours.
    scheduler = Scheduler("Europe/Berlin", WorkloadStats(), rng=lambda: 1.0, timer=no_time)
    policy = RetryPolicy(retries=3, backoff=timedelta(minutes=50))
    scheduler.add(Job("hourly", JobKind.USER, CronSchedule.parse("0 * * * *"),
                      failing(StoreError("the disk is full")), retry=policy))  # fmt: skip
    results = ticked(scheduler, at("2026-03-29T00:59:02+01:00"), at("2026-03-29T03:01:02+02:00"))
    assert [(r.scheduled_at, r.started_at, r.attempt) for r in results] == [
        (at("2026-03-29T01:00:00+01:00"), at("2026-03-29T01:00:02+01:00"), 1),
        # 50 min later; the next wait (100 min) would end past 03:00+02:00: no third attempt.
        (at("2026-03-29T01:00:00+01:00"), at("2026-03-29T01:50:02+01:00"), 2),
        (at("2026-03-29T03:00:00+02:00"), at("2026-03-29T03:00:02+02:00"), 1),
    ]
    assert all(r.outcome is Outcome.FAILED for r in results)


def test_the_wait_doubles_with_full_jitter_up_to_its_most() -> None:
    scheduler = Scheduler("UTC", WorkloadStats(), rng=lambda: 0.5, timer=no_time)
    policy = RetryPolicy(retries=4, backoff=timedelta(minutes=4), backoff_max=timedelta(minutes=10))
    scheduler.add(Job("daily", JobKind.USER, CronSchedule.parse("0 3 * * *"),
                      failing(TimeoutExceeded("job daily: timeout of 5 s passed")),
                      retry=policy))  # fmt: skip
    results = ticked(scheduler, at("2026-06-01T02:59:02+00:00"), at("2026-06-01T04:00:02+00:00"))
    # Half of 4, 8, 10 (its most), 10 minutes after each failure: a timeout is retried.
    assert [r.started_at for r in results] == [
        at("2026-06-01T03:00:02+00:00"),
        at("2026-06-01T03:02:02+00:00"),
        at("2026-06-01T03:06:02+00:00"),
        at("2026-06-01T03:11:02+00:00"),
        at("2026-06-01T03:16:02+00:00"),
    ]
    assert [r.attempt for r in results] == [1, 2, 3, 4, 5]


def test_a_definition_error_is_not_retried() -> None:
    scheduler = Scheduler("UTC", WorkloadStats(), rng=lambda: 0.0, timer=no_time)
    policy = RetryPolicy(retries=3, backoff=timedelta(seconds=30))
    refused = failing(DefinitionError("args", "no parameter 'x'"))
    scheduler.add(Job("q", JobKind.USER, CronSchedule.parse("*/10 * * * *"), refused,
                      retry=policy))  # fmt: skip
    results = ticked(scheduler, at("2026-06-01T09:59:02+00:00"), at("2026-06-01T10:15:02+00:00"))
    assert [(r.attempt, r.retryable) for r in results] == [(1, False), (1, False)]


def test_it_refuses_a_retry_policy_that_makes_no_sense() -> None:
    with pytest.raises(ValueError, match="retry_backoff_s"):
        RetryPolicy(retries=2)
    with pytest.raises(ValueError, match="retries"):
        RetryPolicy(retries=-1, backoff=timedelta(seconds=1))
    with pytest.raises(ValueError, match="retry_backoff_max_s"):
        RetryPolicy(retries=1, backoff=timedelta(minutes=2), backoff_max=timedelta(minutes=1))
