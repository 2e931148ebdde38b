"""What dgxmm tells about its own work as it happens: one small interface for every layer.

Each recording seam calls it once per thing done: the deployer when an action ends, the
schedule runner when it decides a slot, the host when it takes a job's run back, the jobs
engine's scheduler when it skips a job's time, the metrics
pass when a model server's metrics cannot be read. The server's ``/metrics`` implements it
(``server/metrics.py``); everything else defaults to ``NO_TELEMETRY``, which records nothing.
It sits beside ``errors.py`` and ``clock.py`` outside the layers, so that the fleet, the
decider and the server all reach the same interface; the enums each seam passes are its own
layer's (``EventAction``, ``ResultKind``, ``Outcome``), and an implementation reads only their
values.
"""

from __future__ import annotations

from enum import Enum
from typing import Protocol

__all__ = ["NO_TELEMETRY", "NoTelemetry", "Telemetry"]


class Telemetry(Protocol):
    """Told about work as it ends; every method returns at once and never raises."""

    def action_finished(self, action: Enum, outcome: Enum, seconds: float) -> None:
        """A deployment action (start, wake, stop, sleep) ended with this outcome."""

    def slot_decided(self, action: Enum, outcome: Enum) -> None:
        """The schedule runner decided a slot (done, deferred, skipped, superseded, failed)."""

    def run_finished(self, job: str, outcome: Enum, seconds: float) -> None:
        """A job's run was taken back by the host."""

    def runs_skipped(self, job: str, reason: Enum, count: int) -> None:
        """The scheduler skipped ``count`` of a job's times for a reason (``SkipReason``)."""

    def scrape_failed(self, deployment: str, kind: Enum) -> None:
        """A model server's metrics could not be read (unreadable), or it was gone."""

    def policy_acted(self, what: Enum) -> None:
        """A policy acted on its own: an idle sleep, deepening or stop, a pre-wake, a wake
        begun early (``dgxmm.decider.idle.PolicyAct``)."""


class NoTelemetry:
    """Records nothing: what every seam is given unless the server gives it its own."""

    def action_finished(self, action: Enum, outcome: Enum, seconds: float) -> None:
        """Record nothing."""

    def slot_decided(self, action: Enum, outcome: Enum) -> None:
        """Record nothing."""

    def run_finished(self, job: str, outcome: Enum, seconds: float) -> None:
        """Record nothing."""

    def runs_skipped(self, job: str, reason: Enum, count: int) -> None:
        """Record nothing."""

    def scrape_failed(self, deployment: str, kind: Enum) -> None:
        """Record nothing."""

    def policy_acted(self, what: Enum) -> None:
        """Record nothing."""


NO_TELEMETRY: Telemetry = NoTelemetry()
