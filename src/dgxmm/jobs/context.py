"""What a running action sees: its run's limits and its context (time left, memory charged,
whether its host gave it up or someone cancelled it).

The engine never reads the wall clock: a run's duration is measured with an injected
monotonic timer (``Timer``; ``time.monotonic`` by default, a manual one in tests).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from dgxmm.errors import Abandoned, Cancelled, MemoryLimitExceeded, TimeoutExceeded

__all__ = ["JobLimits", "RunContext", "Timer"]

Timer = Callable[[], float]


@dataclass(frozen=True, slots=True)
class JobLimits:
    """Limits of each run: a timeout and a memory limit (live bytes), both optional."""

    timeout: timedelta | None = None
    memory_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.timeout is not None and self.timeout <= timedelta(0):
            raise ValueError(f"timeout: {self.timeout} must be positive")
        if self.memory_bytes is not None and self.memory_bytes <= 0:
            raise ValueError(f"memory_bytes: {self.memory_bytes} must be positive")


class RunContext:
    """What a running action sees: who it is, when it started, and its limits."""

    __slots__ = (
        "_abandoned",
        "_cancelled_by",
        "_interrupts",
        "_kept",
        "_live",
        "_lock",
        "_started",
        "_timer",
        "limits",
        "name",
        "scheduled_at",
        "started_at",
    )

    def __init__(
        self, *, name: str, scheduled_at: int, started_at: int, limits: JobLimits, timer: Timer
    ) -> None:
        self.name = name
        self.scheduled_at = scheduled_at
        self.started_at = started_at
        self.limits = limits
        self._timer = timer
        self._started = timer()
        self._live = 0
        self._lock = threading.Lock()
        self._abandoned: str | None = None
        self._cancelled_by: str | None = None
        self._interrupts: list[Callable[[], object]] = []
        self._kept: str | None = None

    @property
    def kept(self) -> str | None:
        """What the action kept with its run beyond its detail (a query job's first rows)."""
        return self._kept

    def keep(self, text: str) -> None:
        """Keep ``text`` with the run's record (bounded by the action: the engine stores it)."""
        self._kept = text

    def elapsed(self) -> float:
        """Return the seconds since the run started."""
        return self._timer() - self._started

    def remaining(self) -> float | None:
        """Return the seconds left before the timeout (never below 0), or None without one.

        A run its host gave up, or someone cancelled, has no time left, timeout or not.
        """
        if self._abandoned is not None or self._cancelled_by is not None:
            return 0.0
        timeout = self.limits.timeout
        if timeout is None:
            return None
        return max(0.0, timeout.total_seconds() - self.elapsed())

    @property
    def abandoned(self) -> str | None:
        """Why the host gave this run up, or None while it has not."""
        return self._abandoned

    def abandon(self, reason: str) -> None:
        """Mark the run as given up; the action stops at its next ``check()``."""
        self._abandoned = reason

    @property
    def cancelled_by(self) -> str | None:
        """Who cancelled this run, or None while nobody has."""
        return self._cancelled_by

    def cancel(self, by: str) -> None:
        """Cancel the run: it stops at its next ``check()``, and its interrupts are called now.

        An interrupt that raises is ignored: the run still stops at its next check.
        """
        with self._lock:
            if self._cancelled_by is not None:
                return
            self._cancelled_by = by
            interrupts = list(self._interrupts)
        for interrupt in interrupts:
            try:
                interrupt()
            except Exception:  # the check() that follows stops the run anyway
                continue

    def add_interrupt(self, interrupt: Callable[[], object]) -> None:
        """Call ``interrupt`` when the run is cancelled (now, if it already is): a statement's."""
        with self._lock:
            if self._cancelled_by is None:
                self._interrupts.append(interrupt)
                return
        interrupt()

    def remove_interrupt(self, interrupt: Callable[[], object]) -> None:
        """Stop calling ``interrupt`` on a cancel (its statement has ended)."""
        with self._lock:
            if interrupt in self._interrupts:
                self._interrupts.remove(interrupt)

    def check(self) -> None:
        """Raise ``TimeoutExceeded`` past the timeout, ``Abandoned`` when the host gave up,
        ``Cancelled`` when someone cancelled the run."""
        if self._cancelled_by is not None:
            raise Cancelled(f"job {self.name}: cancelled by {self._cancelled_by}")
        if self._abandoned is not None:
            raise Abandoned(f"job {self.name}: abandoned: {self._abandoned}")
        timeout = self.limits.timeout
        if timeout is not None and self.elapsed() > timeout.total_seconds():
            raise TimeoutExceeded(
                f"job {self.name}: timeout of {_seconds(timeout)} passed "
                f"after {self.elapsed():.3f} s"
            )

    @property
    def live_bytes(self) -> int:
        """The bytes the run holds at once, as charged and released."""
        return self._live

    def charge(self, n: int) -> None:
        """Count ``n`` more live bytes; raise ``MemoryLimitExceeded`` past the limit."""
        with self._lock:
            self._live += n
            live = self._live
        limit = self.limits.memory_bytes
        if limit is not None and live > limit:
            raise MemoryLimitExceeded(
                f"job {self.name}: memory limit of {limit} bytes passed ({live} bytes live)"
            )

    def release(self, n: int) -> None:
        """Give back ``n`` live bytes."""
        with self._lock:
            self._live = max(0, self._live - n)


def _seconds(delta: timedelta) -> str:
    return f"{delta.total_seconds():g} s"
