"""Catch-up: which of a job's times that passed unticked still run, after a stop or a gap.

A job without a ``CatchUp`` keeps the spec's rule (the scheduler's ``max_lateness``): its
planned time runs when a tick reaches it within the lateness; otherwise every time that
passed is skipped as missed, however recent the last of them. A ``CatchUp`` judges each time
on its own instead: a time no older than ``window`` at the tick that finds it is inside, and
``coalesce`` says which of the times inside run (APScheduler 4's ``misfire_grace_time`` and
``CoalescePolicy``, Temporal's ``catchupWindow``, Kubernetes' ``startingDeadlineSeconds``):

- ``latest``: the most recent one, once;
- ``earliest``: the oldest one, once;
- ``all``: every one, oldest first, each as soon as the one before has ended (the job still
  never overlaps itself).

The times outside the window are recorded missed, as before; the times inside that do not
run are recorded missed too, as coalesced. Pure: the caller passes the times and ``now``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum

from dgxmm.time_units import SECOND_US

__all__ = ["CATCHUP_TIMES_MAX", "CatchUp", "CatchUpPlan", "Coalesce", "plan_catch_up"]

# The most times one catch-up looks at: a longer gap's older times are counted missed.
CATCHUP_TIMES_MAX = 1000


class Coalesce(Enum):
    """Which of the times inside the catch-up window run."""

    LATEST = "latest"
    EARLIEST = "earliest"
    ALL = "all"


@dataclass(frozen=True, slots=True, kw_only=True)
class CatchUp:
    """How late a time may be found and still run (``window``), and which of them run."""

    window: timedelta
    coalesce: Coalesce = Coalesce.LATEST

    def __post_init__(self) -> None:
        if self.window <= timedelta(0):
            raise ValueError(f"catchup_window_s: {self.window} must be positive")
        if not isinstance(self.coalesce, Coalesce):
            raise TypeError(f"coalesce: expected a Coalesce, got {self.coalesce!r}")

    @property
    def window_us(self) -> int:
        """The window in microseconds."""
        return round(self.window.total_seconds() * SECOND_US)


@dataclass(frozen=True, slots=True, kw_only=True)
class CatchUpPlan:
    """What becomes of the times a tick found passed: each tuple oldest first."""

    missed: tuple[int, ...]  # outside the window
    coalesced: tuple[int, ...]  # inside it, but another one runs for them
    run: tuple[int, ...]  # to run, in this order (one, but for ``all``)


def plan_catch_up(times: Sequence[int], now: int, policy: CatchUp) -> CatchUpPlan:
    """Split ``times`` (passed by ``now``, oldest first) into missed, coalesced and run."""
    oldest = now - policy.window_us
    missed = tuple(t for t in times if t < oldest)
    inside = tuple(t for t in times if t >= oldest)
    if not inside:
        return CatchUpPlan(missed=missed, coalesced=(), run=())
    if policy.coalesce is Coalesce.ALL:
        return CatchUpPlan(missed=missed, coalesced=(), run=inside)
    if policy.coalesce is Coalesce.EARLIEST:
        return CatchUpPlan(missed=missed, coalesced=inside[1:], run=inside[:1])
    return CatchUpPlan(missed=missed, coalesced=inside[:-1], run=inside[-1:])
