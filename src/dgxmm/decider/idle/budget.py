"""The price that spends a deployment's wait budget (issue 42, point 4).

A deployment's ``idle_wait_budget`` says how much added wait per request its priced policy
may spend: a mean in milliseconds and/or a p99 in seconds. The priced policy decides at a
price ``W`` (GiB-hours one request-second of waiting is worth, ``priced.py``): the cheaper
waiting is, the sooner it goes down, the more it frees and the longer people wait. So the
budget is spent by choosing ``W``: ``find_price`` replays the deployment's own last four
weeks under ``priced`` at a few prices and keeps the one that frees the most within the
budget.

The search (``find_price``), over a replay given as a function of the price (the lab's, which
``dgxmm serve`` hands in: the decider sits below the lab):

1. the dearest price (``DEAREST_PRICE``, 100): when even it spends more than the budget, no
   price tried meets it; that price is chosen, the least waiting the search found, and the
   choice says the budget could not be met;
2. the cheapest (``CHEAPEST_PRICE``, 0.001): when it is within, it is chosen (nothing frees
   more: waiting is all but free there);
3. otherwise a bisection over the logarithm of the price between the two, each step keeping
   a price that spends too much below and one within above, until ``MAX_REPLAYS`` replays
   in all (10: eight halvings of five decades, each price within 5 % of the boundary);
4. of every price tried within the budget, the one that freed the most (a replay's waits
   need not fall exactly as the price rises: the drawn durations differ between replays, so
   the boundary's neighbour is not trusted to be the best).

Pure: no clock, store or lab; ``budgets.py`` runs it daily and records what it chose.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from dgxmm.fleet import Deployment, WaitBudget, parse_wait_budget

__all__ = [
    "CHEAPEST_PRICE",
    "DEAREST_PRICE",
    "MAX_REPLAYS",
    "BudgetChoice",
    "BudgetOutcome",
    "PriceSearch",
    "Replay",
    "Replayer",
    "Traffic",
    "Trial",
    "find_price",
]

CHEAPEST_PRICE = 0.001
DEAREST_PRICE = 100.0
MAX_REPLAYS = 10


@dataclass(frozen=True, slots=True, kw_only=True)
class Trial:
    """One replay of the deployment's weeks under ``priced`` at a price: what it freed and
    what people waited (over every request, a warm one as 0)."""

    price: float
    freed_gib_h: float  # against always-on
    wait_mean_s: float
    wait_p99_all_s: float

    def within(self, budget: WaitBudget) -> bool:
        """Tell whether its waits are within the budget."""
        return budget.allows(self.wait_mean_s, self.wait_p99_all_s)

    def to_json(self) -> dict[str, float]:
        """Return it as JSON values (what the record keeps)."""
        return {
            "price": self.price,
            "freed_gib_h": round(self.freed_gib_h, 6),
            "wait_mean_s": round(self.wait_mean_s, 6),
            "wait_p99_all_s": round(self.wait_p99_all_s, 6),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Trial:
        """Read a trial written by ``to_json``."""
        return cls(
            price=float(data["price"]),
            freed_gib_h=float(data["freed_gib_h"]),
            wait_mean_s=float(data["wait_mean_s"]),
            wait_p99_all_s=float(data["wait_p99_all_s"]),
        )


# The lab's replay of the deployment's weeks under ``priced`` at a price.
Replay = Callable[[float], Trial]


@dataclass(frozen=True, slots=True, kw_only=True)
class PriceSearch:
    """What ``find_price`` found: the price chosen, whether it met the budget, every trial."""

    chosen: Trial
    met: bool
    trials: tuple[Trial, ...]  # in the order they were replayed


def find_price(
    replay: Replay,
    budget: WaitBudget,
    *,
    cheapest: float = CHEAPEST_PRICE,
    dearest: float = DEAREST_PRICE,
    replays: int = MAX_REPLAYS,
) -> PriceSearch:
    """Return the price that frees the most within ``budget``, in at most ``replays`` replays.

    When no price tried is within it, the dearest is chosen and ``met`` is false.
    """
    if not 0 < cheapest < dearest or replays < 2:
        raise ValueError("the search needs 0 < cheapest < dearest and two replays at least")
    tried: list[Trial] = []

    def run(price: float) -> Trial:
        found = replay(price)
        tried.append(found)
        return found

    if not run(dearest).within(budget):
        return PriceSearch(chosen=tried[0], met=False, trials=tuple(tried))
    if not run(cheapest).within(budget):
        spends, keeps = math.log(cheapest), math.log(dearest)  # too much below, within above
        while len(tried) < replays:
            middle = (spends + keeps) / 2
            if run(_plain(math.exp(middle))).within(budget):
                keeps = middle
            else:
                spends = middle
    within = [trial for trial in tried if trial.within(budget)]
    best = max(within, key=lambda trial: (trial.freed_gib_h, -trial.price))
    return PriceSearch(chosen=best, met=True, trials=tuple(tried))


def _plain(price: float) -> float:
    """Return a price to three significant digits: 0.0316, not 0.031622776601683794."""
    return float(f"{price:.3g}")


class BudgetOutcome(StrEnum):
    """What the daily refresh found for a deployment's budget."""

    MET = "met"  # the price chosen spends the budget, or less
    NOT_MET = "not_met"  # no price tried was within it: the dearest was chosen
    NO_TRAFFIC = "no_traffic"  # no request on record in the span: nothing to replay


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetChoice:
    """What the refresh chose for a deployment, and from what: the record its page explains.

    ``price`` is what the priced policy decides at while the deployment's budget is still
    ``budget`` (the standard price for ``NO_TRAFFIC``).
    """

    computed_at: int  # microseconds since the epoch
    budget: WaitBudget
    outcome: BudgetOutcome
    price: float
    start_us: int  # the replayed span
    end_us: int
    requests: int  # replayed
    capped: bool  # the span shortened to the latest requests the replay takes
    chosen: Trial | None  # None for NO_TRAFFIC
    trials: tuple[Trial, ...] = ()

    @property
    def met(self) -> bool:
        """Tell whether the price chosen spends no more than the budget."""
        return self.outcome is BudgetOutcome.MET

    def detail_json(self) -> dict[str, Any]:
        """Return what the record keeps beside its price, budget and outcome."""
        return {
            "outcome": self.outcome.value,
            "start_us": self.start_us,
            "end_us": self.end_us,
            "requests": self.requests,
            "capped": self.capped,
            "chosen": None if self.chosen is None else self.chosen.to_json(),
            "trials": [trial.to_json() for trial in self.trials],
        }

    def to_json(self) -> dict[str, Any]:
        """Return the choice as the API shows it."""
        return {
            "computed_at_us": self.computed_at,
            "budget": self.budget.to_json(),
            "price": self.price,
            "met": self.met,
            **self.detail_json(),
        }

    @classmethod
    def of_record(
        cls, *, computed_at: int, budget: dict[str, Any], price: float, detail: dict[str, Any]
    ) -> BudgetChoice:
        """Read a recorded choice (its columns, the budget and the detail parsed)."""
        checked = parse_wait_budget(budget)
        assert checked is not None  # a record is written for a budget
        chosen = detail.get("chosen")
        return cls(
            computed_at=computed_at,
            budget=checked,
            outcome=BudgetOutcome(detail["outcome"]),
            price=price,
            start_us=int(detail["start_us"]),
            end_us=int(detail["end_us"]),
            requests=int(detail["requests"]),
            capped=bool(detail["capped"]),
            chosen=None if chosen is None else Trial.from_json(chosen),
            trials=tuple(Trial.from_json(trial) for trial in detail.get("trials", [])),
        )

    def explain(self) -> str:
        """Return what was chosen and why, in words (the deployment's page)."""
        days = round((self.end_us - self.start_us) / 86_400_000_000)
        span = (
            f"on the last {days} days"
            if not self.capped
            else (f"on its latest {self.requests:,} requests ({days} days)")
        )
        if self.chosen is None:
            return (
                f"{span}: no request on record, so nothing to replay; it decides at the "
                f"standard price {self.price:g}"
            )
        trial = self.chosen
        figures = (
            f"{span}: {trial.freed_gib_h:,.0f} GiB-h freed, "
            f"{trial.wait_mean_s * 1000:,.0f} ms mean added wait, "
            f"{trial.wait_p99_all_s:,.1f} s p99"
        )
        if self.met:
            return (
                f"{figures}, within the budget of {self.budget.describe()}, at a price of "
                f"{self.price:g} GiB-h a request-second"
            )
        return (
            f"{figures}: the budget of {self.budget.describe()} could not be met by any "
            f"price tried; it decides at the dearest, {self.price:g} GiB-h a request-second"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Traffic:
    """What the search replays for a deployment: its span, its requests on record in it, and
    a replay of them under ``priced`` at a price (None: no request to replay)."""

    start_us: int
    end_us: int
    requests: int
    capped: bool  # shortened to its latest requests
    replay: Replay | None


# The lab's: a deployment's last four weeks at an instant (``dgxmm.lab.trade.budget_traffic``).
Replayer = Callable[[Deployment, int], Traffic]
