"""The fast clock of soaks and demos: RATE times faster from its anchor, the same everywhere."""

from __future__ import annotations

import time

import pytest

from dgxmm.clock import FastClock, SystemClock


def test_a_fast_clock_reads_the_anchor_plus_the_real_time_since_it_rate_times_over() -> None:
    real_before = SystemClock().now_us()
    clock = FastClock.parse(f"10@{time.strftime('%Y-%m-%dT%H:%M:%S+00:00', time.gmtime())}")
    now = clock.now_us()
    real_after = SystemClock().now_us()
    anchor = clock.anchor_us
    assert (clock.rate, anchor % 1_000_000) == (10.0, 0)
    assert anchor + (real_before - anchor) * 10 <= now <= anchor + (real_after - anchor) * 10
    # Two clocks given one spec agree: several servers on one database read one instant.
    other = FastClock(10, anchor)
    assert abs(other.now_us() - clock.now_us()) < 10 * 1_000_000


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("10", "give RATE@ANCHOR"),
        ("ten@2026-12-01T14:00:00+00:00", "rate 'ten': not a number"),
        ("10@yesterday", "anchor 'yesterday': not an ISO-8601 instant"),
        ("10@2026-12-01T14:00:00", "give it a time zone"),
        ("0.5@2026-12-01T14:00:00+00:00", "rate 0.5: give a number of at least 1"),
        ("nan@2026-12-01T14:00:00+00:00", "rate nan: give a number of at least 1"),
    ],
)
def test_a_wrong_fast_clock_is_refused_saying_what_is_wrong(spec: str, said: str) -> None:
    with pytest.raises(ValueError) as refused:
        FastClock.parse(spec)
    assert said in str(refused.value)
