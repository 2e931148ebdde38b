"""An accepted proposal's realized weeks beside its backtest's (issue 26, point 3).

From the day it was accepted, in whole local weeks of the deployment's zone (the week under
way counts to now): GiB-hours freed and cold requests, from the savings report
(``decider/savings.py``), beside what the backtest predicted for a week (its held-out weeks'
figures scaled to seven days).

**The margin** (where the issue is silent): a week is *colder than predicted* when its cold
requests exceed twice the predicted ones and the prediction by at least 10 more. Twice: a
backtest replays a few weeks, and a quiet week or a busier one moves the count by that much
without anything being wrong; 10 more: below that, a prediction of 0 or 2 would raise an
insight for a handful of stray requests. Such a week raises one insight per proposal.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from dgxmm.decider.proposals.rows import Proposal
from dgxmm.decider.savings import SavingsReport
from dgxmm.decider.schedules.slots import local_today
from dgxmm.decider.waits import Waits
from dgxmm.fleet import Fleet
from dgxmm.jobs import resolve_zone
from dgxmm.time_units import DAY_US

__all__ = ["MARGIN_FACTOR", "MARGIN_MORE", "RealizedWeek", "is_colder", "realized_weeks"]

MARGIN_FACTOR = 2.0
MARGIN_MORE = 10
MOST_WEEKS = 12  # the weeks shown after an acceptance


@dataclass(frozen=True, slots=True, kw_only=True)
class RealizedWeek:
    """One local week since the acceptance: what happened, and what was predicted."""

    first_day: str
    days: int  # counted (the week under way: to today)
    freed_gib_h: float
    cold: int
    requests: int
    predicted_freed_gib_h: float | None  # None: no backtest
    predicted_cold: float | None
    wait_total_s: float = 0.0  # the request-seconds its cold requests waited (issue 42)
    predicted_wait_total_s: float | None = None  # None: no backtest, or one without waits

    @property
    def colder_than_predicted(self) -> bool:
        """Tell whether its cold requests passed the prediction by the margin."""
        return self.predicted_cold is not None and is_colder(self.cold, self.predicted_cold)

    def to_json(self) -> dict[str, Any]:
        """Return the week as JSON values."""
        return {
            "first_day": self.first_day,
            "days": self.days,
            "freed_gib_h": round(self.freed_gib_h, 6),
            "cold": self.cold,
            "requests": self.requests,
            "predicted_freed_gib_h": self.predicted_freed_gib_h,
            "predicted_cold": self.predicted_cold,
            "colder_than_predicted": self.colder_than_predicted,
            "wait_total_s": round(self.wait_total_s, 6),
            "predicted_wait_total_s": self.predicted_wait_total_s,
        }


def is_colder(realized: int, predicted: float) -> bool:
    """Tell whether ``realized`` cold requests pass ``predicted`` by the margin (see module)."""
    return realized > MARGIN_FACTOR * predicted and realized >= predicted + MARGIN_MORE


def realized_weeks(fleet: Fleet, proposal: Proposal, now_us: int) -> list[RealizedWeek]:
    """Return an accepted proposal's weeks since its acceptance (none for another one)."""
    if proposal.decided_at is None or proposal.sleep_schedule_id is None:
        return []
    deployment = fleet.deployments.get(proposal.deployment_id)
    zone = resolve_zone(deployment.time_zone)
    first = local_today(proposal.decided_at, zone)
    today = local_today(now_us, zone)
    if today < first:
        return []
    last = min(today, first + timedelta(days=7 * MOST_WEEKS - 1))
    ((_, days),) = SavingsReport(fleet).days(
        since=first, until=last, now_us=now_us, deployment_id=deployment.id
    )
    per_day_freed = per_day_cold = per_day_wait = None
    if proposal.backtest is not None:
        tested_days = max(
            1e-9,
            (proposal.backtest["tested_until_us"] - proposal.backtest["tested_from_us"]) / DAY_US,
        )
        per_day_freed = proposal.backtest["freed_gib_h"] / tested_days
        per_day_cold = proposal.backtest["cold"] / tested_days
        waited = [week.get("wait_total_s") for week in proposal.backtest["weeks"]]
        if waited and None not in waited:  # kept since issue 42
            per_day_wait = sum(waited) / tested_days
    weeks = []
    for start in range(0, len(days), 7):
        chunk = days[start : start + 7]
        weeks.append(
            RealizedWeek(
                first_day=chunk[0].day.isoformat(),
                days=len(chunk),
                freed_gib_h=sum(day.freed_gib_h for day in chunk),
                cold=sum(day.cold for day in chunk),
                requests=sum(day.requests for day in chunk),
                predicted_freed_gib_h=(
                    None if per_day_freed is None else round(per_day_freed * len(chunk), 6)
                ),
                predicted_cold=None
                if per_day_cold is None
                else round(per_day_cold * len(chunk), 6),
                wait_total_s=Waits.merged(day.waits for day in chunk).total_s,
                predicted_wait_total_s=_scaled(per_day_wait, len(chunk)),
            )
        )
    return weeks


def _scaled(per_day: float | None, days: int) -> float | None:
    return None if per_day is None else round(per_day * days, 6)
