"""The ledger: what a policy held and freed, and what it cost the requests, in one set of words.

The words are DESIGN.md's ("Savings"), the same in the lab, the report and the proposals:

- **Held**: GiB-hours of GPU memory a deployment holds, awake or asleep: its memory in each
  phase (``Footprint``) times the time in that phase (``Timeline``). A sleep, stop, wake or
  start under way holds the awake memory: the memory is not free until the server says so,
  and a wake fills it again before the first request is served.
- **Freed**: always-on's held minus the policy's held, over the same span.
- **Cold request**: one that arrives while its deployment is not awake (asleep, stopped,
  waking, starting, going down). Its **added wait** runs from its arrival until it is
  forwarded; a refused one counts as cold with its refusal reason.
- **Wait-seconds**: the added waits summed, in request-seconds. The **mean added wait** and
  the **p99 over all requests** count every served request, a warm one as 0: a policy that
  makes few people wait long and one that makes many wait a little are told apart only so.
  A refused request has no wait (it is counted apart, by reason) and is left out of these.
- **Cost at a price W**: ``GiB-hours held + W x request-seconds waited``, W in GiB-hours per
  request-second (``STANDARD_PRICES``; the lab's default is the middle one).

``Ledger.of`` reads one deployment's timeline and its requests' waits into these figures;
``share_of_oracle`` compares a policy with the oracle (``oracle.py``) on the same trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from dgxmm.errors import InvalidInput
from dgxmm.lab.traces.trace import Ints
from dgxmm.time_units import HOUR_US, SECOND_US

__all__ = [
    "DEFAULT_PRICE",
    "MAX_PRICE",
    "STANDARD_PRICES",
    "Footprint",
    "Ledger",
    "Phase",
    "Replayed",
    "Timeline",
    "check_price",
    "read_price",
    "share_of_oracle",
]

# GiB-hours one request-second of waiting is worth: a hundredth (memory is dear, waiting
# cheap), a tenth, and one (a user's second as dear as a GiB held for an hour).
STANDARD_PRICES = (0.01, 0.1, 1.0)
DEFAULT_PRICE = 0.1  # the middle one, when the user names none (docs/savings.md)


def check_price(price: float) -> float:
    """Return ``price`` if it is a price of waiting (finite, >= 0), else raise ValueError.

    0 is a price: waiting is free, and the cost is the memory alone.
    """
    if not np.isfinite(price) or price < 0:
        raise ValueError(
            f"price: {price} is not a finite number >= 0 (GiB-hours per request-second)"
        )
    return price


# The most a user may price a request-second at: a million GiB-hours, past any fleet's worth,
# and far enough below a float's end that no cost of a report or a replay overflows to inf.
MAX_PRICE = 1e6


def read_price(text: str, field: str = "price") -> float:
    """Read a price the user typed: a number from 0 to ``MAX_PRICE``, else ``InvalidInput``
    naming ``field``. The one reader of ``--price`` and of the ``price`` query parameter."""
    try:
        price = check_price(float(text))
    except ValueError:
        raise InvalidInput(
            field, f"{text!r} is not a number >= 0 (GiB-hours per request-second)"
        ) from None
    if price > MAX_PRICE:
        raise InvalidInput(field, f"{text} is more than {MAX_PRICE:g} GiB-hours per request-second")
    return price


class Phase(StrEnum):
    """Where a deployment is, as the ledger counts it."""

    AWAKE = "awake"  # serves at once
    GOING_DOWN = "going_down"  # a sleep or a stop under way
    ASLEEP_1 = "asleep_1"  # vLLM's level 1: weights in CPU memory
    ASLEEP_2 = "asleep_2"  # level 2: weights dropped
    STOPPED = "stopped"
    WAKING = "waking"  # a wake under way
    STARTING = "starting"  # a start under way

    @property
    def holds_awake_memory(self) -> bool:
        """Tell whether the deployment holds its awake memory in this phase."""
        return self in _HOLDS_AWAKE

    @property
    def is_resting(self) -> bool:
        """Tell whether this is a phase a deployment rests in to free memory."""
        return self in RESTING

    @property
    def way_up(self) -> Phase:
        """Return the phase that brings a deployment back from this resting one."""
        if not self.is_resting:
            raise ValueError(f"{self.value} is not a phase a deployment rests in")
        return Phase.STARTING if self is Phase.STOPPED else Phase.WAKING


_HOLDS_AWAKE = frozenset({Phase.AWAKE, Phase.GOING_DOWN, Phase.WAKING, Phase.STARTING})
RESTING = (Phase.ASLEEP_1, Phase.ASLEEP_2, Phase.STOPPED)
_CODES = {phase: code for code, phase in enumerate(Phase)}
_PHASES = tuple(Phase)


@dataclass(frozen=True, slots=True, kw_only=True)
class Footprint:
    """The GPU memory a deployment holds in each phase, in GiB, summed over its GPUs."""

    awake_gib: float
    level_1_gib: float  # asleep at level 1
    level_2_gib: float  # asleep at level 2

    def __post_init__(self) -> None:
        if not 0 <= self.level_2_gib <= self.level_1_gib <= self.awake_gib:
            raise ValueError(
                "a footprint holds 0 <= level 2 <= level 1 <= awake GiB, got "
                f"{self.level_2_gib}, {self.level_1_gib}, {self.awake_gib}"
            )

    def gib(self, phase: Phase) -> float:
        """Return the memory held in ``phase``."""
        if phase.holds_awake_memory:
            return self.awake_gib
        if phase is Phase.ASLEEP_1:
            return self.level_1_gib
        if phase is Phase.ASLEEP_2:
            return self.level_2_gib
        return 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeline:
    """A deployment's phases over ``[start_us, end_us)``: phase ``i`` from ``starts[i]`` on."""

    start_us: int
    end_us: int
    starts: Ints  # non-decreasing, starts[0] == start_us
    codes: Ints  # each phase's index in ``Phase``

    def __post_init__(self) -> None:
        if self.end_us < self.start_us:
            raise ValueError(f"a timeline ends ({self.end_us}) before it starts ({self.start_us})")
        if len(self.starts) != len(self.codes) or not len(self.starts):
            raise ValueError("a timeline has one code per start, and at least one")
        if int(self.starts[0]) != self.start_us or bool(np.any(np.diff(self.starts) < 0)):
            raise ValueError("a timeline's phases start at its start, in order")

    @classmethod
    def of(cls, start_us: int, end_us: int, phases: list[tuple[int, Phase]]) -> Timeline:
        """Build a timeline from ``(from_us, phase)`` pairs, the first at ``start_us``."""
        return cls(
            start_us=start_us,
            end_us=end_us,
            starts=np.asarray([at for at, _ in phases], dtype=np.int64),
            codes=np.asarray([_CODES[phase] for _, phase in phases], dtype=np.int64),
        )

    @classmethod
    def joined(cls, start_us: int, end_us: int, phases: list[tuple[int, Phase]]) -> Timeline:
        """Build a timeline from pairs that may hold phases lasting no time or repeating.

        A phase another one replaces at the same instant lasted no time and is dropped; a
        phase that follows itself is the same stretch. Replays write their pairs as events
        happen and leave the tidying to this.
        """
        if not phases:
            return cls.of(start_us, end_us, phases)  # refused there: a timeline has a phase
        starts = np.asarray([at for at, _ in phases], dtype=np.int64)
        codes = np.asarray([_CODES[phase] for _, phase in phases], dtype=np.int64)
        # Of the pairs at one instant the last stands; then a phase that repeats the one
        # before it is the same stretch (the same as dropping them one by one, in order).
        last = np.append(starts[1:] != starts[:-1], True)
        starts, codes = starts[last], codes[last]
        fresh = np.append(True, codes[1:] != codes[:-1])
        return cls(start_us=start_us, end_us=end_us, starts=starts[fresh], codes=codes[fresh])

    @classmethod
    def always(cls, start_us: int, end_us: int, phase: Phase = Phase.AWAKE) -> Timeline:
        """A timeline in one phase throughout (always-on is ``Timeline.always(...)``)."""
        return cls.of(start_us, end_us, [(start_us, phase)])

    def clipped(self, start_us: int, end_us: int) -> Timeline:
        """Return the part of the timeline in ``[start_us, end_us)`` (within its own span)."""
        start_us = max(start_us, self.start_us)
        end_us = max(start_us, min(end_us, self.end_us))
        first = max(0, int(np.searchsorted(self.starts, start_us, side="right")) - 1)
        last = int(np.searchsorted(self.starts, end_us, side="left"))
        starts = self.starts[first : max(last, first + 1)].copy()
        starts[0] = start_us
        return Timeline(
            start_us=start_us,
            end_us=end_us,
            starts=starts,
            codes=self.codes[first : max(last, first + 1)].copy(),
        )

    def phases(self) -> list[tuple[int, Phase]]:
        """Return the ``(from_us, phase)`` pairs."""
        return [
            (int(at), _PHASES[int(code)]) for at, code in zip(self.starts, self.codes, strict=True)
        ]

    def phase_codes_at(self, at_us: Ints) -> Ints:
        """Return the phase code at each instant of ``at_us`` (in ``[start_us, end_us)``)."""
        index = np.searchsorted(self.starts, at_us, side="right") - 1
        found: Ints = self.codes[np.clip(index, 0, len(self.codes) - 1)]
        return found

    def durations_us(self) -> Ints:
        """Return how long each phase lasts (the last one until ``end_us``)."""
        ends = np.append(self.starts[1:], self.end_us)
        lasting: Ints = np.maximum(ends - self.starts, 0)
        return lasting

    def entries(self, phase: Phase) -> int:
        """Return how many times the timeline enters ``phase`` (not counting its first)."""
        return int(np.count_nonzero(self.codes[1:] == _CODES[phase]))

    def ways_down(self, resting: Phase) -> int:
        """Return how many times it went down into ``resting`` (a deepening counts as one).

        A way down whose resting phase lasted no time (a request held behind the shut door
        brings it up the instant it is down) leaves no such phase: ``joined`` drops it. It is
        read from the way up that follows: every start begins from stopped, every wake from
        asleep, so a start or wake that follows anything else follows a rest of no time. One
        such wake is counted at level 1; a deepening of no time, between level 1 and a wake,
        leaves nothing to read and is not counted.
        """
        up = _CODES[resting.way_up]
        if resting is Phase.STOPPED:
            unseen = (self.codes[1:] == up) & (self.codes[:-1] != _CODES[Phase.STOPPED])
        elif resting is Phase.ASLEEP_1:
            asleep = np.isin(self.codes[:-1], [_CODES[Phase.ASLEEP_1], _CODES[Phase.ASLEEP_2]])
            unseen = (self.codes[1:] == up) & ~asleep
        else:
            return self.entries(Phase.ASLEEP_2)
        return self.entries(resting) + int(np.count_nonzero(unseen))


@dataclass(frozen=True, slots=True, kw_only=True)
class Replayed:
    """A policy's replay of one deployment: its phases and each request's added wait.

    What ``Ledger.of`` reads, for a policy replayed outside the fleet's loop (the anchors,
    the lazy oracle).
    """

    timeline: Timeline
    waits_us: Ints  # per request, in arrival order


@dataclass(frozen=True, slots=True, kw_only=True)
class Ledger:
    """One deployment under one policy: what it held and freed, and what its requests met."""

    name: str
    hours: float  # the span
    held_awake_gib_h: float  # in the phases that hold the awake memory
    held_asleep_gib_h: float  # asleep at either level
    always_on_gib_h: float
    requests: int
    cold: int  # arrived while not awake (refused ones included)
    waits_s: tuple[float, ...]  # each cold request's added wait, the refused left out
    refused: Mapping[str, int] = field(default_factory=dict)  # by reason
    wakes: int = 0
    starts: int = 0
    sleeps: int = 0
    stops: int = 0

    @classmethod
    def of(
        cls,
        name: str,
        footprint: Footprint,
        timeline: Timeline,
        arrivals_us: Ints,
        *,
        waits_us: Ints | None = None,
        refused: Mapping[str, int] | None = None,
    ) -> Ledger:
        """Count one deployment's timeline and requests.

        ``waits_us`` gives each request's added wait (0 for one served at once, -1 for one
        refused); without it every cold request is taken to have waited 0, which only the
        oracle may claim. ``refused`` counts the requests refused, by reason; they are among
        the cold ones, and their waits are left out of the quantiles.
        """
        lasting = timeline.durations_us()
        gib = np.asarray([footprint.gib(phase) for phase in _PHASES])[timeline.codes]
        awake = np.asarray([phase.holds_awake_memory for phase in _PHASES])[timeline.codes]
        span_us = timeline.end_us - timeline.start_us
        codes = timeline.phase_codes_at(arrivals_us)
        cold_mask = codes != _CODES[Phase.AWAKE]
        if waits_us is not None and len(waits_us) != len(arrivals_us):
            raise ValueError("give one wait per request")
        waits = waits_us[cold_mask] if waits_us is not None else np.zeros(int(cold_mask.sum()))
        refusals = dict(refused or {})
        kept = waits[waits >= 0] / SECOND_US  # a refused request's wait is given as -1
        return cls(
            name=name,
            hours=span_us / HOUR_US,
            held_awake_gib_h=float(np.sum(lasting * gib * awake)) / HOUR_US,
            held_asleep_gib_h=float(np.sum(lasting * gib * ~awake)) / HOUR_US,
            always_on_gib_h=footprint.awake_gib * span_us / HOUR_US,
            requests=len(arrivals_us),
            cold=int(cold_mask.sum()),
            waits_s=tuple(float(w) for w in kept),
            refused=refusals,
            wakes=timeline.entries(Phase.WAKING),
            starts=timeline.entries(Phase.STARTING),
            sleeps=timeline.ways_down(Phase.ASLEEP_1) + timeline.ways_down(Phase.ASLEEP_2),
            stops=timeline.ways_down(Phase.STOPPED),
        )

    @property
    def held_gib_h(self) -> float:
        """Return what it held in all."""
        return self.held_awake_gib_h + self.held_asleep_gib_h

    @property
    def freed_gib_h(self) -> float:
        """Return always-on's held minus this policy's."""
        return self.always_on_gib_h - self.held_gib_h

    @property
    def cold_share(self) -> float:
        """Return the share of requests that met a deployment that was not awake."""
        return self.cold / self.requests if self.requests else 0.0

    def wait_s(self, quantile: float) -> float:
        """Return a quantile of the cold requests' added waits, in seconds (0 with none)."""
        if not self.waits_s:
            return 0.0
        return float(np.quantile(np.asarray(self.waits_s), quantile, method="higher"))

    @property
    def wait_total_s(self) -> float:
        """Return the added waits summed, in request-seconds."""
        return float(sum(self.waits_s))

    @property
    def served(self) -> int:
        """Return the requests that were forwarded (the refused left out)."""
        return self.requests - sum(self.refused.values())

    @property
    def wait_mean_s(self) -> float:
        """Return the mean added wait over every served request, a warm one as 0."""
        return self.wait_total_s / self.served if self.served > 0 else 0.0

    def wait_all_s(self, quantile: float) -> float:
        """Return a quantile of every served request's added wait, a warm one as 0.

        The same nearest-rank-above (``method="higher"``) as ``wait_s``, over the cold
        requests' waits with a 0 for each warm one.
        """
        warm = max(self.served - len(self.waits_s), 0)
        if not warm and not self.waits_s:
            return 0.0
        every = np.concatenate((np.zeros(warm), np.asarray(self.waits_s, dtype=float)))
        return float(np.quantile(every, quantile, method="higher"))

    def cost(self, price: float) -> float:
        """Return ``GiB-hours held + price x request-seconds waited`` (a ``check_price`` price)."""
        return self.held_gib_h + check_price(price) * self.wait_total_s

    def to_json(self) -> dict[str, Any]:
        """Return the figures as JSON values (the cost, which needs a price, is the caller's)."""
        return {
            "name": self.name,
            "hours": self.hours,
            "held_awake_gib_h": self.held_awake_gib_h,
            "held_asleep_gib_h": self.held_asleep_gib_h,
            "freed_gib_h": self.freed_gib_h,
            "requests": self.requests,
            "cold": self.cold,
            "cold_share": self.cold_share,
            "wait_p50_s": self.wait_s(0.5),
            "wait_p99_s": self.wait_s(0.99),
            "wait_max_s": max(self.waits_s, default=0.0),
            "wait_total_s": self.wait_total_s,
            "wait_mean_s": self.wait_mean_s,
            "wait_p99_all_s": self.wait_all_s(0.99),
            "refused": dict(self.refused),
            "wakes": self.wakes,
            "starts": self.starts,
            "sleeps": self.sleeps,
            "stops": self.stops,
        }


def share_of_oracle(policy: Ledger, oracle: Ledger) -> float:
    """Return a policy's freed GiB-hours over the oracle's, on the same trace (1.0 when both 0)."""
    if oracle.freed_gib_h <= 0:
        return 1.0 if policy.freed_gib_h <= 0 else float("inf")
    return policy.freed_gib_h / oracle.freed_gib_h
