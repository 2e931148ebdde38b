"""The lazy oracle: wakes only on arrival, rests each gap where the cost at a price is least."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgxmm.lab import (
    Fixed,
    Footprint,
    IdleTimeout,
    Ledger,
    Phase,
    RoundTrip,
    ServerTimes,
    lazy_oracle,
    oracle_timeline,
    replay_idle_timeout,
)
from dgxmm.lab.ledger import STANDARD_PRICES
from dgxmm.time_units import HOUR_US, SECOND_US

H = HOUR_US
S = SECOND_US
FOOT = Footprint(awake_gib=80.0, level_1_gib=2.0, level_2_gib=1.0)
TIMES = ServerTimes(
    sleep_1=Fixed(value_us=2 * S), wake_1=Fixed(value_us=1 * S),
    sleep_2=Fixed(value_us=2 * S), wake_2=Fixed(value_us=3 * S),
    stop=Fixed(value_us=5 * S), start=Fixed(value_us=60 * S),
)  # fmt: skip
TRIPS = TIMES.round_trips()
LEVEL_1 = {Phase.ASLEEP_1: TRIPS[Phase.ASLEEP_1]}


def lazy(
    at_us: list[int], end_us: int, price: float, trips: dict[Phase, RoundTrip] = TRIPS
) -> Ledger:
    at = np.asarray(at_us, dtype=np.int64)
    replayed = lazy_oracle(at, FOOT, trips, price=price, start_us=0, end_us=end_us)
    return Ledger.of("a", FOOT, replayed.timeline, at, waits_us=replayed.waits_us)


# Level 1 alone: d = 2 s, u = 1 s, one request waits u, Delta = 78 GiB. At W = 1 GiB-h per
# request-second, tau = 2 + 1 + 3600 x 1 x 1 / 78 = 49.15 s.
@pytest.mark.parametrize(
    ("gap_s", "price", "sleeps"),
    [
        pytest.param(48, 1.0, False, id="shorter-than-break-even-stays-up"),
        pytest.param(51, 1.0, True, id="longer-than-break-even-sleeps"),
        pytest.param(4, 0.0, True, id="free-waiting-sleeps-past-the-round-trip"),
        pytest.param(2, 0.0, False, id="shorter-than-the-round-trip-stays-up"),
    ],
)
def test_it_sleeps_a_gap_only_past_the_break_even_time(
    gap_s: int, price: float, sleeps: bool
) -> None:
    # The second request's gap to the end is long: both choices rest there alike.
    ledger = lazy([0, gap_s * S], end_us=gap_s * S + H, price=price, trips=LEVEL_1)
    assert ledger.cold == int(sleeps)
    assert ledger.wait_total_s == (1.0 if sleeps else 0.0)
    assert ledger.sleeps == 1 + int(sleeps)  # the tail's sleep, and the gap's


def test_the_requests_that_arrive_while_it_wakes_wait_with_the_first() -> None:
    # Asleep at level 1 after the first request; three more arrive within its 1 s wake.
    at = [0, 600 * S, 600 * S + 200_000, 600 * S + 700_000, 600 * S + S]
    ledger = lazy(at, end_us=700 * S, price=0.01, trips=LEVEL_1)
    assert ledger.cold == 3
    assert ledger.waits_s == (1.0, 0.8, 0.3)  # the fourth arrives as it is up: warm
    assert ledger.wakes == 1


def test_it_rests_deeper_where_the_gap_pays_for_the_dearer_wake() -> None:
    # A day's gap: a stop's start (60 s) costs 80 x 60 s + W x 60 request-s, and frees 1 GiB
    # more than level 2 for a day: at W = 0.01 it stops.
    ledger = lazy([0, 24 * H], end_us=24 * H + 1, price=0.01)
    assert (ledger.stops, ledger.starts) == (1, 1)
    assert ledger.wait_total_s == 60.0


def test_a_price_that_is_not_one_is_refused() -> None:
    with pytest.raises(ValueError, match="price"):
        lazy([0], end_us=H, price=-1.0)


arrivals = st.lists(st.integers(min_value=0, max_value=4 * 3600 * 10), min_size=0, max_size=25)
prices = st.sampled_from([0.0, *STANDARD_PRICES])


@settings(max_examples=150, deadline=None)
@given(
    tenths=arrivals,
    price=prices,
    idle_s=st.integers(min_value=0, max_value=1800),
    rest=st.sampled_from([Phase.ASLEEP_1, Phase.ASLEEP_2, Phase.STOPPED]),
)
def test_no_policy_that_wakes_on_arrival_costs_less_than_it(
    tenths: list[int], price: float, idle_s: int, rest: Phase
) -> None:
    # Any idle timeout, replayed with the same fixed durations, is one of its options.
    at = np.asarray(sorted(t * S // 10 for t in tenths), dtype=np.int64)
    end = 4 * H + S
    best = lazy(at.tolist(), end_us=end, price=price)
    anchor = replay_idle_timeout(
        at, IdleTimeout(name="t", idle_us=idle_s * S, rest=rest), TIMES, start_us=0,
        end_us=end, rng=np.random.default_rng(0),
    )  # fmt: skip
    theirs = Ledger.of("a", FOOT, anchor.timeline, at, waits_us=anchor.waits_us)
    assert best.cost(price) <= theirs.cost(price) + 1e-9
    assert 0 <= best.held_gib_h <= best.always_on_gib_h + 1e-9
    assert best.cost(price) <= best.always_on_gib_h + 1e-9  # staying up is an option


@settings(max_examples=300, deadline=None)
@given(tenths=arrivals, price=st.sampled_from([0.1, 1.0]))
def test_where_a_second_of_waiting_is_worth_the_awake_memory_the_oracle_costs_no_more(
    tenths: list[int], price: float
) -> None:
    # W x 3,600 >= the awake GiB (80 / 3,600 = 0.022 GiB-h a request-second): what the lazy
    # oracle saves by waking late (at most the awake memory for the wake's length) its wait
    # pays more for, and the oracle (waking ahead, nobody waits) costs no more. Up to a
    # microsecond of the awake memory a request: the oracle's request holds its server one
    # after it is served, the lazy oracle's woken ones are served as the wake ends.
    at = np.asarray(sorted(t * S // 10 for t in tenths), dtype=np.int64)
    end = 4 * H + S
    mine = lazy(at.tolist(), end_us=end, price=price)
    oracle = Ledger.of("a", FOOT, oracle_timeline(at, FOOT, TRIPS, start_us=0, end_us=end), at)
    assert oracle.cost(price) <= mine.cost(price) + FOOT.awake_gib * (len(at) + 1) / H
    assert oracle.wait_total_s == 0.0


def test_where_waiting_is_cheap_it_can_cost_less_than_the_oracle() -> None:
    # Requests at 2.1 s and 3.1 s. The oracle cannot fit level 1's 3 s round trip before the
    # first and stays up. The lazy oracle sleeps 0.1 s, and its wake (the same awake memory
    # the oracle holds) serves the second request as it arrives: the first waits 1 s, free at
    # W = 0. So "the oracle never costs more" holds only at prices like 0.1 and 1.
    at = np.asarray([2_100_000, 3_100_000], dtype=np.int64)
    oracle = Ledger.of("a", FOOT, oracle_timeline(at, FOOT, LEVEL_1, start_us=0, end_us=H), at)
    mine = lazy(at.tolist(), end_us=H, price=0.0, trips=LEVEL_1)
    assert mine.wait_total_s == 1.0
    assert mine.cost(0.0) < oracle.cost(0.0)
