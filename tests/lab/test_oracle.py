"""The oracle: per gap, the rest that frees the most and fits its round trip; no cold request."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dgxmm.lab import Footprint, Ledger, Phase, RoundTrip, oracle_timeline
from dgxmm.time_units import HOUR_US, SECOND_US

H = HOUR_US
S = SECOND_US
FOOT = Footprint(awake_gib=80.0, level_1_gib=2.0, level_2_gib=1.0)
TRIPS = {
    Phase.ASLEEP_1: RoundTrip(down_us=2 * S, up_us=1 * S),
    Phase.ASLEEP_2: RoundTrip(down_us=2 * S, up_us=3 * S),
    Phase.STOPPED: RoundTrip(down_us=5 * S, up_us=60 * S),
}


def run(arrivals_us: list[int], end_us: int, trips: dict[Phase, RoundTrip] = TRIPS) -> Ledger:
    at = np.asarray(arrivals_us, dtype=np.int64)
    timeline = oracle_timeline(at, FOOT, trips, start_us=0, end_us=end_us)
    return Ledger.of("a", FOOT, timeline, at)


@pytest.mark.parametrize(
    ("gap_s", "rests_in"),
    [
        pytest.param(2, None, id="shorter-than-any-round-trip"),
        pytest.param(10, Phase.ASLEEP_1, id="short-level-1"),
        # 78 x (g - 3) against 79 x (g - 5): level 2 pays past 161 s; a stop pays past
        # 80 (g - 65) > 79 (g - 5), g > 4,805 s.
        pytest.param(200, Phase.ASLEEP_2, id="longer-level-2"),
        pytest.param(2 * 3600, Phase.STOPPED, id="hours-stop"),
    ],
)
def test_it_rests_each_gap_in_the_phase_that_frees_the_most(
    gap_s: int, rests_in: Phase | None
) -> None:
    at = np.asarray([0, gap_s * S], dtype=np.int64)
    timeline = oracle_timeline(at, FOOT, TRIPS, start_us=0, end_us=gap_s * S + 1)
    rested = [phase for _, phase in timeline.phases() if phase.is_resting]
    assert rested == ([] if rests_in is None else [rests_in])


def test_it_wakes_exactly_its_wake_time_before_the_next_arrival() -> None:
    timeline = oracle_timeline(
        np.asarray([0, 100 * S], dtype=np.int64), FOOT, TRIPS, start_us=0, end_us=101 * S
    )
    assert timeline.phases() == [
        (0, Phase.AWAKE),
        (1, Phase.GOING_DOWN),
        (1 + 2 * S, Phase.ASLEEP_1),
        (99 * S, Phase.WAKING),
        (100 * S, Phase.AWAKE),
    ]


def test_after_the_last_request_no_wake_is_needed() -> None:
    ledger = run([0], end_us=4 * H)
    # A stop a microsecond after the request: 5 s going down, then nothing held to the end.
    assert ledger.freed_gib_h == pytest.approx(80.0 * (4 * H - 5 * S - 1) / H)
    assert (ledger.stops, ledger.starts, ledger.cold) == (1, 0, 0)


def test_a_server_without_sleep_mode_only_stops() -> None:
    ledger = run([0, 600 * S], end_us=601 * S, trips={Phase.STOPPED: TRIPS[Phase.STOPPED]})
    assert (ledger.stops, ledger.starts, ledger.sleeps) == (1, 1, 0)


def test_overlapping_requests_leave_no_gap() -> None:
    at = np.asarray([0, 10 * S], dtype=np.int64)
    ends = np.asarray([60 * S, 11 * S], dtype=np.int64)  # the first ends after the second
    timeline = oracle_timeline(at, FOOT, TRIPS, start_us=0, end_us=12 * S, ends_us=ends)
    assert [phase for _, phase in timeline.phases()] == [Phase.AWAKE]


def _best_in_gap(gap_us: int, wake: bool) -> float:
    """What the best rest frees in one gap, in GiB x microseconds, written the plain way."""
    best = 0.0
    for phase, trip in TRIPS.items():
        rest = gap_us - trip.down_us - (trip.up_us if wake else 0)
        if rest > 0:
            best = max(best, (FOOT.awake_gib - FOOT.gib(phase)) * rest)
    return best


@given(
    gaps=st.lists(st.integers(min_value=0, max_value=3 * 3600), min_size=0, max_size=30),
    tail=st.integers(min_value=1, max_value=3 * 3600),
)
def test_it_meets_no_cold_request_and_frees_the_sum_of_each_gaps_best(
    gaps: list[int], tail: int
) -> None:
    arrivals = list(np.cumsum([gap * S for gap in gaps])) if gaps else []
    end = (arrivals[-1] if arrivals else 0) + tail * S
    ledger = run([int(a) for a in arrivals], end_us=int(end))
    assert ledger.cold == 0
    # Each gap runs from a microsecond after one arrival (from the span's start for the
    # first) to the next arrival (to the span's end for the last, which needs no wake).
    starts = [0, *[int(a) + 1 for a in arrivals]]
    stops = [*[int(a) for a in arrivals], int(end)]
    expected = sum(
        _best_in_gap(stop - start, wake=i < len(stops) - 1)
        for i, (start, stop) in enumerate(zip(starts, stops, strict=True))
    )
    assert ledger.freed_gib_h == pytest.approx(expected / H, rel=1e-9, abs=1e-9)
    assert 0 <= ledger.freed_gib_h <= ledger.always_on_gib_h
