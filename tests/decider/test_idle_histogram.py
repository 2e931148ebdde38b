"""The histogram policy: its windows from a deployment's idle gaps, and when it says nothing."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import at

from dgxmm.decider.idle import GapHistogram
from dgxmm.decider.idle.histogram import MIN_CV, MIN_GAPS
from dgxmm.time_units import DAY_US, HOUR_US, MINUTE_US, SECOND_US

NOON = at("2026-06-03T12:00:00+00:00")
S = SECOND_US


def learned(gaps_us: list[int], at_us: int = NOON) -> GapHistogram:
    histogram = GapHistogram()
    for gap in gaps_us:
        histogram.add(gap, at_us)
    return histogram


def ten_minutes(count: int) -> list[int]:
    """Gaps from 10:00 to 10:49.5, all in the bin [10 min, 11 min)."""
    return [10 * MINUTE_US + i * 500_000 for i in range(count)]


def test_fewer_than_min_gaps_say_nothing() -> None:
    assert MIN_GAPS == 20
    assert learned(ten_minutes(MIN_GAPS - 1)).windows(NOON) is None
    assert learned(ten_minutes(MIN_GAPS)).windows(NOON) is not None


def test_an_empty_histogram_says_nothing() -> None:
    assert GapHistogram().windows(NOON) is None


@pytest.mark.parametrize(
    "per_bin", [pytest.param(1, id="one-a-bin"), pytest.param(3, id="three-a-bin")]
)
def test_gaps_spread_evenly_over_all_bins_say_nothing(per_bin: int) -> None:
    gaps = [minute * MINUTE_US + 30 * S for minute in range(240) for _ in range(per_bin)]
    assert learned(gaps).windows(NOON) is None  # a CV of 0


def test_gaps_spread_over_half_the_range_say_nothing() -> None:
    # 120 of 240 bins hold one gap each: a CV of 1, below the paper's 2.
    gaps = [2 * minute * MINUTE_US for minute in range(120)]
    histogram = learned(gaps)
    assert histogram.windows(NOON) is None
    assert MIN_CV == 2.0


def test_more_gaps_past_the_range_than_within_say_nothing() -> None:
    within = ten_minutes(30)
    assert learned(within + [4 * HOUR_US] * 31).windows(NOON) is None
    as_many = learned(within + [4 * HOUR_US] * 30).windows(NOON)
    assert as_many is not None
    assert as_many.gaps == 30  # the gaps past the range count apart


def test_100_gaps_of_ten_minutes_give_the_papers_windows() -> None:
    found = learned(ten_minutes(100)).windows(NOON)
    assert found is not None
    # Every gap is in bin 10 ([10 min, 11 min)): its 5th and 99th percentiles both.
    # Keep-alive: the bin's upper edge, 11 min, plus 10 %; pre-wake: its lower edge less 10 %.
    assert found.keep_alive_us == 726 * S  # 11 min × 1.1 = 12 min 6 s
    assert found.pre_wake_us == 540 * S  # 10 min × 0.9 = 9 min
    assert found.gaps == 100
    assert found.cv == pytest.approx(math.sqrt(239))  # one bin of 240 full, the rest empty


@pytest.mark.parametrize(
    ("gaps", "keep_alive_s", "pre_wake_s"),
    [
        pytest.param(
            [2 * MINUTE_US] * 5 + ten_minutes(94) + [30 * MINUTE_US],
            726,
            108,  # the 5th gap is in bin 2: 2 min × 0.9
            id="fifth-smallest-in-bin-2-largest-1pc-cut",
        ),
        pytest.param(
            [2 * MINUTE_US] * 4 + ten_minutes(95) + [30 * MINUTE_US],
            726,
            540,  # four early gaps are under 5 %: the 5th is in bin 10
            id="under-5pc-early-ignored",
        ),
        pytest.param(
            ten_minutes(98) + [30 * MINUTE_US] * 2,
            round(31 * 60 * 1.1),  # the 99th gap is in bin 30: 31 min × 1.1
            540,
            id="two-pc-late-move-the-keep-alive",
        ),
    ],
)
def test_the_windows_follow_the_5th_and_99th_percentile_bins(
    gaps: list[int], keep_alive_s: int, pre_wake_s: int
) -> None:
    found = learned(gaps).windows(NOON)
    assert found is not None
    assert (found.keep_alive_us, found.pre_wake_us) == (keep_alive_s * S, pre_wake_s * S)


def test_gaps_under_a_minute_keep_awake_66_s_and_never_pre_wake() -> None:
    found = learned([i * 2 * S for i in range(30)]).windows(NOON)  # 0 s to 58 s
    assert found is not None
    assert found.pre_wake_us == 0  # stay awake from the request on
    assert found.keep_alive_us == 66 * S  # 1 min × 1.1


def test_gaps_older_than_the_days_drop_out() -> None:
    histogram = learned(ten_minutes(100))
    assert histogram.windows(NOON) is not None
    assert histogram.windows(NOON + 6 * DAY_US) is not None  # six days on: still held
    assert histogram.windows(NOON + 7 * DAY_US) is None  # a week on: gone
    histogram.add(2 * MINUTE_US, NOON + 7 * DAY_US)
    assert histogram.windows(NOON + 7 * DAY_US) is None  # one new gap: not a distribution


def test_only_the_days_that_fell_out_go() -> None:
    histogram = GapHistogram()
    for gap in ten_minutes(100):
        histogram.add(gap, NOON)  # a Wednesday
    for _ in range(40):
        histogram.add(3 * MINUTE_US, NOON + 3 * DAY_US)  # the Saturday
    both = histogram.windows(NOON + 3 * DAY_US)
    assert both is not None
    assert both.gaps == 140
    later = histogram.windows(NOON + 7 * DAY_US)  # the Wednesday after: its gaps are gone
    assert later is not None
    assert later.gaps == 40
    assert (later.keep_alive_us, later.pre_wake_us) == (round(4 * 60 * 1.1) * S, 162 * S)
    assert histogram.windows(NOON + 10 * DAY_US) is None  # the Saturday's gone too


def test_a_gap_is_counted_again_after_windows_read_it() -> None:
    histogram = learned(ten_minutes(19))
    assert histogram.windows(NOON) is None
    histogram.add(10 * MINUTE_US, NOON)
    found = histogram.windows(NOON)  # what was read before is not kept past a new gap
    assert found is not None
    assert found.gaps == 20


# A few typical gap lengths with jitter, some past the range: histograms that say something,
# and some that do not.
@st.composite
def gap_lists(draw: st.DrawFn) -> list[int]:
    centres = draw(st.lists(st.integers(min_value=0, max_value=260), min_size=1, max_size=4))
    picks = draw(
        st.lists(
            st.tuples(st.sampled_from(centres), st.integers(min_value=0, max_value=90 * S)),
            min_size=MIN_GAPS - 2,
            max_size=200,
        )
    )
    return [centre * MINUTE_US + jitter for centre, jitter in picks]


@given(gaps=gap_lists())
def test_the_keep_alive_ends_after_the_pre_wake_and_both_cover_their_share(
    gaps: list[int],
) -> None:
    found = learned(gaps).windows(NOON)
    if found is None:
        return
    inside = [gap for gap in gaps if gap < 4 * HOUR_US]
    assert found.gaps == len(inside)
    assert found.cv >= MIN_CV
    assert found.keep_alive_us > found.pre_wake_us >= 0
    # Awake that long covers 99 % of the gaps; no pre-wake is later than 95 % of them.
    assert 100 * sum(gap < found.keep_alive_us for gap in inside) >= 99 * len(inside)
    assert 100 * sum(gap >= found.pre_wake_us for gap in inside) >= 95 * len(inside)
