"""Workload statistics: buckets per minute, hour and day; counts; retention; JSON."""

from __future__ import annotations

import json

import pytest
from support import at

from dgxmm.jobs import Channel, Outcome, RunResult, SkipReason, SkipRecord, Tier, WorkloadStats

SECOND = 1_000_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
DAY = 24 * HOUR


def result(
    name: str, started_at: int, duration_s: float, outcome: Outcome = Outcome.SUCCEEDED
) -> RunResult:
    return RunResult(
        name=name,
        token=0,
        scheduled_at=started_at,
        started_at=started_at,
        duration_us=round(duration_s * SECOND),
        outcome=outcome,
        error=None if outcome is Outcome.SUCCEEDED else "boom",
    )


def test_it_counts_runs_failures_total_and_longest_per_bucket() -> None:
    stats = WorkloadStats()
    base = at("2026-06-01T10:00:00+00:00")
    stats.record_run(result("j", base + 5 * SECOND, 2))
    stats.record_run(result("j", base + 40 * SECOND, 3, Outcome.FAILED))
    stats.record_run(result("j", base + 70 * SECOND, 1, Outcome.OVER_TIME))
    minutes = stats.history("j", Tier.MINUTES)
    assert [(b.start_us, b.count, b.failures, b.total_us, b.longest_us) for b in minutes] == [
        (base, 2, 1, 5 * SECOND, 3 * SECOND),
        (base + MINUTE, 1, 1, 1 * SECOND, 1 * SECOND),  # over time counts as a failure
    ]
    (hour,) = stats.history("j", Tier.HOURS)
    assert (hour.start_us, hour.count, hour.failures, hour.total_us) == (base, 3, 2, 6 * SECOND)
    (day,) = stats.history("j", Tier.DAYS)
    assert (day.start_us, day.count) == (at("2026-06-01T00:00:00+00:00"), 3)
    assert stats.history("unknown", Tier.MINUTES) == []


def test_it_keeps_minutes_two_days_hours_90_days_and_days_three_years() -> None:
    stats = WorkloadStats()
    start = at("2023-01-01T00:00:00+00:00")
    stats.record_run(result("j", start, 1))
    stats.record_run(result("j", start + 2 * DAY + MINUTE, 1))
    assert len(stats.history("j", Tier.MINUTES)) == 1  # the first minute fell out
    assert len(stats.history("j", Tier.HOURS)) == 2
    stats.record_run(result("j", start + 91 * DAY, 1))
    assert len(stats.history("j", Tier.HOURS)) == 2  # the first hour fell out
    assert len(stats.history("j", Tier.DAYS)) == 3
    stats.record_run(result("j", start + 3 * 366 * DAY + DAY, 1))
    assert stats.history("j", Tier.DAYS)[0].start_us == start + 2 * DAY


def test_it_counts_the_last_hour_two_days_and_90_days() -> None:
    stats = WorkloadStats()
    now = at("2026-06-10T12:00:00+00:00")
    for offset in (10 * MINUTE, 50 * MINUTE, 3 * HOUR, 30 * HOUR, 5 * DAY, 80 * DAY, 100 * DAY):
        stats.record_run(result("j", now - offset, 1))
    counts = stats.counts("j", now)
    assert (counts.last_hour, counts.last_two_days, counts.last_90_days) == (2, 4, 6)


def test_it_remembers_the_last_run_and_the_skips() -> None:
    stats = WorkloadStats()
    base = at("2026-06-01T10:00:00+00:00")
    stats.record_run(result("j", base + MINUTE, 2, Outcome.FAILED))
    stats.record_run(result("j", base, 1))  # an older run finishing later does not replace it
    last = stats.last_run("j")
    assert last is not None
    assert (last.started_at, last.outcome, last.error) == (base + MINUTE, Outcome.FAILED, "boom")
    stats.record_skip(SkipRecord(name="j", at_us=base, reason=SkipReason.OVERLAP, detail="1 time"))
    stats.record_skip(SkipRecord(name="j", at_us=base + MINUTE, reason=SkipReason.OVERLAP))
    assert stats.skips("j") == {SkipReason.OVERLAP: 2}
    skip = stats.last_skip("j")
    assert skip is not None
    assert skip.at_us == base + MINUTE


def test_it_round_trips_through_plain_json() -> None:
    stats = WorkloadStats()
    base = at("2026-06-01T10:00:00+00:00")
    stats.record_run(result("a", base, 2, Outcome.FAILED))
    stats.record_run(result("b", base + HOUR, 1))
    stats.record_skip(SkipRecord(name="a", at_us=base, reason=SkipReason.MISSED, detail="late"))
    stats.set_job_override("compact", schedule="30 4 * * *", enabled=True)
    text = json.dumps(stats.to_json())
    again = WorkloadStats.from_json(json.loads(text))
    assert again.to_json() == stats.to_json()
    assert again.history("a", Tier.DAYS) == stats.history("a", Tier.DAYS)
    assert again.last_run("a") == stats.last_run("a")
    override = again.job_override("compact")
    assert override is not None
    assert (override.schedule, override.enabled) == ("30 4 * * *", True)


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"format": 2},
        {"format": 1, "jobs": {"a": {"minutes": [["x", 1, 0, 1, 1]]}}},
        {"format": 1, "jobs": {"a": {"last": {"started_at": 1}}}},
        {"format": 1, "jobs": {"a": {"skips": {"sometimes": 1}}}},
        {"format": 1, "overrides": {"a": {"enabled": "yes"}}},
    ],
    ids=["empty", "newer-format", "bad-bucket", "bad-last", "bad-reason", "bad-override"],
)
def test_it_refuses_malformed_json(data: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="workload stats"):
        WorkloadStats.from_json(data)


def test_it_changes_its_version_on_every_change() -> None:
    stats = WorkloadStats()
    before = stats.version
    stats.record_run(result("a", 0, 1))
    after_run = stats.version
    stats.set_job_override("a", enabled=False)
    assert before < after_run < stats.version


def test_it_names_the_tiers() -> None:
    assert Tier.named("hours") is Tier.HOURS
    with pytest.raises(ValueError, match="tier: 'weeks' is not one of minutes, hours, days"):
        Tier.named("weeks")


def test_it_starts_day_buckets_at_local_midnight_in_its_zone() -> None:
    stats = WorkloadStats("Europe/Berlin")
    stats.record_run(result("j", at("2026-06-01T23:30:00+02:00"), 1))
    stats.record_run(result("j", at("2026-06-02T00:30:00+02:00"), 1))
    # The DST day of 2026-03-29 has 23 hours; its runs still share one bucket.
    stats.record_run(result("j", at("2026-03-29T00:10:00+01:00"), 1))
    stats.record_run(result("j", at("2026-03-29T23:50:00+02:00"), 1))
    assert [(b.start_us, b.count) for b in stats.history("j", Tier.DAYS)] == [
        (at("2026-03-29T00:00:00+01:00"), 2),
        (at("2026-06-01T00:00:00+02:00"), 1),
        (at("2026-06-02T00:00:00+02:00"), 1),
    ]
    santiago = WorkloadStats("America/Santiago")  # midnight of 2022-09-11 did not exist
    santiago.record_run(result("j", at("2022-09-11T01:30:00-03:00"), 1))
    assert santiago.history("j", Tier.DAYS)[0].start_us == at("2022-09-11T01:00:00-03:00")


def test_it_counts_queries_per_channel_in_every_tier_and_keeps_them_in_json() -> None:
    stats = WorkloadStats("Europe/Berlin")
    t = at("2026-06-01T10:00:10+00:00")
    stats.record_query(Channel.API, started_at=t, duration_us=2 * SECOND, failed=False)
    stats.record_query(Channel.API, started_at=t + 20 * SECOND, duration_us=SECOND, failed=True)
    stats.record_query(Channel.JOB, started_at=t + 2 * MINUTE, duration_us=SECOND, failed=False)
    (minute,) = stats.channel_history(Channel.API, Tier.MINUTES)
    assert (minute.count, minute.failures, minute.total_us, minute.longest_us) == (
        2,
        1,
        3 * SECOND,
        2 * SECOND,
    )
    assert [b.count for b in stats.channel_history(Channel.API, Tier.HOURS)] == [2]
    assert [b.count for b in stats.channel_history(Channel.API, Tier.DAYS)] == [2]
    assert [b.count for b in stats.channel_history(Channel.JOB, Tier.MINUTES)] == [1]
    assert stats.channel_history(Channel.CLI, Tier.MINUTES) == []
    assert stats.names() == []  # a channel is not a job
    again = WorkloadStats.from_json(json.loads(json.dumps(stats.to_json())))
    for channel in Channel:
        for tier in Tier:
            assert again.channel_history(channel, tier) == stats.channel_history(channel, tier)
