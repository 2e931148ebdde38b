"""The demo's synthetic weeks: traffic rollups, and the sleeps and wakes they would have made.

The story ``/savings`` and a deployment's page tell of the weeks before the demo started,
told only with what the deployment's settings allow: its idle ladder puts it to sleep
``idle_sleep_after_s`` after its last request (a weekday evening, a Saturday noon for the
chat), and the next request wakes it through the proxy (``wake_on_request``), held while it
comes up. Each wake records its time to ready, so that the page's measured wake time is read
from the same history the events show.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from dgxmm.clock import from_us
from dgxmm.fleet.activity import Minute
from dgxmm.fleet.demo.models import DemoModel
from dgxmm.fleet.deployments.deployment import Deployment, DeploymentState
from dgxmm.fleet.deployments.events import IDLE_ACTOR, REQUEST_ACTOR, EventAction
from dgxmm.fleet.metrics import Rollup
from dgxmm.time_units import MINUTE_US, SECOND_US

__all__ = ["SYNTHETIC_WAKE_US", "StoryEvent", "synthetic_rollups", "synthetic_story"]

# A synthetic wake's time to ready from level 1; the request that woke it was held as long.
SYNTHETIC_WAKE_US = 2 * SECOND_US


@dataclass(frozen=True, slots=True, kw_only=True)
class StoryEvent:
    """One sleep or wake of the synthetic weeks."""

    at_us: int
    action: EventAction
    actor: str
    state: DeploymentState
    ready_us: int | None = None  # a wake's time to ready (from level 1)


def synthetic_story(
    rows: Sequence[Rollup], *, sleep_after_us: int
) -> tuple[list[StoryEvent], dict[int, Minute]]:
    """Return the sleeps and wakes the rows make under an idle ladder, and the proxy's minutes.

    Rows are one deployment's, oldest first. Idle counts from the end of the last minute with
    a request (from the first row when none came yet), as the ladder counts from the last
    request: asleep ``sleep_after_us`` later, by ``idle``. The first minute with a request
    after that wakes it by ``request``, its first request held ``SYNTHETIC_WAKE_US``.
    The minutes map each row's minute with requests to what the proxy saw in it.
    """
    events: list[StoryEvent] = []
    minutes: dict[int, Minute] = {}
    asleep = False
    idle_since = rows[0].minute_us if rows else 0
    for rollup in rows:
        if rollup.requests:
            if asleep:
                events.append(
                    StoryEvent(
                        at_us=rollup.minute_us + SYNTHETIC_WAKE_US,
                        action=EventAction.WAKE,
                        actor=REQUEST_ACTOR,
                        state=DeploymentState.RUNNING,
                        ready_us=SYNTHETIC_WAKE_US,
                    )
                )
                asleep = False
                wait_ms = SYNTHETIC_WAKE_US // 1000
                minutes[rollup.minute_us] = Minute(
                    requests=rollup.requests, held=1, waits_ms=[wait_ms]
                )
            else:
                minutes[rollup.minute_us] = Minute(requests=rollup.requests)
            idle_since = rollup.minute_us + MINUTE_US
        elif not asleep and idle_since + sleep_after_us < rollup.minute_us + MINUTE_US:
            events.append(
                StoryEvent(
                    at_us=max(idle_since + sleep_after_us, rollup.minute_us),
                    action=EventAction.SLEEP,
                    actor=IDLE_ACTOR,
                    state=DeploymentState.SLEEPING,
                )
            )
            asleep = True
    return events, minutes


def synthetic_rollups(
    model: DemoModel, deployment: Deployment, since_us: int, until_us: int
) -> list[Rollup]:
    """Return a minute's rollup for each minute of the span: weekday office hours are busy.

    Busy is Monday to Friday 08:00 to 18:59 in the deployment's zone, a little on Saturday
    mornings for the chat; the rest of the week is idle, which is what proposals look for.
    The numbers are seeded by the deployment's name, so a second run writes the same ones.
    """
    zone = ZoneInfo(deployment.time_zone)
    pick = random.Random(model.name)
    peak = max(model.requests_per_s, 0.2) * 60  # requests a minute at the top of the day
    latency = model.latency_ms / 1000
    rows = []
    at = since_us - since_us % MINUTE_US
    while at < until_us:
        local = from_us(at, zone)
        office = local.weekday() < 5 and 8 <= local.hour < 19
        saturday = model.name == "demo-chat" and local.weekday() == 5 and 9 <= local.hour < 12
        if office or saturday:
            shape = math.sin(math.pi * (local.hour + local.minute / 60 - 8) / 11)
            requests = max(1, round(peak * (0.3 + 0.7 * max(shape, 0.0)) * pick.uniform(0.6, 1.2)))
            seconds = latency * pick.uniform(0.8, 1.4)
            running = requests * seconds / 60
        else:
            requests, seconds, running = 0, None, 0.0
        rows.append(
            Rollup(
                deployment_id=deployment.id,
                minute_us=at,
                requests=requests,
                mean_running=running,
                mean_waiting=0.0,
                mean_latency_s=seconds,
                samples=4,
            )
        )
        at += MINUTE_US
    return rows
