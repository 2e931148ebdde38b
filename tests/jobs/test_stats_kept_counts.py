"""A job's run counts are kept per minute, and always equal a recount of its buckets."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from jobs.test_stats import DAY, MINUTE, result
from support import at

from dgxmm.jobs import Outcome, RunCounts, Tier, WorkloadStats

BASE = at("2026-03-02T10:00:00+00:00")


def recount(stats: WorkloadStats, name: str, now: int) -> RunCounts:
    """Sum the buckets afresh, as the counts were summed before they were kept."""
    minutes = {b.start_us: b.count for b in stats.history(name, Tier.MINUTES)}
    hours = {b.start_us: b.count for b in stats.history(name, Tier.HOURS)}

    def since(buckets: dict[int, int], window: int) -> int:
        return sum(n for start, n in buckets.items() if now - window < start <= now)

    return RunCounts(
        last_hour=since(minutes, 60 * MINUTE),
        last_two_days=since(minutes, 2 * DAY),
        last_90_days=since(hours, 90 * DAY),
    )


# Steps: a run at an offset from BASE, or a look at the counts at an offset (time may go back).
STEPS = st.lists(
    st.tuples(st.booleans(), st.integers(min_value=0, max_value=3 * DAY // MINUTE)),
    min_size=1,
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(steps=STEPS, seconds=st.integers(min_value=0, max_value=59))
def test_kept_counts_equal_a_recount_whatever_the_order(
    steps: list[tuple[bool, int]], seconds: int
) -> None:
    stats = WorkloadStats("UTC")
    for is_run, minute in steps:
        at_us = BASE + minute * MINUTE + seconds * 1_000_000
        if is_run:
            stats.record_run(result("j", at_us, 1, Outcome.SUCCEEDED))
        else:
            assert stats.counts("j", at_us) == recount(stats, "j", at_us)
            later = at_us + (59 - seconds) * 1_000_000  # the same minute: still the kept counts
            assert stats.counts("j", later) == recount(stats, "j", later)
