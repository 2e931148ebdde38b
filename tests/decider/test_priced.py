"""The priced idle policy's pure functions (issue 42, point 3): the break-even envelope and
its rungs, the hour's scaling, the wake ahead of a regular start."""

from __future__ import annotations

import itertools
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import at

from dgxmm.decider.idle import IdleStep
from dgxmm.decider.idle.priced import (
    MAX_FACTOR,
    MIN_FACTOR,
    PRODUCT_PRICE,
    HourExpectation,
    Level,
    PricedCosts,
    break_even_rungs,
    hour_factor,
    hour_of_week_at,
    pre_wake_at,
    priced_ladder,
    rate_before,
)
from dgxmm.lab.ledger import DEFAULT_PRICE

S = 1_000_000
BERLIN = ZoneInfo("Europe/Berlin")


def costs(
    *,
    wake_1: float = 0.8,
    wake_2: float = 2.6,
    start: float = 48.0,
    held_1: float = 2.0,
    held_2: float = 1.0,
    awake: float = 72.0,
) -> PricedCosts:
    """The savings benchmark's deployment, with vLLM's published medians."""
    return PricedCosts(
        awake_gib=awake,
        levels=(
            Level(step=IdleStep.SLEEP, held_gib=held_1, down_us=1 * S, up_us=round(wake_1 * S)),
            Level(step=IdleStep.DEEPEN, held_gib=held_2, down_us=S // 3, up_us=round(wake_2 * S)),
            Level(step=IdleStep.STOP, held_gib=0.0, down_us=3 * S, up_us=round(start * S)),
        ),
    )


def test_it_is_the_ski_rental_break_even_with_one_level() -> None:
    one = PricedCosts(
        awake_gib=72.0, levels=(Level(step=IdleStep.SLEEP, held_gib=2.0, down_us=S, up_us=S),)
    )
    (rung,) = break_even_rungs(one, price=0.1)
    # tau = d + u + W x wait / Delta: 2 s + 0.1 GiB-h x 1 s / 70 GiB = 2 s + 360/70 s
    assert rung.step is IdleStep.SLEEP
    assert rung.after_us == pytest.approx((2 + 360 / 70) * S, abs=1)


def test_with_a_free_wait_the_rung_is_the_round_trip() -> None:
    one = PricedCosts(
        awake_gib=72.0,
        levels=(Level(step=IdleStep.STOP, held_gib=0.0, down_us=3 * S, up_us=48 * S),),
    )
    assert break_even_rungs(one, price=0.0)[0].after_us == 51 * S


def test_a_dear_wait_skips_the_stop_and_a_cheap_one_takes_every_level() -> None:
    cheap = break_even_rungs(costs(), price=0.01)
    assert [rung.step for rung in cheap] == [IdleStep.SLEEP, IdleStep.DEEPEN, IdleStep.STOP]
    # At 1 GiB-h a request-second a start's 48 s wait is worth 48 GiB-h: the stop comes only
    # after the 1 GiB level 2 holds was held for two days.
    dear = priced_ladder(costs(), price=1.0)
    assert dear.sleep_after_us is not None
    assert dear.sleep_after_us < 60 * S
    assert dear.stop_after_us is not None
    assert dear.stop_after_us > 40 * 3600 * S


def test_a_level_that_frees_nothing_is_never_chosen() -> None:
    found = break_even_rungs(costs(held_1=72.0), price=0.1)
    assert IdleStep.SLEEP not in [rung.step for rung in found]


def test_a_level_never_lowest_is_skipped() -> None:
    # Level 2 frees only 0.1 GiB more than level 1 and costs a much longer wake: never lowest.
    found = break_even_rungs(costs(held_2=1.9, wake_2=30.0), price=0.1)
    assert [rung.step for rung in found] == [IdleStep.SLEEP, IdleStep.STOP]


@given(
    price=st.floats(0, 10),
    more=st.floats(0.001, 10),
    wake=st.floats(0.05, 60),
    held=st.floats(0, 70),
)
def test_rungs_increase_with_the_price(price: float, more: float, wake: float, held: float) -> None:
    lower = priced_ladder(costs(wake_1=wake, held_1=held), price=price)
    higher = priced_ladder(costs(wake_1=wake, held_1=held), price=price + more)
    low, high = lower.first_after_us(), higher.first_after_us()
    assert low is not None
    assert high is not None
    assert high >= low


@given(wake=st.floats(0.05, 30), slower=st.floats(0.01, 30), price=st.floats(0, 10))
def test_the_first_rung_increases_with_the_wake_time(
    wake: float, slower: float, price: float
) -> None:
    one = PricedCosts(
        awake_gib=72.0,
        levels=(Level(step=IdleStep.SLEEP, held_gib=2.0, down_us=S, up_us=round(wake * S)),),
    )
    longer = PricedCosts(
        awake_gib=72.0,
        levels=(
            Level(step=IdleStep.SLEEP, held_gib=2.0, down_us=S, up_us=round((wake + slower) * S)),
        ),
    )
    assert (
        break_even_rungs(longer, price=price)[0].after_us
        >= break_even_rungs(one, price=price)[0].after_us
    )


@given(
    price=st.floats(0, 10),
    held_1=st.floats(0, 72),
    held_2=st.floats(0, 72),
    wake_1=st.floats(0, 100),
    wake_2=st.floats(0, 100),
)
def test_the_rungs_are_a_ladder_in_order_and_each_frees_more(
    price: float, held_1: float, held_2: float, wake_1: float, wake_2: float
) -> None:
    given_costs = costs(held_1=held_1, held_2=held_2, wake_1=wake_1, wake_2=wake_2)
    rungs = break_even_rungs(given_costs, price=price)
    held = {level.step: level.held_gib for level in given_costs.levels}
    afters = [rung.after_us for rung in rungs]
    assert afters == sorted(afters)
    assert len(set(afters)) == len(afters)
    assert afters[0] >= S  # not before the pulse's tick
    frees = [held[rung.step] for rung in rungs]
    assert all(later < earlier for earlier, later in itertools.pairwise(frees))
    assert all(held[rung.step] < 72.0 for rung in rungs)


@pytest.mark.parametrize(
    ("per_hour", "first_s", "factor"),
    [(0.0, 60, MIN_FACTOR), (None, 60, 1.0), (60.0, 60, 1.0), (600.0, 60, MAX_FACTOR),
     (30.0, 60, 0.5)],
    ids=["quiet", "no-profile", "one-expected", "busy", "between"],
)  # fmt: skip
def test_the_hour_factor_is_the_requests_expected_within_the_first_rung(
    per_hour: float | None, first_s: int, factor: float
) -> None:
    assert hour_factor(per_hour, first_s * S) == pytest.approx(factor)


@given(quiet=st.floats(0, 100), busier=st.floats(0, 1000))
def test_a_busy_hour_holds_on_and_a_quiet_hour_goes_down_sooner(
    quiet: float, busier: float
) -> None:
    at_quiet = priced_ladder(
        costs(), price=1.0, hour=HourExpectation(requests=quiet, active_share=1)
    )
    at_busy = priced_ladder(
        costs(), price=1.0, hour=HourExpectation(requests=quiet + busier, active_share=1)
    )
    assert at_busy.sleep_after_us is not None
    assert at_quiet.sleep_after_us is not None
    assert at_busy.sleep_after_us >= at_quiet.sleep_after_us


def test_a_quiet_hour_brings_the_rungs_down_to_a_quarter() -> None:
    plain = priced_ladder(costs(), price=1.0)
    quiet = priced_ladder(costs(), price=1.0, hour=HourExpectation(requests=0, active_share=0))
    assert plain.sleep_after_us is not None
    assert quiet.sleep_after_us is not None
    assert quiet.sleep_after_us == pytest.approx(plain.sleep_after_us / 4, abs=1)


def office_week(busy_from: int = 8) -> list[HourExpectation]:
    """Weekdays busy from ``busy_from`` to 18:00 at 20 an hour, quiet otherwise."""
    hours = []
    for hour in range(168):
        day, clock = divmod(hour, 24)
        busy = day < 5 and busy_from <= clock < 18
        hours.append(HourExpectation(requests=20.0 if busy else 0.0, active_share=float(busy)))
    return hours


def test_it_wakes_ahead_of_a_regular_start_by_the_wake_time_when_it_pays() -> None:
    stopped = costs().levels[2]
    now = at("2026-06-03T07:30:00+02:00")  # a Wednesday
    begins = pre_wake_at(now, BERLIN, office_week(), costs=costs(), resting=stopped, price=1.0)
    assert begins == at("2026-06-03T08:00:00+02:00") - 48 * S


def test_it_does_not_wake_ahead_where_it_does_not_pay_or_no_start_is_regular() -> None:
    asleep = costs().levels[0]
    now = at("2026-06-03T07:30:00+02:00")
    # A level-1 wake's 0.8 s is worth less than 70 GiB held for the 3 minutes until the
    # first request of an hour expecting 20.
    assert pre_wake_at(now, BERLIN, office_week(), costs=costs(), resting=asleep, price=1.0) is None
    stopped = costs().levels[2]
    mid_morning = at("2026-06-03T09:30:00+02:00")  # 10:00 follows a busy hour
    assert (
        pre_wake_at(mid_morning, BERLIN, office_week(), costs=costs(), resting=stopped, price=1.0)
        is None
    )
    assert pre_wake_at(now, BERLIN, [], costs=costs(), resting=stopped, price=1.0) is None


def test_the_hour_of_the_week_is_local() -> None:
    assert hour_of_week_at(at("2026-06-01T00:30:00+02:00"), BERLIN) == 0  # a Monday
    assert hour_of_week_at(at("2026-06-07T23:59:00+02:00"), BERLIN) == 167


def test_the_product_decides_at_the_labs_default_price() -> None:
    assert PRODUCT_PRICE == DEFAULT_PRICE


def test_the_rate_before_idling_counts_the_ten_minutes_before_the_last_request() -> None:
    last = 3600 * S
    arrivals = [last - 11 * 60 * S, last - 9 * 60 * S, last - 60 * S, last]
    assert rate_before(arrivals, last) == pytest.approx(12.0)  # 2 in 10 minutes, not the last
    assert rate_before(arrivals, None) is None
    assert rate_before([last], last) == 0.0


@given(hourly=st.floats(0, 100), recent=st.floats(0, 1000))
def test_a_burst_the_hours_mean_hides_holds_the_rungs_on(hourly: float, recent: float) -> None:
    hour = HourExpectation(requests=hourly, active_share=1)
    by_hour = priced_ladder(costs(), price=1.0, hour=hour)
    with_burst = priced_ladder(costs(), price=1.0, hour=hour, recent_per_hour=recent)
    assert by_hour.sleep_after_us is not None
    assert with_burst.sleep_after_us is not None
    assert with_burst.sleep_after_us >= by_hour.sleep_after_us
