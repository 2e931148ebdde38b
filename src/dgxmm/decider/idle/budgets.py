"""The daily refresh of each wait budget's price, and what it chose (issue 42, point 4).

``WaitBudgets`` owns the system job ``wait_budgets`` (daily at 01:00, after the traffic
profiles at 00:20 and the proposals at 00:40, so it reads what the night's rollups brought).
For each deployment with an ``idle_wait_budget`` it asks the lab (the ``Replayer`` that
``dgxmm serve`` hands in: the decider sits below the lab) for the deployment's last four
weeks, searches the price that spends the budget there (``budget.find_price``) and records
the choice in ``wait_budget_prices``, one row per deployment, replaced each day:
the price, the budget it was found for, whether it met it, and the replay's figures.

``price_for`` is what the priced policy decides at (``pricing.py``): the recorded price while
the deployment's budget is the one it was found for, else ``PRODUCT_PRICE`` (no budget, not
computed yet, the budget changed since, or no request on record to replay).
"""

from __future__ import annotations

import builtins
import json
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import Connection, delete, insert, select

from dgxmm.clock import Clock
from dgxmm.decider.idle.budget import (
    BudgetChoice,
    BudgetOutcome,
    Replayer,
    Trial,
    find_price,
)
from dgxmm.decider.idle.priced import PRODUCT_PRICE
from dgxmm.decider.tables import wait_budget_prices
from dgxmm.fleet import Deployment, Fleet
from dgxmm.jobs import CronSchedule, Job, JobKind, RunContext
from dgxmm.store import Store, reading, writing
from dgxmm.words import counted

__all__ = [
    "WAIT_BUDGETS",
    "BudgetState",
    "BudgetStatus",
    "WaitBudgets",
    "budget_price",
    "budget_status",
    "price_for",
    "read_choice",
]

WAIT_BUDGETS = "wait_budgets"


class WaitBudgets:
    """Each budgeted deployment's price: found daily by replaying its weeks, and recorded."""

    def __init__(
        self, store: Store, fleet: Fleet, *, replay: Replayer, clock: Clock | None = None
    ) -> None:
        self._store = store
        self._fleet = fleet
        self._replay = replay
        self._clock = clock or store.clock

    def system_jobs(self) -> builtins.list[Job]:
        """Return ``wait_budgets``, a system job daily at 01:00."""
        return [
            Job(
                WAIT_BUDGETS,
                JobKind.SYSTEM,
                CronSchedule.parse("0 1 * * *"),
                self._run_job,
                description="finds the price that spends each deployment's wait budget on "
                "its last 28 days",
            )
        ]

    def _run_job(self, context: RunContext) -> str:
        chosen = self.refresh(now_us=context.started_at, context=context)
        unmet = sum(choice.outcome is BudgetOutcome.NOT_MET for choice in chosen)
        return f"{counted(len(chosen), 'budget')} priced, {unmet} not met"

    def refresh(
        self,
        deployment_id: int | None = None,
        *,
        now_us: int | None = None,
        context: RunContext | None = None,
    ) -> builtins.list[BudgetChoice]:
        """Find and record the price of each budgeted deployment (or one); return them."""
        now = self._clock.now_us() if now_us is None else now_us
        found = (
            [self._fleet.deployments.get(deployment_id)]
            if deployment_id is not None
            else sorted(self._fleet.deployments.list(), key=lambda d: d.id)
        )
        made = []
        for deployment in found:
            if deployment.idle_wait_budget is None:
                continue
            if context is not None:
                context.check()
            choice = self.choose(deployment, now)
            with writing(self._store.engine) as connection:
                if self._fleet.deployments.exists(deployment.id, connection=connection):
                    _record(connection, deployment.id, choice)
            made.append(choice)
        return made

    def choose(self, deployment: Deployment, now_us: int) -> BudgetChoice:
        """Return the price that spends the deployment's budget on its weeks before now."""
        budget = deployment.idle_wait_budget
        if budget is None:
            raise ValueError(f"deployment {deployment.name!r} has no wait budget")
        traffic = self._replay(deployment, now_us)
        trials: tuple[Trial, ...] = ()
        if traffic.replay is None:
            outcome, price, chosen = BudgetOutcome.NO_TRAFFIC, PRODUCT_PRICE, None
        else:
            search = find_price(traffic.replay, budget)
            outcome = BudgetOutcome.MET if search.met else BudgetOutcome.NOT_MET
            price, chosen, trials = search.chosen.price, search.chosen, search.trials
        return BudgetChoice(
            computed_at=now_us,
            budget=budget,
            outcome=outcome,
            price=price,
            start_us=traffic.start_us,
            end_us=traffic.end_us,
            requests=traffic.requests,
            capped=traffic.capped,
            chosen=chosen,
            trials=trials,
        )

    def price_of(self, deployment: Deployment) -> float | None:
        """Return the price its budget found (``budget_price``), or None."""
        return budget_price(deployment, self.choice(deployment.id))

    def choice(self, deployment_id: int) -> BudgetChoice | None:
        """Return what the refresh recorded last for a deployment, or None."""
        with reading(self._store.engine) as connection:
            return read_choice(connection, deployment_id)


def read_choice(connection: Connection, deployment_id: int) -> BudgetChoice | None:
    """Read a deployment's recorded choice, or None (never computed)."""
    row = connection.execute(
        select(wait_budget_prices).where(wait_budget_prices.c.deployment_id == deployment_id)
    ).first()
    if row is None:
        return None
    return BudgetChoice.of_record(
        computed_at=int(row.computed_at),
        budget=json.loads(row.budget),
        price=float(row.price),
        detail=json.loads(row.detail),
    )


def budget_price(deployment: Deployment, choice: BudgetChoice | None) -> float | None:
    """Return the price its budget found, while the budget is the one it was found for and
    there was traffic to find it on; else None."""
    if (
        choice is None
        or deployment.idle_wait_budget is None
        or choice.budget != deployment.idle_wait_budget
        or choice.outcome is BudgetOutcome.NO_TRAFFIC
    ):
        return None
    return choice.price


def price_for(deployment: Deployment, choice: BudgetChoice | None) -> float:
    """Return the price the priced policy decides at: its budget's, else ``PRODUCT_PRICE``."""
    found = budget_price(deployment, choice)
    return PRODUCT_PRICE if found is None else found


class BudgetState(StrEnum):
    """Where a deployment's wait budget stands, as its page and the API say."""

    NONE = "none"  # no budget: the standard price
    PENDING = "pending"  # not yet computed for the budget it has now
    MET = "met"
    NOT_MET = "not_met"
    NO_TRAFFIC = "no_traffic"


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetStatus:
    """What a deployment's budget chose and why: the price it decides at, in words."""

    state: BudgetState
    price: float  # what the priced policy decides at
    says: str  # "" for NONE
    choice: BudgetChoice | None  # the record, when it is for the budget it has now


def budget_status(deployment: Deployment, choice: BudgetChoice | None) -> BudgetStatus:
    """Return where the deployment's budget stands, from the recorded ``choice``."""
    budget = deployment.idle_wait_budget
    if budget is None:
        return BudgetStatus(state=BudgetState.NONE, price=PRODUCT_PRICE, says="", choice=None)
    if choice is None or choice.budget != budget:
        says = (
            f"{budget.describe()}: not yet computed for this budget; the daily {WAIT_BUDGETS} "
            f"job (01:00) finds its price on the last 28 days, and until then it decides at "
            f"{PRODUCT_PRICE:g}"
        )
        return BudgetStatus(state=BudgetState.PENDING, price=PRODUCT_PRICE, says=says, choice=None)
    return BudgetStatus(
        state=BudgetState(choice.outcome.value),
        price=price_for(deployment, choice),
        says=f"{budget.describe()}: {choice.explain()}",
        choice=choice,
    )


def _record(connection: Connection, deployment_id: int, choice: BudgetChoice) -> None:
    """Replace the deployment's row with ``choice``."""
    table = wait_budget_prices
    connection.execute(delete(table).where(table.c.deployment_id == deployment_id))
    connection.execute(
        insert(table).values(
            deployment_id=deployment_id,
            computed_at=choice.computed_at,
            budget=json.dumps(choice.budget.to_json(), sort_keys=True),
            price=choice.price,
            met=choice.met,
            detail=json.dumps(choice.detail_json()),
        )
    )
