"""A deployment's trade picture (issue 42, point 5): every series replayed on its own weeks,
the same inputs giving the same points, and a series added as one entry."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from dgxmm.clock import to_us
from dgxmm.fleet import Gpu
from dgxmm.lab.fleetfile import LabDeployment, LabFleet
from dgxmm.lab.ledger import Ledger, Timeline
from dgxmm.lab.trade import (
    LADDER_STEPS_S,
    PRICED_PRICES,
    SWEEPS,
    Sweep,
    TradeInput,
    trade_points,
)
from dgxmm.time_units import DAY_US, MINUTE_US

START = to_us(datetime(2026, 6, 1, tzinfo=UTC))  # a Monday


def office_week(weeks: int = 1) -> np.ndarray:
    """A request every 4 minutes, 09:00 to 17:00 on weekdays, with a quiet lunch hour."""
    found = []
    for day in range(7 * weeks):
        if day % 7 >= 5:
            continue
        for minute in range(9 * 60, 17 * 60, 4):
            if 12 * 60 <= minute < 13 * 60:
                continue
            found.append(START + day * DAY_US + minute * MINUTE_US)
    return np.asarray(found, dtype=np.int64)


def given(price: float = 0.1, budget_price: float | None = None) -> TradeInput:
    deployment = LabDeployment(
        name="chat", model="m", gpus=(0,), memory_gib_awake=72.0, memory_gib_asleep=2.0,
        memory_gib_asleep_2=1.0, sleep_level=1, priority=50, time_zone="UTC",
    )  # fmt: skip
    fleet = LabFleet(gpus=(Gpu(index=0, name="GPU", memory_gib=80.0),), deployments=(deployment,))
    return TradeInput(
        deployment=deployment, fleet=fleet, arrivals_us=office_week(), start_us=START,
        end_us=START + 7 * DAY_US, price=price, budget_price=budget_price,
    )  # fmt: skip


def test_every_series_is_replayed_on_the_deployments_own_requests() -> None:
    points = trade_points(given())
    assert [p.series for p in points] == (
        ["anchors"] * 3
        + ["ladder"] * len(LADDER_STEPS_S)
        + ["priced"] * len(PRICED_PRICES)
        + ["oracles"] * 2
    )  # fmt: skip  (no budget: no budget's point)
    assert [p.label for p in points if p.series == "ladder"] == [
        f"first step {s} s" for s in LADDER_STEPS_S
    ]
    by_label = {p.label: p for p in points}
    oracle, lazy = by_label["oracle"], by_label["lazy oracle at 0.1"]
    # The oracle wakes in time: nobody waits, and it frees more than a week of nights alone.
    assert (oracle.wait_mean_s, oracle.wait_p99_all_s) == (0.0, 0.0)
    assert oracle.freed_gib_h > 72.0 * 16 * 5
    # Knative's 90 s stop makes requests wait a start; the lazy oracle prices its waits.
    assert (
        by_label["knative-scale-to-zero"].wait_mean_s
        > by_label["llama-swap-ttl-sleep-5m"].wait_mean_s
    )
    assert lazy.cost <= min(p.cost for p in points if p.series == "anchors")
    for point in points:
        assert point.cost == pytest.approx(
            72.0 * 7 * 24 - point.freed_gib_h + 0.1 * point.wait_mean_s * len(office_week()),
            rel=1e-6,
        )


def test_priced_is_swept_over_prices_and_the_budgets_point_is_its_replay_at_that_price() -> None:
    points = trade_points(given(budget_price=0.3))
    priced = {p.label: p for p in points if p.series == "priced"}
    assert list(priced) == [f"at {w:g}" for w in PRICED_PRICES]
    # Waiting dear holds on: at 1 people wait less than at 0.01, and less is freed.
    cheap, dear = priced["at 0.01"], priced["at 1"]
    assert dear.wait_mean_s < cheap.wait_mean_s
    assert dear.freed_gib_h < cheap.freed_gib_h
    (budget,) = [p for p in points if p.series == "budget"]
    assert budget.label == "budget at 0.3"
    assert (budget.freed_gib_h, budget.wait_mean_s, budget.wait_p99_all_s) == (
        priced["at 0.3"].freed_gib_h, priced["at 0.3"].wait_mean_s,
        priced["at 0.3"].wait_p99_all_s,
    )  # fmt: skip
    assert [p.series for p in points][-3:] == ["budget", "oracles", "oracles"]


def test_the_same_weeks_give_the_same_picture_and_a_price_moves_only_the_costs() -> None:
    first, again = trade_points(given()), trade_points(given())
    assert first == again
    dear = trade_points(given(price=1.0))
    for cheap_point, dear_point in zip(first, dear, strict=True):
        if dear_point.series == "oracles" and dear_point.label != "oracle":
            continue  # the lazy oracle picks its rests at the price
        assert (dear_point.freed_gib_h, dear_point.wait_mean_s) == (
            cheap_point.freed_gib_h, cheap_point.wait_mean_s,
        )  # fmt: skip
        assert dear_point.cost >= cheap_point.cost


def test_a_series_is_one_more_entry() -> None:
    inputs = given()

    def always_on(replayed: TradeInput) -> list[tuple[str, Ledger]]:
        timeline = Timeline.always(replayed.start_us, replayed.end_us)
        return [("always on", replayed.ledger(timeline))]

    points = trade_points(inputs, (*SWEEPS, Sweep(name="always", points=always_on)))
    (added,) = [p for p in points if p.series == "always"]
    assert (added.label, added.freed_gib_h, added.wait_mean_s) == ("always on", 0.0, 0.0)
    assert added.cost == pytest.approx(72.0 * 7 * 24)
