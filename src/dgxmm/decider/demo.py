"""The decider's part of ``dgxmm serve --demo``: proposals at once, and a sleep to watch.

``Demo`` (in the fleet) writes the synthetic weeks and starts the deployments; it calls these
through the hooks ``serve`` hands it, since the fleet knows nothing of schedules.
"""

from __future__ import annotations

from datetime import timedelta
from zoneinfo import ZoneInfo

from dgxmm.clock import from_us
from dgxmm.decider.days import day_bit
from dgxmm.decider.proposals import ProposalService
from dgxmm.decider.schedules import ScheduleAction, ScheduleService
from dgxmm.fleet import Deployment

__all__ = ["DEMO_SLEEP_AFTER", "propose_now", "schedule_a_sleep_to_watch"]

ACTOR = "system"
DEMO_SLEEP_AFTER = timedelta(minutes=2)  # the runner's quiet check then sees no request
_WAKE_AFTER = timedelta(minutes=5)


def propose_now(proposals: ProposalService) -> None:
    """Rebuild every traffic profile and propose, as the daily jobs would."""
    proposals.profiles.rebuild()
    proposals.propose()


def schedule_a_sleep_to_watch(
    schedules: ScheduleService, deployment: Deployment, now_us: int
) -> None:
    """Give a deployment a sleep a few minutes from now and a wake after it (the day's only).

    The demo's earlier ones go first, so each run shows one sleep going through.
    """
    for old in schedules.list(deployment.id):
        if old.creator == ACTOR:
            schedules.delete(old.id, actor=ACTOR)
    zone = ZoneInfo(deployment.time_zone)
    now = from_us(now_us, zone)
    for action, after in (
        (ScheduleAction.SLEEP, DEMO_SLEEP_AFTER),
        (ScheduleAction.WAKE, _WAKE_AFTER),
    ):
        at = now + after
        schedules.create(
            deployment.id,
            action=action,
            days=day_bit(at.weekday()),
            time=at.strftime("%H:%M"),
            time_zone=deployment.time_zone,
            actor=ACTOR,
        )
