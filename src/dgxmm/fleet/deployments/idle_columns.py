"""A definition's idle columns: the idle ladder, the idle policy, the wake lead and the wait
budget, as keys.

``check_definition`` (``definition.py``) hands the keys a person gave here and takes back the
column values; ``current_keys`` takes a deployment's idle keys from here. Kept apart so that
the definition's check stays one screen per concern. The wait budget (issue 42) is one JSON
column, ``{"mean_ms": 50, "p99_s": 5}`` or NULL, as it is one key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from dgxmm.fleet.deployments.deployment import Deployment, wake_lead_column
from dgxmm.fleet.deployments.idle import (
    IdleLadder,
    WaitBudget,
    parse_idle_policy,
    parse_wait_budget,
    parse_wake_lead,
)
from dgxmm.jobs.keys import Refusals
from dgxmm.time_units import SECOND_US

__all__ = ["budget_column", "check_idle_columns", "idle_keys"]


def idle_keys(deployment: Deployment) -> dict[str, Any]:
    """Return a deployment's idle settings as its definition's keys give them."""
    return {
        **{f"idle_{key}": value for key, value in _ladder_keys(deployment.idle).items()},
        "idle_policy": deployment.idle_policy.value,
        "wake_lead": deployment.wake_lead.to_json(),
        "idle_wait_budget": budget_keys(deployment.idle_wait_budget),
    }


def budget_keys(budget: WaitBudget | None) -> dict[str, float] | None:
    """Return a wait budget as its key gives it (None: no budget)."""
    return None if budget is None else budget.to_json()


def budget_column(budget: WaitBudget | None) -> str | None:
    """Return the ``idle_wait_budget`` column's text for a budget (sorted keys: comparable)."""
    return None if budget is None else json.dumps(budget.to_json(), sort_keys=True)


def check_idle_columns(keys: Mapping[str, Any], refusals: Refusals) -> dict[str, Any]:
    """Check the idle ladder, the idle policy, the wake lead and the wait budget into their
    columns."""
    checked = refusals.check
    ladder = checked(
        lambda: IdleLadder.of_seconds(
            sleep_after_s=keys.get("idle_sleep_after_s"),
            deepen_after_s=keys.get("idle_deepen_after_s"),
            stop_after_s=keys.get("idle_stop_after_s"),
        )
    )
    policy = checked(lambda: parse_idle_policy(keys.get("idle_policy")))
    lead = checked(lambda: parse_wake_lead(keys.get("wake_lead")))
    budget = checked(lambda: parse_wait_budget(keys.get("idle_wait_budget")))
    return {
        **{f"idle_{key}": value for key, value in _ladder_keys(ladder or IdleLadder()).items()},
        "idle_policy": None if policy is None else policy.value,
        "wake_lead": None if lead is None else wake_lead_column(lead),
        "idle_wait_budget": budget_column(budget),
    }


def _ladder_keys(ladder: IdleLadder) -> dict[str, float | None]:
    steps = {"sleep_after_s": ladder.sleep_after_us, "deepen_after_s": ladder.deepen_after_us,
             "stop_after_s": ladder.stop_after_us}  # fmt: skip
    return {key: None if us is None else us / SECOND_US for key, us in steps.items()}
