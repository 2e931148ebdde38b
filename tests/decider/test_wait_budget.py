"""The price that spends a wait budget (issue 42, point 4): the search over prices with a fake
replay (``find_price``), and the whole through the lab's real replay of a deployment's own
recorded weeks (``WaitBudgets``, ``budget_traffic``), recorded and read back by the priced
policy's inputs (``Pricing``)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from decider.traffickit import add_deployment, add_minutes, working_hours_requests
from hypothesis import given, settings
from hypothesis import strategies as st
from support import at

from dgxmm.clock import ManualClock
from dgxmm.decider.idle import PRODUCT_PRICE, BudgetOutcome, Trial, WaitBudgets, find_price
from dgxmm.decider.idle.budget import CHEAPEST_PRICE, DEAREST_PRICE, MAX_REPLAYS
from dgxmm.decider.idle.pricing import Pricing
from dgxmm.decider.schedules.service import ScheduleService
from dgxmm.fleet import Fleet, Gpu, GpuInventory, InventorySource, WaitBudget
from dgxmm.jobs import CronSchedule
from dgxmm.lab.backtest import deployment_alone
from dgxmm.lab.trade import TradeInput, budget_traffic, priced_ledger, recorded_span
from dgxmm.store import Store
from dgxmm.time_units import MINUTE_US

ZONE = "Europe/Berlin"


@dataclass
class Fake:
    """A replay whose mean wait falls as the price rises: ``scale / price`` ms."""

    scale_ms: float
    calls: list[float]

    def __call__(self, price: float) -> Trial:
        self.calls.append(price)
        return Trial(
            price=price,
            freed_gib_h=1000 - 100 * math.log10(price),  # cheaper waiting frees more
            wait_mean_s=self.scale_ms / price / 1000,
            wait_p99_all_s=self.scale_ms / price / 100,
        )


def test_it_takes_the_cheapest_price_within_the_budget_near_the_boundary() -> None:
    fake = Fake(scale_ms=5.0, calls=[])  # 50 ms at 0.1
    found = find_price(fake, WaitBudget(mean_ms=50))
    assert found.met
    assert len(fake.calls) == MAX_REPLAYS
    assert found.chosen.wait_mean_s * 1000 <= 50
    assert 0.1 <= found.chosen.price <= 0.1 * 1.06  # the boundary, to 5 % (3 digits kept)
    assert found.trials[0].price == DEAREST_PRICE
    assert found.trials[1].price == CHEAPEST_PRICE


def test_a_budget_no_price_meets_takes_the_dearest_and_says_so() -> None:
    fake = Fake(scale_ms=50_000.0, calls=[])  # 500 ms even at 100
    found = find_price(fake, WaitBudget(mean_ms=50))
    assert not found.met
    assert found.chosen.price == DEAREST_PRICE
    assert fake.calls == [DEAREST_PRICE]  # nothing cheaper can wait less


def test_a_budget_the_cheapest_price_meets_takes_it_in_two_replays() -> None:
    fake = Fake(scale_ms=0.001, calls=[])
    found = find_price(fake, WaitBudget(mean_ms=50, p99_s=5))
    assert (found.met, found.chosen.price, fake.calls) == (True, CHEAPEST_PRICE, [100.0, 0.001])


def test_the_p99_binds_where_it_is_the_tighter_limit() -> None:
    fake = Fake(scale_ms=5.0, calls=[])  # p99 = 10x the mean: 0.5 s at 0.1
    found = find_price(fake, WaitBudget(mean_ms=1000, p99_s=0.05))
    assert found.met
    assert found.chosen.wait_p99_all_s <= 0.05
    assert 1.0 <= found.chosen.price <= 1.06


def test_of_the_prices_within_it_takes_the_one_that_freed_most() -> None:
    # Not monotone: the dearest price, tried first, freed the most (a replay's draws differ).
    def replay(price: float) -> Trial:
        freed = 900.0 if price == DEAREST_PRICE else 100.0
        return Trial(price=price, freed_gib_h=freed, wait_mean_s=0.01 / price, wait_p99_all_s=0)

    found = find_price(replay, WaitBudget(mean_ms=50))
    assert found.met
    assert len(found.trials) == MAX_REPLAYS  # the boundary (0.2) was searched all the same
    assert (found.chosen.price, found.chosen.freed_gib_h) == (DEAREST_PRICE, 900.0)


@settings(max_examples=200, deadline=None)
@given(
    scale=st.floats(min_value=1e-4, max_value=1e5),
    mean_ms=st.floats(min_value=0, max_value=600_000),
)
def test_any_monotone_replay_gives_a_price_within_the_budget_in_bounded_replays(
    scale: float, mean_ms: float
) -> None:
    fake = Fake(scale_ms=scale, calls=[])
    found = find_price(fake, WaitBudget(mean_ms=mean_ms))
    assert len(fake.calls) <= MAX_REPLAYS
    assert found.met == (scale / DEAREST_PRICE <= mean_ms)
    if found.met:
        assert found.chosen.wait_mean_s * 1000 <= mean_ms
        boundary = max(scale / mean_ms if mean_ms else math.inf, CHEAPEST_PRICE)
        # Within 5 % of the least price that meets it (eight halvings of five decades).
        assert found.chosen.price <= boundary * 1.06


# -- the whole: the lab's real replay of recorded weeks ------------------------------------


@dataclass
class Env:
    store: Store
    fleet: Fleet
    schedules: ScheduleService
    budgets: WaitBudgets
    clock: ManualClock
    deployment: int


@pytest.fixture
def env(profile_target: str, tmp_path: Path) -> Iterator[Env]:
    """The services on SQLite and on PostgreSQL (``profile_target``: each test runs on both)."""
    clock = ManualClock(at("2026-06-29T12:00:00+02:00"))  # a Monday
    store = Store.open(profile_target, clock=clock, data_dir=tmp_path / "data")
    fleet = Fleet(
        store,
        inventory=GpuInventory(
            gpus=(Gpu(index=0, name="H100", memory_gib=80.0),),
            source=InventorySource.CONFIGURATION,
        ),
        clock=clock,
    )
    schedules = ScheduleService(store, fleet, clock=clock)
    budgets = WaitBudgets(
        store, fleet, replay=lambda d, now: budget_traffic(fleet, schedules, d, now), clock=clock
    )
    deployment = add_deployment(store, "office", zone=ZONE, awake=72.0, asleep=2.0)
    now = clock.now_us()
    add_minutes(
        store,
        deployment,
        working_hours_requests(ZONE, now - 30 * 86_400_000_000, now, every_us=4 * MINUTE_US),
    )
    yield Env(store, fleet, schedules, budgets, clock, deployment)
    fleet.close()
    store.close()


def test_the_daily_refresh_records_a_price_a_direct_replay_confirms(env: Env) -> None:
    fleet, clock = env.fleet, env.clock
    fleet.deployments.update(
        env.deployment, "user:alice", idle_policy="priced", idle_wait_budget={"mean_ms": 200}
    )
    fleet.deployments.update(env.deployment, "user:alice", name="office")  # no change
    deployment = fleet.deployments.get(env.deployment)
    pricing = Pricing(env.store, fleet)
    assert pricing.price(deployment, clock.now_us()) == PRODUCT_PRICE  # not computed yet

    made = env.budgets.refresh(now_us=clock.now_us())
    assert [choice.budget for choice in made] == [WaitBudget(mean_ms=200)]
    recorded = env.budgets.choice(env.deployment)
    assert recorded is not None
    assert recorded.to_json() == made[0].to_json()
    assert recorded.outcome is BudgetOutcome.MET
    assert recorded.chosen is not None
    assert recorded.chosen.wait_mean_s <= 0.2
    assert 2 <= len(recorded.trials) <= MAX_REPLAYS
    assert recorded.requests > 1000
    assert recorded.end_us - recorded.start_us == 28 * 86_400_000_000
    # The chosen point is what the lab's replay of the same weeks at that price gives.
    start, end, arrivals, _ = recorded_span(fleet, deployment, clock.now_us(), 100_000)
    lab, alone = deployment_alone(deployment, env.schedules)
    given = TradeInput(deployment=lab, fleet=alone, arrivals_us=arrivals, start_us=start,
                       end_us=end, price=0.1)  # fmt: skip
    direct = priced_ledger(given, recorded.price)
    assert round(direct.freed_gib_h, 6) == recorded.chosen.freed_gib_h
    assert round(direct.wait_mean_s, 6) == recorded.chosen.wait_mean_s
    assert "within the budget of 200 ms mean added wait" in recorded.explain()
    assert recorded.explain().startswith("on the last 28 days: ")

    # The priced policy decides at it (once what it read before is let go of) ...
    pricing.forget(env.deployment)
    assert pricing.price(deployment, clock.now_us()) == recorded.price
    # ... and only while the budget is the one it was found for.
    changed = fleet.deployments.update(
        env.deployment, "user:alice", idle_wait_budget={"mean_ms": 20}
    )
    pricing.forget(env.deployment)
    assert pricing.price(changed, clock.now_us()) == PRODUCT_PRICE


def test_a_budget_too_tight_for_any_price_is_recorded_as_not_met(env: Env) -> None:
    env.fleet.deployments.update(env.deployment, "user:alice", idle_wait_budget={"mean_ms": 0})
    [choice] = env.budgets.refresh(env.deployment, now_us=env.clock.now_us())
    assert choice.outcome is BudgetOutcome.NOT_MET
    assert choice.price == DEAREST_PRICE
    assert "could not be met" in choice.explain()


def test_a_deployment_without_requests_on_record_keeps_the_standard_price(env: Env) -> None:
    quiet = add_deployment(env.store, "quiet", zone=ZONE)
    env.fleet.deployments.update(quiet, "user:alice", idle_wait_budget={"mean_ms": 50})
    [choice] = env.budgets.refresh(quiet, now_us=env.clock.now_us())
    assert (choice.outcome, choice.price, choice.requests) == (
        BudgetOutcome.NO_TRAFFIC, PRODUCT_PRICE, 0
    )  # fmt: skip
    assert "no request on record" in choice.explain()
    pricing = Pricing(env.store, env.fleet)
    assert pricing.price(env.fleet.deployments.get(quiet), env.clock.now_us()) == PRODUCT_PRICE


def test_the_job_is_daily_after_the_profiles_and_says_what_it_did(env: Env) -> None:
    [job] = env.budgets.system_jobs()
    assert (job.name, job.schedule) == ("wait_budgets", CronSchedule.parse("0 1 * * *"))
