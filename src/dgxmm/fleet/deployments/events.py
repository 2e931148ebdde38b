"""Deployment events: what happened to a deployment, who asked, and how it ended.

Every action of the deployer writes one (the schedule runner writes its own for slots it
deferred or skipped before asking the deployer). ``actor`` is ``user:<name>``,
``schedule:<id>`` or ``system``; NULL in rows written before actors were recorded.

A start, wake, sleep or stop the deployer did also records how long it took and the resting
level at its far end (``ready_us`` and ``from_level``, named when only the ways up were
timed): a start's time to ready (level 0), a wake's from its level, a sleep's until asleep
at its level (a deepening's whole way to level 2), a stop's until stopped (level 0). A sleep
that timed out records its bound: it held the memory and the door that long at least. The
priced idle policy and the measured wake lead read the last ones (``ready_times``,
``down_times``).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, Engine, Row, and_, func, insert, or_, select

from dgxmm.clock import Clock
from dgxmm.errors import InvalidInput
from dgxmm.fleet.deployments.tables import deployment_events
from dgxmm.store import reading, writing

__all__ = [
    "IDLE_ACTOR",
    "REQUEST_ACTOR",
    "Event",
    "EventAction",
    "EventOutcome",
    "Events",
    "is_policy",
    "is_schedule",
]


IDLE_ACTOR = "idle"  # the actor of the idle policies' steps (dgxmm.decider.idle)
REQUEST_ACTOR = "request"  # the proxy's wakes and starts for a request it holds


def is_schedule(actor: str | None) -> bool:
    """Tell whether an event's actor is a schedule (``schedule:<id>``)."""
    return actor is not None and actor.startswith("schedule:")


def is_policy(actor: str | None) -> bool:
    """Tell whether an actor is a policy (a schedule or the idle policy), not a person.

    A policy's stop is undone by a request through the proxy or a wake schedule; a
    person's stays a stop, and a person's stop of what a policy stopped takes it over.
    """
    return is_schedule(actor) or actor == IDLE_ACTOR


class EventAction(StrEnum):
    """What an event is about."""

    CREATE = "create"
    UPDATE = "update"
    START = "start"
    STOP = "stop"
    SLEEP = "sleep"
    WAKE = "wake"
    FAILED = "failed"  # its server was found gone; the deployment is now failed
    REATTACH = "reattach"  # found again after a dgxmm restart
    PROPOSE = "propose"  # a schedule proposal made for it (recorded in forecast-only mode)


# The actions that, done, change what the server is (not create or update of its definition).
_STATE_CHANGES = (
    EventAction.START,
    EventAction.STOP,
    EventAction.SLEEP,
    EventAction.WAKE,
    EventAction.FAILED,
    EventAction.REATTACH,
)


class EventOutcome(StrEnum):
    """How it ended."""

    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"  # nothing was done: already there, refused, or it does not fit
    DEFERRED = "deferred"  # the schedule runner will try again
    FORECAST = "forecast"  # what the decider would have done, in forecast-only mode


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """One row of ``deployment_events``."""

    id: int
    deployment_id: int
    at_us: int
    action: EventAction
    actor: str | None
    outcome: EventOutcome
    detail: str | None
    # How long it took (a start or wake: to ready; a sleep or stop: to asleep or stopped) and
    # the resting level at its far end (0: a start or a stop), as the module says.
    ready_us: int | None = None
    from_level: int | None = None
    state: str | None = None  # the deployment's state after it (None: not recorded)

    def to_json(self) -> dict[str, Any]:
        """Return the event as JSON values."""
        return {
            "id": self.id,
            "deployment_id": self.deployment_id,
            "at_us": self.at_us,
            "action": self.action.value,
            "actor": self.actor,
            "outcome": self.outcome.value,
            "detail": self.detail,
            "ready_us": self.ready_us,
            "from_level": self.from_level,
            "state": self.state,
        }

    @classmethod
    def from_row(cls, row: Row[Any]) -> Event:
        """Read a ``deployment_events`` row."""
        return cls(
            id=int(row.id),
            deployment_id=int(row.deployment_id),
            at_us=int(row.at_us),
            action=EventAction(row.action),
            actor=row.actor,
            outcome=EventOutcome(row.outcome),
            detail=row.detail,
            ready_us=row.ready_us,
            from_level=row.from_level,
            state=row.state,
        )


class Events:
    """Writes and reads deployment events."""

    def __init__(self, engine: Engine, clock: Clock) -> None:
        self._engine = engine
        self._clock = clock

    def record(
        self,
        deployment_id: int,
        action: EventAction,
        *,
        actor: str | None,
        outcome: EventOutcome,
        detail: str | None = None,
        connection: Connection | None = None,
        took: tuple[int, int] | None = None,
        state: str | None = None,
        at_us: int | None = None,
    ) -> Event:
        """Write an event (inside ``connection``'s transaction when one is given).

        ``took``: how long the action took (microseconds) and the resting level at its far
        end, as the module says. ``state``: the deployment's state after it, when it moved.
        ``at_us``: when it happened, now by default (the demo writes its synthetic weeks).
        """
        values = {
            "deployment_id": deployment_id,
            "at_us": self._clock.now_us() if at_us is None else at_us,
            "action": action.value,
            "actor": actor,
            "outcome": outcome.value,
            "detail": detail,
            "ready_us": None if took is None else took[0],
            "from_level": None if took is None else took[1],
            "state": state,
        }
        if connection is None:
            with writing(self._engine) as owned:
                return self._insert(owned, values)
        return self._insert(connection, values)

    def _insert(self, connection: Connection, values: dict[str, Any]) -> Event:
        inserted = connection.execute(insert(deployment_events).values(**values))
        key = inserted.inserted_primary_key
        assert key is not None
        return Event.from_row(
            connection.execute(
                select(deployment_events).where(deployment_events.c.id == key[0])
            ).one()
        )

    def latest(
        self,
        deployment_id: int,
        action: EventAction,
        *,
        outcome: EventOutcome | None = EventOutcome.DONE,
    ) -> Event | None:
        """Return the newest event of ``action`` that ended with ``outcome`` (None: any).

        By default only an action that was done counts: "who stopped it" is asked of the
        stop that stopped it, not of a later one that was skipped because it was stopped.
        """
        query = select(deployment_events).where(
            deployment_events.c.deployment_id == deployment_id,
            deployment_events.c.action == action.value,
        )
        if outcome is not None:
            query = query.where(deployment_events.c.outcome == outcome.value)
        query = query.order_by(deployment_events.c.id.desc())  # ids follow the order written
        with reading(self._engine) as connection:
            row = connection.execute(query.limit(1)).first()
        return None if row is None else Event.from_row(row)

    def ready_times(self, deployment_id: int, level: int, last: int) -> builtins.list[int]:
        """Return the times to ready of its ``last`` starts (level 0) or wakes from ``level``.

        Oldest first, in microseconds: the measured wake lead's p95 is taken of them.
        """
        ups = (EventAction.START, EventAction.WAKE)
        return self._times(deployment_id, ups, level, last)

    def down_times(self, deployment_id: int, level: int, last: int) -> builtins.list[int]:
        """Return the times of its ``last`` stops (level 0) or sleeps at ``level``.

        Oldest first, in microseconds, a timed-out sleep at its bound: the priced idle
        policy takes their mean.
        """
        downs = (EventAction.STOP, EventAction.SLEEP)
        return self._times(deployment_id, downs, level, last)

    def _times(
        self, deployment_id: int, actions: tuple[EventAction, ...], level: int, last: int
    ) -> builtins.list[int]:
        c = deployment_events.c
        query = (
            select(c.ready_us)
            .where(c.deployment_id == deployment_id, c.from_level == level)
            .where(c.action.in_([a.value for a in actions]), c.ready_us.is_not(None))
            .order_by(c.id.desc())
            .limit(last)
        )
        with reading(self._engine) as connection:
            return [int(row.ready_us) for row in connection.execute(query)][::-1]

    def state_changes(
        self, deployment_id: int, since_us: int, until_us: int
    ) -> tuple[Event | None, builtins.list[Event]]:
        """Return the last state change done before ``since_us``, and those in the span.

        A state change is an action that moves the server (start, stop, sleep, wake, failed,
        reattach) and was done; oldest first. The savings report's timeline.
        """
        c = deployment_events.c
        changes = select(deployment_events).where(
            c.deployment_id == deployment_id,
            c.outcome == EventOutcome.DONE.value,
            c.action.in_([a.value for a in _STATE_CHANGES]),
        )
        with reading(self._engine) as connection:
            before = connection.execute(
                changes.where(c.at_us < since_us).order_by(c.id.desc()).limit(1)
            ).first()
            inside = connection.execute(
                changes.where(c.at_us >= since_us, c.at_us < until_us).order_by(c.id)
            )
            return (
                None if before is None else Event.from_row(before),
                [Event.from_row(row) for row in inside],
            )

    def stopped_by(self, deployment_id: int) -> str | None:
        """Return who stopped it last (None: never stopped, or a stop that names no actor)."""
        stop = self.latest(deployment_id, EventAction.STOP)
        return stop.actor if stop is not None else None

    def failed_since_done(self, deployment_id: int, action: EventAction) -> tuple[Event, ...]:
        """Return the failed ``action`` events since the last state change that was done.

        "Done" counts what changes the server's state (start, stop, sleep, wake, failed,
        reattach): a failed sleep after it left the deployment as it was, so a sleep found
        finished now is what those failed attempts asked for. Oldest first.
        """
        c = deployment_events.c
        last_done = (
            select(func.coalesce(func.max(c.id), 0))
            .where(
                c.deployment_id == deployment_id,
                c.outcome == EventOutcome.DONE.value,
                c.action.in_([a.value for a in _STATE_CHANGES]),
            )
            .scalar_subquery()
        )
        query = (
            select(deployment_events)
            .where(
                c.deployment_id == deployment_id,
                c.action == action.value,
                c.outcome == EventOutcome.FAILED.value,
                c.id > last_done,
            )
            .order_by(c.id)
        )
        with reading(self._engine) as connection:
            return tuple(Event.from_row(row) for row in connection.execute(query))

    def newest(
        self,
        *,
        limit: int,
        deployment_id: int | None = None,
        outcomes: frozenset[EventOutcome] | None = None,
        since_us: int | None = None,
        until_us: int | None = None,
        before: tuple[int, int] | None = None,
        every_action: bool = False,
    ) -> builtins.list[Event]:
        """Return the actions that move a server, of every deployment, newest first.

        The Runs page's other half: start, stop, sleep, wake, failed and reattach (a
        definition's create or update is the audit's). ``since_us`` inclusive, ``until_us``
        exclusive; ``before``: only events after this (time, id) in the order.
        ``every_action``: every event, create and update too (a deployment's page lists them).
        """
        if not 1 <= limit <= 10_000:
            raise InvalidInput("limit", f"{limit} is out of range 1-10000")
        c = deployment_events.c
        query = select(deployment_events).order_by(c.at_us.desc(), c.id.desc()).limit(limit)
        if not every_action:
            query = query.where(c.action.in_([a.value for a in _STATE_CHANGES]))
        if deployment_id is not None:
            query = query.where(c.deployment_id == deployment_id)
        if outcomes is not None:
            query = query.where(c.outcome.in_([o.value for o in outcomes]))
        if since_us is not None:
            query = query.where(c.at_us >= since_us)
        if until_us is not None:
            query = query.where(c.at_us < until_us)
        if before is not None:
            at, event_id = before
            query = query.where(or_(c.at_us < at, and_(c.at_us == at, c.id < event_id)))
        with reading(self._engine) as connection:
            return [Event.from_row(row) for row in connection.execute(query)]

    def get(self, event_id: int) -> Event | None:
        """Return one event, or None."""
        query = select(deployment_events).where(deployment_events.c.id == event_id)
        with reading(self._engine) as connection:
            row = connection.execute(query).first()
        return None if row is None else Event.from_row(row)

    def list(
        self, deployment_id: int, limit: int = 100, *, before_id: int | None = None
    ) -> builtins.list[Event]:
        """Return a deployment's events, newest first (``before_id`` pages back)."""
        if not 1 <= limit <= 10_000:
            raise InvalidInput("limit", f"{limit} is out of range 1-10000")
        query = select(deployment_events).where(deployment_events.c.deployment_id == deployment_id)
        if before_id is not None:
            query = query.where(deployment_events.c.id < before_id)
        query = query.order_by(deployment_events.c.id.desc()).limit(limit)
        with reading(self._engine) as connection:
            return [Event.from_row(row) for row in connection.execute(query)]
