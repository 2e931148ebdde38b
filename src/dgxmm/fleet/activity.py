"""Request activity as the proxy sees it: requests under way and the last one, per deployment.

The proxy counts every request it takes for a deployment (``enter`` / ``leave``), held or
forwarded; health probes, metrics scrapes and dgxmm's post-wake check never go through it,
so they never count. Traffic that reaches a server around the proxy is still seen by the
scraped metrics; the schedule runner's quiet check asks both.

**The door.** A take-down (a sleep or a stop, and the schedule runner's quiet check before
one) *closes* the deployment's door for as long as it runs. A request that enters while the
door is closed is told so, and knocks: the quiet check that finds a knock defers its sleep
(the request arrived during the re-check), and the proxy does not forward to a server that
may be going to sleep, but holds the request until the deployment's lock is free and looks
again. Each time a door opens the deployment's ``generation`` moves on, so a proxy that
cached the deployment's state knows to read it again.

Thread-safe; the clock is injected.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from dgxmm.clock import Clock
from dgxmm.time_units import MINUTE_US

__all__ = ["MAX_ARRIVALS", "MAX_WAITS", "Door", "Entry", "Minute", "RequestActivity"]


@dataclass(slots=True)
class Door:
    """One closing of a deployment's door; ``knocked`` once a request entered meanwhile."""

    knocked: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """What ``enter`` saw: whether a take-down had the door shut, and the generation."""

    closed: bool
    generation: int
    at_us: int  # when it arrived (the record's minute of arrival)


# Added waits kept per deployment and minute for the savings report; past this many held
# requests in one minute, only the count goes on (the percentiles read the first ones).
MAX_WAITS = 2000


@dataclass(slots=True)
class Minute:
    """What the proxy saw of one deployment in one minute of arrivals."""

    requests: int = 0
    held: int = 0  # held while it was brought up, then forwarded
    waits_ms: list[int] = field(default_factory=list)  # their added waits
    refused: dict[str, int] = field(default_factory=dict)  # by refusal reason


# Arrivals kept for the idle policy between two of its pulses (a second apart): past this
# many, the oldest go. They would all fall in the histogram's first 1-minute bin anyway.
MAX_ARRIVALS = 4096


@dataclass(slots=True)
class _Deployment:
    in_flight: int = 0
    last_request_at: int | None = None
    generation: int = 0
    doors: list[Door] = field(default_factory=list)
    arrivals: list[int] = field(default_factory=list)  # since take_arrivals last took them


class RequestActivity:
    """Per deployment: requests under way, the last request, the door; see the module."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._by_id: dict[int, _Deployment] = {}
        self._minutes: dict[tuple[int, int], Minute] = {}  # (deployment, minute) -> counts

    def enter(self, deployment_id: int) -> Entry:
        """Count a request that arrived now; tell whether a take-down has the door shut."""
        now = self._clock.now_us()
        with self._lock:
            known = self._of(deployment_id)
            known.in_flight += 1
            if known.last_request_at is None or known.last_request_at < now:
                known.last_request_at = now
            if len(known.arrivals) >= MAX_ARRIVALS:
                del known.arrivals[: MAX_ARRIVALS // 2]
            known.arrivals.append(now)
            self._minute(deployment_id, now).requests += 1
            for door in known.doors:
                door.knocked = True
            return Entry(closed=bool(known.doors), generation=known.generation, at_us=now)

    def leave(self, deployment_id: int) -> None:
        """Count a request answered, refused or abandoned."""
        with self._lock:
            known = self._of(deployment_id)
            known.in_flight = max(0, known.in_flight - 1)

    def in_flight(self, deployment_id: int) -> int:
        """Return how many requests the proxy holds or forwards for it now."""
        with self._lock:
            return self._of(deployment_id).in_flight

    def last_request_at(self, deployment_id: int) -> int | None:
        """Return when a request for it last arrived at the proxy, or None."""
        with self._lock:
            return self._of(deployment_id).last_request_at

    def held(self, deployment_id: int, arrived_us: int, wait_us: int) -> None:
        """Count a request held while its deployment was brought up, then forwarded.

        In the minute it arrived (``Entry.at_us``), with its added wait.
        """
        with self._lock:
            minute = self._minute(deployment_id, arrived_us)
            minute.held += 1
            if len(minute.waits_ms) < MAX_WAITS:
                minute.waits_ms.append(max(0, round(wait_us / 1000)))

    def refused(self, deployment_id: int, reason: str) -> None:
        """Count a request refused (a 503 with its reason), in the minute it is answered."""
        now = self._clock.now_us()
        with self._lock:
            refused = self._minute(deployment_id, now).refused
            refused[reason] = refused.get(reason, 0) + 1

    def take_minutes(self) -> dict[tuple[int, int], Minute]:
        """Return what was counted per (deployment, minute) since the last call; forget it."""
        with self._lock:
            taken, self._minutes = self._minutes, {}
        return taken

    def _minute(self, deployment_id: int, at_us: int) -> Minute:
        key = (deployment_id, at_us - at_us % MINUTE_US)
        found = self._minutes.get(key)
        if found is None:
            found = self._minutes[key] = Minute()
        return found

    def take_arrivals(self) -> dict[int, list[int]]:
        """Return each deployment's arrivals since the last call, oldest first, and forget them.

        The histogram policy learns its idle gaps from them (``dgxmm.decider.idle``).
        """
        with self._lock:
            taken = {key: known.arrivals for key, known in self._by_id.items() if known.arrivals}
            for key in taken:
                self._by_id[key].arrivals = []
        return taken

    def generation(self, deployment_id: int) -> int:
        """Return how many times its door has opened (a cached state older than it is stale)."""
        with self._lock:
            return self._of(deployment_id).generation

    def generations(self) -> dict[int, int]:
        """Return every deployment's generation now (one not listed is at 0)."""
        with self._lock:
            return {key: known.generation for key, known in self._by_id.items()}

    def is_closed(self, deployment_id: int) -> bool:
        """Tell whether a take-down has its door shut now."""
        with self._lock:
            return bool(self._of(deployment_id).doors)

    @contextmanager
    def closing(self, deployment_id: int) -> Iterator[Door]:
        """Shut the door for the block (closings nest); yield it to read its knocks."""
        door = Door()
        with self._lock:
            self._of(deployment_id).doors.append(door)
        try:
            yield door
        finally:
            with self._lock:
                known = self._of(deployment_id)
                known.doors.remove(door)
                known.generation += 1

    def forget(self, deployment_id: int) -> None:
        """Drop what it knows of a removed deployment (ids may be used again)."""
        with self._lock:
            self._by_id.pop(deployment_id, None)
            for key in [key for key in self._minutes if key[0] == deployment_id]:
                del self._minutes[key]

    def _of(self, deployment_id: int) -> _Deployment:
        known = self._by_id.get(deployment_id)
        if known is None:
            known = self._by_id[deployment_id] = _Deployment()
        return known
