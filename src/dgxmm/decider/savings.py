"""What was saved, as it happened: per deployment and local day, in DESIGN.md's words (issue 26).

Read from two records, nothing else:

- **The deployment's events** (``Events.state_changes``): each state change done, with the
  state it left (``deployment_events.state``; inferred from the action in rows written before
  that column) and, for a start or wake, its time to ready. A start or wake holds awake
  memory from when it began (its event's instant less its time to ready), a sleep or a stop
  until its event. The state at the span's start is the last change's before it; a
  deployment holds nothing before it was created.
- **The proxy's record** (``request_minutes``): per minute of arrival, the requests it took,
  those it held while the deployment was brought up (cold) with their added waits, and those
  it refused by reason (cold too).

Per local day in the deployment's zone (23 or 25 hours where the clocks change; a day's
midnight by the engine's DST rule) it gives:

- GiB-hours **held awake** and **held asleep** (the deployment's declared memory per GPU in
  that state, times its GPUs, times the time in the state) and **freed** (what always-on
  would have held, less what was held: the time asleep or stopped, from its creation on);
- **requests** through the proxy, those **held** with their added wait p50 and p99 (nearest
  rank, seconds), those **refused** by reason;
- **wakes and starts by actor**: schedule, request (the proxy), idle, person, system.

Where the issue is silent: the memory is the deployment's definition now (its events do not
record what it declared at the time); a day not over yet counts up to ``now``; the time a
sleep or stop took is counted awake (its event marks its end).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo

from dgxmm.decider.schedules.slots import local_today, slot_on
from dgxmm.errors import InvalidInput
from dgxmm.fleet import (
    IDLE_ACTOR,
    REQUEST_ACTOR,
    Deployment,
    DeploymentState,
    Event,
    EventAction,
    Fleet,
    RequestMinute,
    is_schedule,
)
from dgxmm.jobs import resolve_zone
from dgxmm.time_units import HOUR_US

__all__ = [
    "FIRST_DAY",
    "LAST_DAY",
    "MAX_DAYS",
    "Actor",
    "SavingsDay",
    "SavingsReport",
    "actor_of",
    "local_span",
    "parse_day",
]

MAX_DAYS = 366  # one report spans at most a year of days
# The days a report may name: dgxmm's clock counts from 1970, and a local midnight is found
# through zone data that stops short of year 9999 (issue 44: year 1 and 9999 were a 500).
FIRST_DAY = date(1970, 1, 1)
LAST_DAY = date(8999, 12, 31)
S = DeploymentState


class Actor(StrEnum):
    """Who woke or started a deployment, as the report groups them."""

    SCHEDULE = "schedule"
    REQUEST = "request"
    IDLE = "idle"  # the idle policies' pre-wakes
    PERSON = "person"
    SYSTEM = "system"


def actor_of(actor: str | None) -> Actor:
    """Return the report's group of an event's actor."""
    if is_schedule(actor):
        return Actor.SCHEDULE
    if actor == REQUEST_ACTOR:
        return Actor.REQUEST
    if actor == IDLE_ACTOR:
        return Actor.IDLE
    if actor is not None and actor.startswith("user:"):
        return Actor.PERSON
    return Actor.SYSTEM


def parse_day(value: object, field: str) -> date:
    """Read a local date ``YYYY-MM-DD``; refuse naming ``field`` (``InvalidInput``)."""
    if not isinstance(value, str) or len(value) != 10:
        raise InvalidInput(field, f"{value!r} is not a date (YYYY-MM-DD)")
    try:
        day = date.fromisoformat(value)
    except ValueError:
        raise InvalidInput(field, f"{value!r} is not a date (YYYY-MM-DD)") from None
    if not FIRST_DAY <= day <= LAST_DAY:
        raise InvalidInput(
            field, f"{value} is outside {FIRST_DAY.isoformat()} to {LAST_DAY.isoformat()}"
        )
    return day


@dataclass(frozen=True, slots=True, kw_only=True)
class SavingsDay:
    """One deployment's local day."""

    deployment_id: int
    name: str
    day: date
    hours: float  # of the day counted: while the deployment existed, up to now
    held_awake_gib_h: float
    held_asleep_gib_h: float
    freed_gib_h: float
    requests: int
    held: int
    wait_p50_s: float | None
    wait_p99_s: float | None
    refused: dict[str, int] = field(default_factory=dict)
    wakes: dict[str, int] = field(default_factory=dict)  # by Actor value
    starts: dict[str, int] = field(default_factory=dict)

    @property
    def cold(self) -> int:
        """Requests that met a deployment not awake: held, or refused."""
        return self.held + sum(self.refused.values())

    def to_json(self) -> dict[str, Any]:
        """Return the day as JSON values."""
        return {
            "day": self.day.isoformat(),
            "hours": round(self.hours, 6),
            "held_awake_gib_h": round(self.held_awake_gib_h, 6),
            "held_asleep_gib_h": round(self.held_asleep_gib_h, 6),
            "freed_gib_h": round(self.freed_gib_h, 6),
            "requests": self.requests,
            "held": self.held,
            "cold": self.cold,
            "wait_p50_s": self.wait_p50_s,
            "wait_p99_s": self.wait_p99_s,
            "refused": dict(sorted(self.refused.items())),
            "wakes": dict(sorted(self.wakes.items())),
            "starts": dict(sorted(self.starts.items())),
        }


class SavingsReport:
    """Reads a fleet's events and the proxy's record into days; see the module."""

    def __init__(self, fleet: Fleet) -> None:
        self._fleet = fleet

    def days(
        self,
        *,
        since: date,
        until: date,
        now_us: int,
        deployment_id: int | None = None,
    ) -> list[tuple[Deployment, list[SavingsDay]]]:
        """Return each deployment (or one) with its days ``since`` to ``until``, inclusive.

        ``InvalidInput`` names ``to`` for a span backwards or past ``MAX_DAYS``; ``NotFound``
        for an unknown deployment.
        """
        if until < since:
            raise InvalidInput("to", f"{until.isoformat()} is before from ({since.isoformat()})")
        if (until - since).days + 1 > MAX_DAYS:
            raise InvalidInput("to", f"a report spans at most {MAX_DAYS} days")
        fleet = self._fleet
        if deployment_id is not None:
            chosen = [fleet.deployments.get(deployment_id)]
        else:
            chosen = fleet.deployments.list()
        return [(d, self._days_of(d, since, until, now_us)) for d in chosen]

    def _days_of(
        self, deployment: Deployment, since: date, until: date, now_us: int
    ) -> list[SavingsDay]:
        zone = resolve_zone(deployment.time_zone)
        bounds = [
            _midnight(since + timedelta(days=n), zone) for n in range((until - since).days + 2)
        ]
        begin, end = bounds[0], bounds[-1]
        before, inside = self._fleet.events.state_changes(deployment.id, begin, end)
        phases = _phases(deployment, before, inside, begin)
        minutes = self._fleet.request_minutes.read(deployment.id, begin, end)
        # Each day's rows found by bisection: a year of minutes is half a million rows.
        minute_at = [m.minute_us for m in minutes]
        by_time = sorted(inside, key=lambda e: e.at_us)
        change_at = [e.at_us for e in by_time]
        gpus = deployment.gpu_count
        awake_gib = deployment.memory_gib_awake * gpus
        asleep_gib = deployment.memory_gib_asleep * gpus
        found = []
        for number in range(len(bounds) - 1):
            start = max(bounds[number], deployment.created_at)
            stop = min(bounds[number + 1], now_us)
            awake_us = asleep_us = 0
            if stop > start:
                for at, until_us, state in phases:
                    overlap = min(until_us, stop) - max(at, start)
                    if overlap <= 0:
                        continue
                    if state.is_awake:
                        awake_us += overlap
                    elif state is S.SLEEPING:
                        asleep_us += overlap
            counted = max(0, stop - start)
            held_awake = awake_gib * awake_us / HOUR_US
            held_asleep = asleep_gib * asleep_us / HOUR_US
            first, last = bounds[number], bounds[number + 1]
            day_minutes = minutes[bisect_left(minute_at, first) : bisect_left(minute_at, last)]
            day_changes = by_time[bisect_left(change_at, first) : bisect_left(change_at, last)]
            found.append(
                _day(
                    deployment,
                    since + timedelta(days=number),
                    counted,
                    held_awake=held_awake,
                    held_asleep=held_asleep,
                    always_on=awake_gib * counted / HOUR_US,
                    minutes=day_minutes,
                    changes=day_changes,
                )
            )
        return found


def _day(
    deployment: Deployment,
    day: date,
    counted_us: int,
    *,
    held_awake: float,
    held_asleep: float,
    always_on: float,
    minutes: Sequence[RequestMinute],
    changes: Sequence[Event],
) -> SavingsDay:
    refused: dict[str, int] = {}
    waits: list[int] = []
    for minute in minutes:
        waits.extend(minute.waits_ms)
        for reason, count in minute.refused.items():
            refused[reason] = refused.get(reason, 0) + count
    waits.sort()
    wakes: dict[str, int] = {}
    starts: dict[str, int] = {}
    for event in changes:
        if event.action is EventAction.WAKE:
            key = actor_of(event.actor).value
            wakes[key] = wakes.get(key, 0) + 1
        elif event.action is EventAction.START:
            key = actor_of(event.actor).value
            starts[key] = starts.get(key, 0) + 1
    return SavingsDay(
        deployment_id=deployment.id,
        name=deployment.name,
        day=day,
        hours=counted_us / HOUR_US,
        held_awake_gib_h=held_awake,
        held_asleep_gib_h=held_asleep,
        freed_gib_h=max(0.0, always_on - held_awake - held_asleep),
        requests=sum(m.requests for m in minutes),
        held=sum(m.held for m in minutes),
        wait_p50_s=_rank(waits, 0.50),
        wait_p99_s=_rank(waits, 0.99),
        refused=refused,
        wakes=wakes,
        starts=starts,
    )


def _rank(sorted_ms: Sequence[int], share: float) -> float | None:
    """Return the nearest-rank percentile of sorted milliseconds, in seconds (None: none)."""
    if not sorted_ms:
        return None
    return sorted_ms[max(0, math.ceil(share * len(sorted_ms)) - 1)] / 1000


def _midnight(day: date, zone: ZoneInfo) -> int:
    """Return the instant a local day begins (by the DST rule: a midnight in a gap moves)."""
    return slot_on(day, (0, 0), zone).at_us


_FROM_ACTION = {
    EventAction.START: S.RUNNING,
    EventAction.WAKE: S.RUNNING,
    EventAction.SLEEP: S.SLEEPING,
    EventAction.STOP: S.STOPPED,
    EventAction.FAILED: S.FAILED,
}


def _state_after(event: Event) -> DeploymentState | None:
    if event.state is not None:
        return DeploymentState(event.state)
    return _FROM_ACTION.get(event.action)  # a row of before: as its action left it


def _phases(
    deployment: Deployment, before: Event | None, inside: Sequence[Event], begin: int
) -> list[tuple[int, int, DeploymentState]]:
    """Return the deployment's (from, until, state) from ``begin`` on, the last one open."""
    state = S.STOPPED  # created stopped; no time before its creation is counted
    if before is not None:
        state = _state_after(before) or state
    changes: list[tuple[int, DeploymentState]] = [(begin, state)]
    for event in inside:
        after = _state_after(event)
        if after is None:
            continue
        at = event.at_us
        if event.ready_us is not None and event.action in (EventAction.START, EventAction.WAKE):
            at = max(changes[-1][0], at - event.ready_us)  # awake memory from its beginning
        changes.append((at, after))
    changes.append((2**62, state))
    return [
        (at, changes[n + 1][0], found)
        for n, (at, found) in enumerate(changes[:-1])
        if changes[n + 1][0] > at
    ]


def local_span(now_us: int, zone: ZoneInfo, days: int = 7) -> tuple[date, date]:
    """Return the last ``days`` local days up to today in ``zone``: the default span."""
    today = local_today(now_us, zone)
    return today - timedelta(days=days - 1), today
