"""How long the simulated server takes: duration distributions, and a deployment's set of them.

A replay draws each start, stop, sleep and wake it simulates from a distribution, so that two
wakes of one deployment need not take the same time (the real ones do not). A distribution is
one of four shapes, each a frozen value with ``draw(rng, n)`` (integer microseconds, never
negative, never more than a day) and ``median_us`` (what the oracle is given: it knows the
future, so it takes the durations as one figure each, see ``oracle.py``):

- ``Fixed(value_us)``: always the same;
- ``Uniform(low_us, high_us)``: any microsecond between, both included;
- ``LogNormal(median_us, sigma)``: the usual shape of a service time, a long right tail;
  ``LogNormal.of_p90`` builds one from its median and 90th percentile, the two figures a
  published benchmark or a log most often gives;
- ``Empirical(values_us)``: one of the given values, each as likely (a measured sample).

In a fleet file a duration is written in seconds: a bare number is a fixed duration, else an
object with its ``kind``::

    2.5
    {"kind": "fixed", "value_s": 2.5}
    {"kind": "uniform", "low_s": 1, "high_s": 3}
    {"kind": "lognormal", "median_s": 0.8, "p90_s": 4}     (or "sigma" instead of "p90_s")
    {"kind": "empirical", "values_s": [0.3, 0.4, 2.1]}

``ServerTimes`` holds one deployment's six distributions; its defaults are vLLM's published
figures, each with its source in ``ServerTimes``' docstring and in docs/savings.md ("The
simulated server's durations").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from statistics import NormalDist
from typing import Any, ClassVar

import numpy as np

from dgxmm.errors import DefinitionError
from dgxmm.lab.ledger import Phase
from dgxmm.lab.oracle import RoundTrip
from dgxmm.lab.traces.trace import Ints
from dgxmm.time_units import DAY_US, SECOND_US

__all__ = [
    "MAX_DURATION_US",
    "Duration",
    "DurationKind",
    "Empirical",
    "Fixed",
    "LogNormal",
    "ServerTimes",
    "Uniform",
    "duration_from_json",
]

# No simulated step lasts longer: a start that takes a day is a mistake in the file, and the
# bound keeps a lognormal's far tail (and its conversion to int64) finite.
MAX_DURATION_US = DAY_US
_MAX_EMPIRICAL = 100_000  # values in one empirical sample
_Z90 = NormalDist().inv_cdf(0.9)  # a standard normal's 90th percentile, 1.2816
# Above any spread a median and p90 within a day give (a microsecond to a day: 19.6), so
# that a lognormal written with its sigma reads back.
_MAX_SIGMA = 20.0


class DurationKind(StrEnum):
    """The shape of a duration distribution, as a fleet file names it."""

    FIXED = "fixed"
    UNIFORM = "uniform"
    LOGNORMAL = "lognormal"
    EMPIRICAL = "empirical"


def _check_us(value: int, what: str) -> None:
    if not 0 <= value <= MAX_DURATION_US:
        raise ValueError(f"{what}: {value} us is not between 0 and a day")


@dataclass(frozen=True, slots=True, kw_only=True)
class Fixed:
    """Always ``value_us``."""

    kind: ClassVar[DurationKind] = DurationKind.FIXED
    value_us: int

    def __post_init__(self) -> None:
        _check_us(self.value_us, "value_us")

    @property
    def median_us(self) -> int:
        """Return the median: the value."""
        return self.value_us

    def draw(self, rng: np.random.Generator, n: int) -> Ints:
        """Return ``n`` draws (this one uses no randomness)."""
        return np.full(n, self.value_us, dtype=np.int64)

    def to_json(self) -> dict[str, Any]:
        """Return it as a fleet file writes it."""
        return {"kind": self.kind.value, "value_s": self.value_us / SECOND_US}


@dataclass(frozen=True, slots=True, kw_only=True)
class Uniform:
    """Any microsecond from ``low_us`` to ``high_us``, both included, each as likely."""

    kind: ClassVar[DurationKind] = DurationKind.UNIFORM
    low_us: int
    high_us: int

    def __post_init__(self) -> None:
        _check_us(self.low_us, "low_us")
        _check_us(self.high_us, "high_us")
        if self.high_us < self.low_us:
            raise ValueError(f"a uniform duration's high {self.high_us} is below {self.low_us}")

    @property
    def median_us(self) -> int:
        """Return the median: the middle of the range."""
        return (self.low_us + self.high_us) // 2

    def draw(self, rng: np.random.Generator, n: int) -> Ints:
        """Return ``n`` draws."""
        return rng.integers(self.low_us, self.high_us, size=n, endpoint=True, dtype=np.int64)

    def to_json(self) -> dict[str, Any]:
        """Return it as a fleet file writes it."""
        return {
            "kind": self.kind.value,
            "low_s": self.low_us / SECOND_US,
            "high_s": self.high_us / SECOND_US,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class LogNormal:
    """A lognormal duration: ``median_us`` times ``exp(sigma * Z)`` for a standard normal Z."""

    kind: ClassVar[DurationKind] = DurationKind.LOGNORMAL
    median_us: int
    sigma: float  # the spread of the logarithm; 0 is a fixed duration

    def __post_init__(self) -> None:
        _check_us(self.median_us, "median_us")
        if self.median_us == 0:
            raise ValueError("a lognormal duration's median is above 0 (use Fixed for 0)")
        if not (math.isfinite(self.sigma) and 0 <= self.sigma <= _MAX_SIGMA):
            raise ValueError(f"sigma: {self.sigma} is not a number from 0 to {_MAX_SIGMA:g}")

    @classmethod
    def of_p90(cls, median_us: int, p90_us: int) -> LogNormal:
        """Return the lognormal with this median and 90th percentile."""
        if not 0 < median_us <= p90_us:
            raise ValueError(f"a lognormal needs 0 < median <= p90, got {median_us}, {p90_us}")
        return cls(median_us=median_us, sigma=math.log(p90_us / median_us) / _Z90)

    @property
    def p90_us(self) -> int:
        """Return the 90th percentile."""
        return min(round(self.median_us * math.exp(self.sigma * _Z90)), MAX_DURATION_US)

    def draw(self, rng: np.random.Generator, n: int) -> Ints:
        """Return ``n`` draws, the far tail cut at a day."""
        drawn = rng.lognormal(math.log(self.median_us), self.sigma, size=n)
        return np.rint(np.clip(drawn, 0, MAX_DURATION_US)).astype(np.int64)

    def to_json(self) -> dict[str, Any]:
        """Return it as a fleet file writes it (with ``sigma``, which is exact)."""
        return {
            "kind": self.kind.value,
            "median_s": self.median_us / SECOND_US,
            "sigma": self.sigma,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Empirical:
    """One of ``values_us``, each as likely: a measured sample replayed."""

    kind: ClassVar[DurationKind] = DurationKind.EMPIRICAL
    values_us: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.values_us:
            raise ValueError("an empirical duration needs at least one value")
        for value in self.values_us:
            _check_us(value, "values_us")

    @property
    def median_us(self) -> int:
        """Return the median of the values (the mean of the middle two for an even count)."""
        return round(float(np.median(np.asarray(self.values_us, dtype=np.int64))))

    def draw(self, rng: np.random.Generator, n: int) -> Ints:
        """Return ``n`` draws, with replacement."""
        drawn: Ints = rng.choice(np.asarray(self.values_us, dtype=np.int64), size=n)
        return drawn

    def to_json(self) -> dict[str, Any]:
        """Return it as a fleet file writes it."""
        return {"kind": self.kind.value, "values_s": [v / SECOND_US for v in self.values_us]}


Duration = Fixed | Uniform | LogNormal | Empirical

_KINDS = {kind.value: kind for kind in DurationKind}
# Each kind's keys in a fleet file: the required ones, then the optional ones.
_KEYS: dict[DurationKind, tuple[tuple[str, ...], tuple[str, ...]]] = {
    DurationKind.FIXED: (("value_s",), ()),
    DurationKind.UNIFORM: (("low_s", "high_s"), ()),
    DurationKind.LOGNORMAL: (("median_s",), ("p90_s", "sigma")),
    DurationKind.EMPIRICAL: (("values_s",), ()),
}


def duration_from_json(value: object, field: str) -> Duration:
    """Read a duration as a fleet file writes it; ``DefinitionError`` names the field refused."""
    if not isinstance(value, Mapping):
        if isinstance(value, list):
            raise DefinitionError(field, "give a duration as seconds or an object with its kind")
        return Fixed(value_us=_seconds(value, field))
    kind_text = value.get("kind")
    kind = _KINDS.get(kind_text) if isinstance(kind_text, str) else None
    if kind is None:
        raise DefinitionError(
            f"{field}.kind", f"{kind_text!r} is not a duration kind ({', '.join(_KINDS)})"
        )
    required, optional = _KEYS[kind]
    for key in value:
        if key != "kind" and key not in required + optional:
            raise DefinitionError(f"{field}.{key}", f"is not a field of a {kind.value} duration")
    for key in required:
        if key not in value:
            raise DefinitionError(f"{field}.{key}", f"a {kind.value} duration needs it")
    if kind is DurationKind.FIXED:
        return Fixed(value_us=_seconds(value["value_s"], f"{field}.value_s"))
    if kind is DurationKind.UNIFORM:
        low = _seconds(value["low_s"], f"{field}.low_s")
        high = _seconds(value["high_s"], f"{field}.high_s")
        if high < low:
            raise DefinitionError(
                f"{field}.high_s", f"{value['high_s']!r} is below low_s {value['low_s']!r}"
            )
        return Uniform(low_us=low, high_us=high)
    if kind is DurationKind.EMPIRICAL:
        return _empirical(value["values_s"], f"{field}.values_s")
    return _lognormal(value, field)


def _lognormal(value: Mapping[str, object], field: str) -> LogNormal:
    median = _seconds(value["median_s"], f"{field}.median_s")
    if median == 0:
        raise DefinitionError(
            f"{field}.median_s", "a lognormal's median is above 0 (a fixed 0 is written 0)"
        )
    if ("p90_s" in value) == ("sigma" in value):
        raise DefinitionError(field, "give a lognormal duration p90_s or sigma, one of them")
    if "p90_s" in value:
        p90 = _seconds(value["p90_s"], f"{field}.p90_s")
        if p90 < median:
            raise DefinitionError(
                f"{field}.p90_s", f"{value['p90_s']!r} is below median_s {value['median_s']!r}"
            )
        return LogNormal.of_p90(median, p90)
    sigma = value["sigma"]
    if (
        not isinstance(sigma, int | float)
        or isinstance(sigma, bool)
        or not (math.isfinite(sigma) and 0 <= sigma <= _MAX_SIGMA)
    ):
        raise DefinitionError(f"{field}.sigma", f"{sigma!r} is not a number from 0 to 20")
    return LogNormal(median_us=median, sigma=float(sigma))


def _empirical(values: object, field: str) -> Empirical:
    if not isinstance(values, list) or not values:
        raise DefinitionError(field, "give the measured durations as a list of seconds")
    if len(values) > _MAX_EMPIRICAL:
        raise DefinitionError(field, f"{len(values)} values are more than {_MAX_EMPIRICAL}")
    return Empirical(values_us=tuple(_seconds(v, f"{field}[{i}]") for i, v in enumerate(values)))


def _seconds(value: object, field: str) -> int:
    """Return a number of seconds from 0 to a day as microseconds."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise DefinitionError(field, f"{value!r} is not a number of seconds")
    # A bound on ints before any float arithmetic: a 400-digit int does not fit in a float.
    if isinstance(value, int) and not 0 <= value <= MAX_DURATION_US // SECOND_US:
        raise DefinitionError(field, f"{value!r} is not between 0 and 86400 s (a day)")
    if not (math.isfinite(value) and 0 <= value <= MAX_DURATION_US / SECOND_US):
        raise DefinitionError(field, f"{value!r} is not between 0 and 86400 s (a day)")
    return round(value * SECOND_US)


def _s(seconds: float) -> int:
    return round(seconds * SECOND_US)


# The defaults, as ServerTimes' docstring gives them with their sources (frozen values: one
# instance may serve every ServerTimes).
_START = LogNormal.of_p90(_s(48), _s(100))
_STOP = LogNormal.of_p90(_s(3), _s(10))
_SLEEP_1 = LogNormal.of_p90(_s(1), _s(10))
_SLEEP_2 = LogNormal.of_p90(_s(0.3), _s(1))
_WAKE_1 = LogNormal.of_p90(_s(0.8), _s(4))
_WAKE_2 = LogNormal.of_p90(_s(2.6), _s(8))


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerTimes:
    """How long one deployment's server takes for each step; defaults from published figures.

    Each default is a lognormal given by its median and 90th percentile (A100 and H100
    figures; a deployment on other GPUs, or of another size, should give its own):

    ========  ======  ======  ===================================================================
    step      median  p90     source
    ========  ======  ======  ===================================================================
    start     48 s    100 s   vLLM blog "sleep mode" (2025-10-26): a full reload takes about
                              48 s a switch, "30-100+ s" for big models
    stop      3 s     10 s    a guess: no published figure; vLLM exits on SIGTERM once its
                              workers are down, and the process backend kills after 30 s
    sleep_1   1 s     10 s    vLLM PR 48337 (a comment of 2026-07-15, A100, with LoRA): a
                              level-1 sleep 0.22 s (Qwen3-0.6B), 10.57 s (Qwen3-8B: the
                              weights are copied to CPU memory); the median is a guess between
    sleep_2   0.3 s   1 s     vLLM PR 48337: a level-2 sleep 0.12 s / 0.31 s (the same
                              models: nothing is copied); the p90 is a guess
    wake_1    0.8 s   4 s     vLLM blog: 0.26 s (Qwen3-0.6B), 0.82 s (Phi-3-vision), about
                              3-6 s for large models; Dynamo issue 11233 (H100): about 0.3 s;
                              vLLM issue 16663: QwQ-32B about 4 s
    wake_2    2.6 s   8 s     vLLM blog: a level-2 wake 0.85 s (Qwen3-0.6B), 2.58 s
                              (Phi-3-vision): the weights are read from disk again; vLLM PR
                              48337: 6.53 s (Qwen3-8B); the p90 is a guess above it
    ========  ======  ======  ===================================================================

    ``wake_2`` is the whole wake from level 2, not an addition to ``wake_1``. A start is to a
    server that answers its health check; with a fast loader give it shorter (ServerlessLLM's
    README, H100: Qwen3-32B loads in 3.2 s against 20.6 s, Llama-3.1-8B in 0.7 s against
    4.4 s; those are load times, the rest of a start comes on top).
    """

    start: Duration = _START
    stop: Duration = _STOP
    sleep_1: Duration = _SLEEP_1
    sleep_2: Duration = _SLEEP_2
    wake_1: Duration = _WAKE_1
    wake_2: Duration = _WAKE_2

    def round_trips(self) -> dict[Phase, RoundTrip]:
        """Return each resting phase's way down and back up, as medians (the oracle's figures)."""
        return {
            Phase.ASLEEP_1: RoundTrip(down_us=self.sleep_1.median_us, up_us=self.wake_1.median_us),
            Phase.ASLEEP_2: RoundTrip(down_us=self.sleep_2.median_us, up_us=self.wake_2.median_us),
            Phase.STOPPED: RoundTrip(down_us=self.stop.median_us, up_us=self.start.median_us),
        }

    def overridden(self, overrides: object, field: str) -> ServerTimes:
        """Return these times with a fleet file's ``durations`` object over them."""
        if not isinstance(overrides, Mapping):
            raise DefinitionError(field, "give the durations as an object of steps")
        given: dict[str, Duration] = {}
        for key, value in overrides.items():
            if key not in _STEPS:
                raise DefinitionError(
                    f"{field}.{key}", f"is not a step (one of {', '.join(_STEPS)})"
                )
            given[key] = duration_from_json(value, f"{field}.{key}")
        return replace(self, **given)

    def to_json(self) -> dict[str, Any]:
        """Return every step's distribution as a fleet file writes it."""
        return {step: getattr(self, step).to_json() for step in _STEPS}


_STEPS = tuple(f.name for f in fields(ServerTimes))
