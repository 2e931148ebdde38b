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
- **wakes and starts by actor**: schedule, request (the proxy), idle, person, system;
- **sleeps and stops by actor**, and the GiB-hours **freed by** each: every down phase's freed
  memory goes to the actor of the change that began it (issue 45);
- **the waits over every request** (``decider/waits.py``): wait-seconds, the mean and the p99
  over every request served, and a cost at a price (issue 42).

Where the issue is silent: the memory is the deployment's definition now (its events do not
record what it declared at the time); a day not over yet counts up to ``now``; the time a
sleep or stop took is counted awake (its event marks its end).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo

from dgxmm.decider.schedules.slots import local_today, slot_on
from dgxmm.decider.waits import Waits
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
    "totals_json",
    "waits_json",
]

MAX_DAYS = 366  # one report spans at most a year of days
# The days a report may name: dgxmm's clock counts from 1970, and a local midnight is found
# through zone data that stops short of year 9999 (issue 44: year 1 and 9999 were a 500).
FIRST_DAY = date(1970, 1, 1)
LAST_DAY = date(8999, 12, 31)
S = DeploymentState


class Actor(StrEnum):
    """Who woke, started, put to sleep or stopped a deployment, as the report groups them.

    A request wakes and starts what it needs (the proxy), and puts down what stands in its way
    (an eviction that makes room records the actor of the action it made room for); a
    person's start evicts so too.
    """

    SCHEDULE = "schedule"
    REQUEST = "request"
    IDLE = "idle"  # the idle policies' steps and pre-wakes
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
    waits: Waits  # the held requests' added waits, over every request served
    refused: dict[str, int] = field(default_factory=dict)
    wakes: dict[str, int] = field(default_factory=dict)  # by Actor value
    starts: dict[str, int] = field(default_factory=dict)
    sleeps: dict[str, int] = field(default_factory=dict)  # who put it down, by Actor value
    stops: dict[str, int] = field(default_factory=dict)
    freed_by: dict[str, float] = field(default_factory=dict)  # GiB-hours, by who put it down

    @property
    def cold(self) -> int:
        """Requests that met a deployment not awake: held, or refused."""
        return self.held + sum(self.refused.values())

    @property
    def wait_p50_s(self) -> float | None:
        """Return the held requests' median added wait (None: none held)."""
        return self.waits.held_rank_s(0.50)

    @property
    def wait_p99_s(self) -> float | None:
        """Return the held requests' p99 added wait (None: none held)."""
        return self.waits.held_rank_s(0.99)

    def to_json(self, price: float | None = None) -> dict[str, Any]:
        """Return the day as JSON values; with a price, its cost at it."""
        shown: dict[str, Any] = {
            "day": self.day.isoformat(),
            "hours": round(self.hours, 6),
            "held_awake_gib_h": round(self.held_awake_gib_h, 6),
            "held_asleep_gib_h": round(self.held_asleep_gib_h, 6),
            "freed_gib_h": round(self.freed_gib_h, 6),
            "requests": self.requests,
            "held": self.held,
            "cold": self.cold,
        }
        shown |= waits_json(self.waits, self.held_awake_gib_h + self.held_asleep_gib_h, price)
        return shown | {
            "refused": dict(sorted(self.refused.items())),
            "wakes": dict(sorted(self.wakes.items())),
            "starts": dict(sorted(self.starts.items())),
            "sleeps": dict(sorted(self.sleeps.items())),
            "stops": dict(sorted(self.stops.items())),
            "freed_by": {k: round(v, 6) for k, v in sorted(self.freed_by.items())},
        }


def totals_json(days: Sequence[SavingsDay], price: float | None) -> dict[str, Any]:
    """Return days summed: GiB-hours, counts, and the waits of all of them together."""
    awake = sum(d.held_awake_gib_h for d in days)
    asleep = sum(d.held_asleep_gib_h for d in days)
    shown: dict[str, Any] = {
        "hours": round(sum(d.hours for d in days), 6),
        "held_awake_gib_h": round(awake, 6),
        "held_asleep_gib_h": round(asleep, 6),
        "freed_gib_h": round(sum(d.freed_gib_h for d in days), 6),
        "requests": sum(d.requests for d in days),
        "held": sum(d.held for d in days),
        "cold": sum(d.cold for d in days),
    }
    shown |= waits_json(Waits.merged(d.waits for d in days), awake + asleep, price)
    for key in ("refused", "wakes", "starts", "sleeps", "stops", "freed_by"):
        merged: dict[str, float] = {}
        for day in days:
            for name, value in getattr(day, key).items():
                merged[name] = merged.get(name, 0) + value
        shown[key] = {k: round(v, 6) if key == "freed_by" else v for k, v in sorted(merged.items())}
    return shown


def waits_json(waits: Waits, held_gib_h: float, price: float | None) -> dict[str, Any]:
    """Return a figure set's waits as the report gives them (and its cost, with a price)."""
    shown: dict[str, Any] = {
        "wait_p50_s": waits.held_rank_s(0.50),
        "wait_p99_s": waits.held_rank_s(0.99),
        "wait_total_s": round(waits.total_s, 6),
        "wait_mean_s": round(waits.mean_s, 6),
        "wait_p99_all_s": waits.all_rank_s(0.99),
    }
    if price is not None:
        shown["cost"] = round(waits.cost(held_gib_h, price), 6)
    return shown


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
            freed_by: dict[str, float] = {}
            if stop > start:
                for at, until_us, state, actor in phases:
                    overlap = min(until_us, stop) - max(at, start)
                    if overlap <= 0:
                        continue
                    if state.is_awake:
                        awake_us += overlap
                        continue
                    # Down: what always-on would have held, less what it holds so, freed by
                    # whoever put it down (a sleep, a stop, or a failure's finder).
                    freed = awake_gib - (asleep_gib if state is S.SLEEPING else 0.0)
                    freed_by[actor] = freed_by.get(actor, 0.0) + freed * overlap / HOUR_US
                    if state is S.SLEEPING:
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
                    freed_by=freed_by,
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
    freed_by: dict[str, float],
) -> SavingsDay:
    refused: dict[str, int] = {}
    for minute in minutes:
        for reason, count in minute.refused.items():
            refused[reason] = refused.get(reason, 0) + count
    waits = Waits.of_minutes(
        (m.requests, sum(m.refused.values()), m.held, m.waits_ms) for m in minutes
    )
    by_action: dict[EventAction, dict[str, int]] = {a: {} for a in _COUNTED}
    for event in changes:
        counts = by_action.get(event.action)
        if counts is not None:
            key = actor_of(event.actor).value
            counts[key] = counts.get(key, 0) + 1
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
        waits=waits,
        refused=refused,
        wakes=by_action[EventAction.WAKE],
        starts=by_action[EventAction.START],
        sleeps=by_action[EventAction.SLEEP],
        stops=by_action[EventAction.STOP],
        freed_by=freed_by,
    )


_COUNTED = (EventAction.WAKE, EventAction.START, EventAction.SLEEP, EventAction.STOP)


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
) -> list[tuple[int, int, DeploymentState, str]]:
    """Return the deployment's (from, until, state, who) from ``begin`` on, the last one open.

    ``who`` is the ``Actor`` value of the change that began the phase; before its first
    change a deployment is stopped as created, by the system.
    """
    state = S.STOPPED  # created stopped; no time before its creation is counted
    actor = Actor.SYSTEM.value
    if before is not None:
        state = _state_after(before) or state
        actor = actor_of(before.actor).value
    changes: list[tuple[int, DeploymentState, str]] = [(begin, state, actor)]
    for event in inside:
        after = _state_after(event)
        if after is None:
            continue
        at = event.at_us
        if event.ready_us is not None and event.action in (EventAction.START, EventAction.WAKE):
            at = max(changes[-1][0], at - event.ready_us)  # awake memory from its beginning
        changes.append((at, after, actor_of(event.actor).value))
    changes.append((2**62, state, actor))
    return [
        (at, changes[n + 1][0], found, who)
        for n, (at, found, who) in enumerate(changes[:-1])
        if changes[n + 1][0] > at
    ]


def local_span(now_us: int, zone: ZoneInfo, days: int = 7) -> tuple[date, date]:
    """Return the last ``days`` local days up to today in ``zone``: the default span."""
    today = local_today(now_us, zone)
    return today - timedelta(days=days - 1), today
