"""A deployment's idle settings: its idle ladder, its idle policy and its wake lead.

They are part of the deployment's definition (``check_definition`` reads them, the API, the
form and the CLI give them), and the decider acts on them (``dgxmm.decider.idle``: the
ladder's steps and the histogram policy; ``dgxmm.decider.schedules.lead``: how early a
scheduled wake begins). They live here, with the row, so that the fleet checks a definition
whole without reaching up into the decider (issue 25).

- ``IdleLadder``: three optional steps, each after a time without requests: a sleep at level 1
  (``idle_sleep_after_s``), a deepening to level 2 (``idle_deepen_after_s``), a stop
  (``idle_stop_after_s``); off by default, and when given, in that order.
- ``IdlePolicy``: ``ladder`` (the default: the steps as given), ``histogram`` (keep-alive
  and pre-wake windows learned from the deployment's idle gaps, falling back to the ladder
  while they are not representative) or ``priced`` (its own rungs from the break-even rule
  at a price of waiting, over its measured durations; the ladder's steps are not used).
- ``WakeLead``: ``off`` (the spec's behaviour), a number of seconds, or ``measured``.
- ``WaitBudget`` (``idle_wait_budget``, issue 42): the added wait per request the priced
  policy may spend, as a mean in milliseconds and/or a p99 in seconds; the decider finds
  the price that spends it (``dgxmm.decider.idle.budget``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from dgxmm.errors import DefinitionError
from dgxmm.time_units import MINUTE_US, SECOND_US

__all__ = [
    "LEAD_OFF",
    "MAX_BUDGET_MEAN_MS",
    "MAX_BUDGET_P99_S",
    "MAX_LEAD_US",
    "IdleLadder",
    "IdlePolicy",
    "LeadKind",
    "WaitBudget",
    "WakeLead",
    "parse_idle_policy",
    "parse_wait_budget",
    "parse_wake_lead",
]

_MOST_S = 365 * 86400  # a year: a longer idle wait is a typo, not a policy
MAX_LEAD_US = 15 * MINUTE_US


class IdlePolicy(StrEnum):
    """What a deployment nobody uses does by itself."""

    LADDER = "ladder"  # the idle ladder's steps as given (none: nothing)
    HISTOGRAM = "histogram"  # windows learned from its idle gaps; the ladder until they are
    PRICED = "priced"  # rungs from the break-even rule at a price of waiting (issue 42)


def parse_idle_policy(value: object, field: str = "idle_policy") -> IdlePolicy:
    """Read ``ladder``, ``histogram`` or ``priced`` (absent: ``ladder``); refuse naming it."""
    if value is None:
        return IdlePolicy.LADDER
    for policy in IdlePolicy:
        if value == policy.value:
            return policy
    raise DefinitionError(field, f"{value!r} is not 'ladder', 'histogram' or 'priced'")


@dataclass(frozen=True, slots=True, kw_only=True)
class IdleLadder:
    """A deployment's idle steps, each in microseconds without requests; None: no such step."""

    sleep_after_us: int | None = None
    deepen_after_us: int | None = None
    stop_after_us: int | None = None

    @classmethod
    def of_seconds(
        cls,
        *,
        sleep_after_s: object = None,
        deepen_after_s: object = None,
        stop_after_s: object = None,
        field_prefix: str = "idle_",
    ) -> IdleLadder:
        """Check a ladder given in seconds; refuse naming the field (``DefinitionError``)."""
        given = {"sleep_after_s": sleep_after_s, "deepen_after_s": deepen_after_s,
                 "stop_after_s": stop_after_s}  # fmt: skip
        steps: dict[str, int | None] = {}
        previous: tuple[str, int] | None = None  # the step before: its name, microseconds
        for name, value in given.items():
            field = f"{field_prefix}{name}"
            if value is None:
                steps[name] = None
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise DefinitionError(field, f"{value!r} is not a number of seconds")
            if not 1 <= value <= _MOST_S:  # NaN fails both comparisons
                raise DefinitionError(field, f"{value!r} is not from 1 s to {_MOST_S} s (a year)")
            us = round(value * SECOND_US)
            # Compared as kept, in microseconds: seconds apart by less than one would be
            # accepted here, then refused when the ladder's own to_json is read back.
            if previous is not None and us <= previous[1]:
                earlier = f"{field_prefix}{previous[0]}"
                raise DefinitionError(
                    field, f"{value:g} s is not after {earlier} ({previous[1] / SECOND_US:g} s)"
                )
            previous = (name, us)
            steps[name] = us
        return cls(
            sleep_after_us=steps["sleep_after_s"],
            deepen_after_us=steps["deepen_after_s"],
            stop_after_us=steps["stop_after_s"],
        )

    def to_json(self) -> dict[str, float]:
        """Return the steps given, in seconds, by their names without the ``idle_`` prefix."""
        steps = {"sleep_after_s": self.sleep_after_us, "deepen_after_s": self.deepen_after_us,
                 "stop_after_s": self.stop_after_us}  # fmt: skip
        return {key: us / SECOND_US for key, us in steps.items() if us is not None}

    @property
    def is_off(self) -> bool:
        """Tell whether the ladder has no step at all (the default)."""
        return self.sleep_after_us is self.deepen_after_us is self.stop_after_us is None

    def first_after_us(self) -> int | None:
        """Return the idle time of the ladder's first step, or None when it is off."""
        found = [at for at in self.steps_us() if at is not None]
        return min(found) if found else None

    def steps_us(self) -> tuple[int | None, int | None, int | None]:
        """Return the sleep, deepen and stop times, in that order."""
        return (self.sleep_after_us, self.deepen_after_us, self.stop_after_us)


class LeadKind(StrEnum):
    """How a deployment's wake lead is given."""

    OFF = "off"
    SECONDS = "seconds"
    MEASURED = "measured"


@dataclass(frozen=True, slots=True, kw_only=True)
class WakeLead:
    """A deployment's ``wake_lead`` setting."""

    kind: LeadKind = LeadKind.OFF
    seconds: float = 0.0  # for SECONDS only

    def to_json(self) -> str | float:
        """Return the setting as the API gives it: ``off``, ``measured`` or seconds."""
        return self.seconds if self.kind is LeadKind.SECONDS else self.kind.value


LEAD_OFF = WakeLead()


def parse_wake_lead(value: object, field: str = "wake_lead") -> WakeLead:
    """Read ``off``, ``measured`` or a number of seconds (0 to 900); refuse naming ``field``."""
    if value is None or value == LeadKind.OFF.value:
        return LEAD_OFF
    if value == LeadKind.MEASURED.value:
        return WakeLead(kind=LeadKind.MEASURED)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DefinitionError(field, f"{value!r} is not 'off', 'measured' or a number of seconds")
    most = MAX_LEAD_US / SECOND_US
    if not 0 <= value <= most:  # NaN fails both
        raise DefinitionError(field, f"{value!r} is not from 0 to {most:g} seconds")
    return LEAD_OFF if value == 0 else WakeLead(kind=LeadKind.SECONDS, seconds=float(value))


# A budget's bounds: the proxy holds a request at most 600 s (``max_hold_s``), so no wait
# the policy could spend is longer; a mean of more than that is a typo, not a budget.
MAX_BUDGET_MEAN_MS = 600_000.0
MAX_BUDGET_P99_S = 600.0
_BUDGET_KEYS = ("mean_ms", "p99_s")


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitBudget:
    """The added wait per request a deployment's priced policy may spend (issue 42).

    One object, not two fields: a budget is set, changed and cleared whole, so that an edit
    of its mean never leaves a p99 of another budget behind it, and the price found is for
    one budget (the decider records which). At least one of the two is given.
    """

    mean_ms: float | None = None  # the mean added wait over every request, in milliseconds
    p99_s: float | None = None  # the p99 added wait over every request, in seconds

    def to_json(self) -> dict[str, float]:
        """Return the limits given, by their keys (``{"mean_ms": 50, "p99_s": 5}``)."""
        given = {"mean_ms": self.mean_ms, "p99_s": self.p99_s}
        return {key: value for key, value in given.items() if value is not None}

    def allows(self, wait_mean_s: float, wait_p99_s: float) -> bool:
        """Tell whether a mean and a p99 added wait (in seconds) are within the budget."""
        if self.mean_ms is not None and wait_mean_s * 1000 > self.mean_ms:
            return False
        return self.p99_s is None or wait_p99_s <= self.p99_s

    def describe(self) -> str:
        """Return the budget in words: "50 ms mean added wait, 5 s p99"."""
        parts = []
        if self.mean_ms is not None:
            parts.append(f"{self.mean_ms:g} ms mean added wait")
        if self.p99_s is not None:
            parts.append(f"{self.p99_s:g} s p99")
        return ", ".join(parts)


def parse_wait_budget(value: object, field: str = "idle_wait_budget") -> WaitBudget | None:
    """Read ``{"mean_ms": 50, "p99_s": 5}`` (either or both; null: none); refuse naming it."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise DefinitionError(
            field, f'{value!r} is not an object such as {{"mean_ms": 50, "p99_s": 5}}'
        )
    for key in value:
        if key not in _BUDGET_KEYS:
            raise DefinitionError(f"{field}.{key}", "is not mean_ms or p99_s")
    if not value:
        raise DefinitionError(field, "give mean_ms, p99_s or both (null: no budget)")
    limits: dict[str, float | None] = {}
    for key, most, unit in (("mean_ms", MAX_BUDGET_MEAN_MS, "ms"),
                            ("p99_s", MAX_BUDGET_P99_S, "s")):  # fmt: skip
        given = value.get(key)
        if given is None:
            limits[key] = None
            continue
        if isinstance(given, bool) or not isinstance(given, int | float):
            raise DefinitionError(f"{field}.{key}", f"{given!r} is not a number of {unit}")
        if not 0 <= given <= most:  # NaN fails both
            raise DefinitionError(f"{field}.{key}", f"{given!r} is not from 0 to {most:g} {unit}")
        limits[key] = float(given)
    if limits["mean_ms"] is None and limits["p99_s"] is None:
        raise DefinitionError(field, "give mean_ms, p99_s or both (null: no budget)")
    return WaitBudget(mean_ms=limits["mean_ms"], p99_s=limits["p99_s"])
