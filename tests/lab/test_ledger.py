"""The ledger: held, freed and cold in DESIGN.md's words, on timelines built by hand."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dgxmm.lab import Footprint, Ledger, Phase, Timeline, share_of_oracle
from dgxmm.time_units import HOUR_US, MINUTE_US, SECOND_US

H = HOUR_US
FOOT = Footprint(awake_gib=80.0, level_1_gib=2.0, level_2_gib=1.0)


def arrivals(*at_us: int) -> np.ndarray:
    return np.asarray(at_us, dtype=np.int64)


def test_always_on_frees_nothing_and_meets_no_cold_request() -> None:
    ledger = Ledger.of("a", FOOT, Timeline.always(0, 4 * H), arrivals(H, 2 * H))
    assert (ledger.held_awake_gib_h, ledger.held_asleep_gib_h) == (320.0, 0.0)
    assert (ledger.freed_gib_h, ledger.cold, ledger.cold_share) == (0.0, 0, 0.0)


def test_it_counts_held_by_phase_and_a_transition_holds_the_awake_memory() -> None:
    # Awake 1 h, going down 1 h, asleep (level 1) 1 h, waking 1 h: 3 h of the awake memory.
    timeline = Timeline.of(
        0,
        4 * H,
        [(0, Phase.AWAKE), (H, Phase.GOING_DOWN), (2 * H, Phase.ASLEEP_1), (3 * H, Phase.WAKING)],
    )
    ledger = Ledger.of("a", FOOT, timeline, arrivals())
    assert ledger.held_awake_gib_h == 240.0
    assert ledger.held_asleep_gib_h == 2.0
    assert ledger.freed_gib_h == 320.0 - 242.0
    assert (ledger.sleeps, ledger.wakes, ledger.starts, ledger.stops) == (1, 1, 0, 0)


def test_a_request_is_cold_in_every_phase_but_awake_and_warm_at_the_instant_it_wakes() -> None:
    timeline = Timeline.of(
        0,
        5 * H,
        [
            (0, Phase.AWAKE),
            (H, Phase.GOING_DOWN),
            (H + MINUTE_US, Phase.STOPPED),
            (3 * H, Phase.STARTING),
            (3 * H + MINUTE_US, Phase.AWAKE),
        ],
    )
    sent = arrivals(0, H, H + MINUTE_US, 2 * H, 3 * H, 3 * H + MINUTE_US, 4 * H)
    waits = np.asarray([0, 5, 4, 3_600, 60, 0, 0], dtype=np.int64) * SECOND_US
    ledger = Ledger.of("a", FOOT, timeline, sent, waits_us=waits)
    assert ledger.cold == 4  # going down, stopped (twice), starting
    assert ledger.waits_s == (5.0, 4.0, 3_600.0, 60.0)
    # Quantiles are waits that happened (the higher one between two): 4, 5, 60, 3,600.
    assert (ledger.wait_s(0.5), ledger.wait_s(0.99), max(ledger.waits_s)) == (
        60.0,
        3_600.0,
        3_600.0,
    )
    assert (ledger.starts, ledger.stops) == (1, 1)
    assert ledger.held_asleep_gib_h == 0.0  # stopped holds nothing


def test_a_refused_request_is_cold_and_left_out_of_the_waits() -> None:
    timeline = Timeline.of(0, 2 * H, [(0, Phase.ASLEEP_1)])
    waits = np.asarray([2 * SECOND_US, -1], dtype=np.int64)
    ledger = Ledger.of(
        "a", FOOT, timeline, arrivals(10, 20), waits_us=waits, refused={"does_not_fit": 1}
    )
    assert (ledger.cold, ledger.waits_s, dict(ledger.refused)) == (2, (2.0,), {"does_not_fit": 1})
    assert ledger.to_json()["refused"] == {"does_not_fit": 1}


def wait_ledger(refused: int = 0) -> Ledger:
    """Asleep the first hour (3 requests wait 1, 2 and 30 s for a wake), awake the second
    (197 requests served at once, ``refused`` of them refused instead)."""
    timeline = Timeline.of(0, 2 * H, [(0, Phase.ASLEEP_1), (H, Phase.AWAKE)])
    cold = [10, 20, 30]
    warm = [H + 1_000 * i for i in range(197)]
    waits = [SECOND_US, 2 * SECOND_US, 30 * SECOND_US] + [0] * 197
    if refused:  # a refused one met it asleep too: one more cold arrival, wait -1
        cold, warm, waits = (
            cold + [40] * refused,
            warm[refused:],
            waits[:3] + [-1] * refused + [0] * (197 - refused),
        )
    return Ledger.of(
        "a", FOOT, timeline, arrivals(*cold, *warm), waits_us=np.asarray(waits, dtype=np.int64),
        refused={"does_not_fit": refused} if refused else None,
    )  # fmt: skip


def test_the_wait_figures_count_every_request_a_warm_one_as_zero() -> None:
    ledger = wait_ledger()
    assert (ledger.requests, ledger.cold) == (200, 3)
    assert ledger.wait_total_s == 33.0
    assert ledger.wait_mean_s == pytest.approx(33.0 / 200)
    # Over the cold ones the p99 is the 30 s wait; over all 200 (197 zeros, then 1, 2, 30) the
    # nearest rank above 0.99 x 199 = 197.01 is the 199th: 2 s.
    assert ledger.wait_s(0.99) == 30.0
    assert ledger.wait_all_s(0.99) == 2.0
    figures = ledger.to_json()
    assert (figures["wait_total_s"], figures["wait_p99_all_s"]) == (33.0, 2.0)
    assert figures["wait_mean_s"] == pytest.approx(0.165)


def test_a_refused_request_is_left_out_of_the_mean_wait() -> None:
    ledger = wait_ledger(refused=1)
    assert (ledger.requests, ledger.served, ledger.cold) == (200, 199, 4)
    assert ledger.wait_mean_s == pytest.approx(33.0 / 199)


def test_the_cost_is_the_memory_held_plus_the_price_of_the_wait() -> None:
    ledger = wait_ledger()
    assert ledger.held_gib_h == pytest.approx(82.0)  # an hour at 2 GiB, an hour at 80
    assert ledger.cost(0.0) == pytest.approx(82.0)
    assert ledger.cost(0.1) == pytest.approx(82.0 + 3.3)
    assert ledger.cost(1.0) == pytest.approx(115.0)


@pytest.mark.parametrize(
    "price", [-0.1, float("nan"), float("inf")], ids=["negative", "nan", "inf"]
)
def test_a_price_that_is_not_one_is_refused(price: float) -> None:
    with pytest.raises(ValueError, match="price"):
        wait_ledger().cost(price)


def test_a_ledger_without_requests_waited_nothing() -> None:
    ledger = Ledger.of("a", FOOT, Timeline.always(0, H), arrivals())
    assert (ledger.wait_total_s, ledger.wait_mean_s, ledger.wait_all_s(0.99)) == (0.0, 0.0, 0.0)


def test_the_share_of_the_oracle_divides_freed_by_freed() -> None:
    oracle = Ledger.of("a", FOOT, Timeline.of(0, 2 * H, [(0, Phase.ASLEEP_1)]), arrivals())
    half = Ledger.of(
        "a", FOOT, Timeline.of(0, 2 * H, [(0, Phase.AWAKE), (H, Phase.ASLEEP_1)]), arrivals()
    )
    assert share_of_oracle(half, oracle) == pytest.approx(0.5)
    assert share_of_oracle(oracle, oracle) == 1.0


@pytest.mark.parametrize(
    ("awake", "level_1", "level_2"),
    [
        pytest.param(10.0, 11.0, 1.0, id="asleep-above-awake"),
        pytest.param(10.0, 1.0, 2.0, id="level-2-above-level-1"),
        pytest.param(10.0, 1.0, -1.0, id="negative"),
    ],
)
def test_a_footprint_that_cannot_be_is_refused(
    awake: float, level_1: float, level_2: float
) -> None:
    with pytest.raises(ValueError, match="footprint"):
        Footprint(awake_gib=awake, level_1_gib=level_1, level_2_gib=level_2)


def test_a_timeline_out_of_order_is_refused() -> None:
    with pytest.raises(ValueError, match="in order"):
        Timeline.of(0, H, [(0, Phase.AWAKE), (10, Phase.ASLEEP_1), (5, Phase.AWAKE)])


def test_a_way_down_whose_rest_lasted_no_time_still_counts() -> None:
    # A request held behind the shut door brings it up the instant it is down: the asleep
    # and stopped phases last no time and joined() drops them; the sleep and stop still
    # happened (the fidelity test counted 3 sleeps in the product against 2 here before).
    timeline = Timeline.joined(
        0,
        8 * H,
        [
            (0, Phase.AWAKE), (H, Phase.GOING_DOWN), (2 * H, Phase.ASLEEP_1),
            (2 * H, Phase.WAKING), (3 * H, Phase.AWAKE), (4 * H, Phase.GOING_DOWN),
            (5 * H, Phase.STOPPED), (5 * H, Phase.STARTING), (6 * H, Phase.AWAKE),
            (7 * H, Phase.GOING_DOWN), (7 * H + 1, Phase.ASLEEP_1), (7 * H + 2, Phase.ASLEEP_2),
        ],
    )  # fmt: skip
    assert Phase.ASLEEP_1 not in [phase for _, phase in timeline.phases()[:4]]
    ledger = Ledger.of("a", FOOT, timeline, arrivals())
    assert (ledger.sleeps, ledger.wakes, ledger.stops, ledger.starts) == (3, 1, 1, 1)


def test_a_stop_of_a_sleeper_that_lasted_no_time_still_counts() -> None:
    # Asleep, then stopped by the ladder, and a request during the stop starts it the
    # instant it is down: no stopped phase is left, and the stop is read from the start.
    timeline = Timeline.joined(
        0,
        4 * H,
        [(0, Phase.AWAKE), (H, Phase.GOING_DOWN), (H + 1, Phase.ASLEEP_1),
         (2 * H, Phase.STOPPED), (2 * H, Phase.STARTING), (3 * H, Phase.AWAKE)],
    )  # fmt: skip
    ledger = Ledger.of("a", FOOT, timeline, arrivals())
    assert (ledger.sleeps, ledger.stops, ledger.starts) == (1, 1, 1)


@given(
    steps=st.lists(
        st.tuples(st.integers(min_value=0, max_value=3), st.sampled_from(list(Phase))),
        min_size=1,
        max_size=30,
    )
)
def test_joined_keeps_what_dropping_pairs_one_by_one_keeps(steps: list[tuple[int, Phase]]) -> None:
    phases: list[tuple[int, Phase]] = []
    at = 0
    for gap, phase in steps:
        at += gap if phases else 0
        phases.append((at, phase))
    kept: list[tuple[int, Phase]] = []  # the rule, pair by pair, as it was first written
    for when, phase in phases:
        if kept and kept[-1][0] == when:
            kept.pop()
        if kept and kept[-1][1] is phase:
            continue
        kept.append((when, phase))
    assert Timeline.joined(0, at + 1, phases).phases() == kept
