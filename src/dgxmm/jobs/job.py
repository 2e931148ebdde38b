"""Jobs, their retry policy, and one run of a job (its limits and context: ``context.py``).

A ``JobRun`` is handed out by the scheduler (``start_due`` / ``start_now``); ``run()`` does
the work on any thread and returns a ``RunResult``, which goes back to the scheduler through
``finish``. The engine never reads the wall clock: instants come from the caller, and a run's
duration is measured with an injected monotonic timer (``time.monotonic`` by default).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from enum import Enum
from zoneinfo import ZoneInfo

from dgxmm.errors import (
    Abandoned,
    Conflict,
    DgxmmError,
    Forbidden,
    InvalidInput,
)
from dgxmm.jobs.catchup import CatchUp
from dgxmm.jobs.context import JobLimits, RunContext, Timer
from dgxmm.jobs.cron.expression import CronSchedule
from dgxmm.jobs.overlap import Overlap
from dgxmm.time_units import SECOND_US

__all__ = [
    "Action",
    "Job",
    "JobKind",
    "JobRun",
    "Outcome",
    "RetryPolicy",
    "RunResult",
    "SkipReason",
]


class JobKind(Enum):
    """Who a job belongs to: the system (built in) or a user (a catalog definition)."""

    SYSTEM = "system"
    USER = "user"


class SkipReason(Enum):
    """Why a due time did not start a run."""

    OVERLAP = "overlap"  # the job was still running
    GROUP_BUSY = "group_busy"  # another job of its group ran; it waits and runs once after
    DISABLED = "disabled"  # the job is switched off
    MISSED = "missed"  # no tick came within the scheduler's max_lateness of the time
    CLAIMED = "claimed"  # another process claimed the time first (it runs it, not this one)


class Outcome(Enum):
    """How a run ended."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    OVER_TIME = "over_time"  # finished, but past its timeout
    CANCELLED = "cancelled"  # someone cancelled it (``RunResult.cancelled_by`` says who)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a failed run is tried again: ``retries`` more attempts, the first after up to
    ``backoff``, each wait doubling up to ``backoff_max``, drawn with full jitter (uniformly
    from zero to that bound). No retries by default, as the spec has it."""

    retries: int = 0
    backoff: timedelta | None = None
    backoff_max: timedelta | None = None

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise ValueError(f"retries: {self.retries} must not be negative")
        if self.retries and (self.backoff is None or self.backoff <= timedelta(0)):
            raise ValueError("retry_backoff_s: retries need a first wait (a positive time)")
        if self.backoff_max is not None and (
            self.backoff is None or self.backoff_max < self.backoff
        ):
            raise ValueError("retry_backoff_max_s: must be at least the first wait")

    def bound(self, attempt: int) -> timedelta:
        """The most the wait before attempt ``attempt`` (2 for the first retry) may be."""
        assert self.backoff is not None
        wait = self.backoff * (1 << max(0, min(attempt - 2, 40)))
        return wait if self.backoff_max is None else min(wait, self.backoff_max)


Action = Callable[[RunContext], object]


@dataclass(frozen=True, slots=True)
class Job:
    """A named action on a cron schedule; frozen: change it with ``dataclasses.replace``."""

    name: str
    kind: JobKind
    schedule: CronSchedule
    action: Action = field(compare=False)
    limits: JobLimits = field(default_factory=JobLimits, kw_only=True)
    group: str | None = field(default=None, kw_only=True)
    enabled: bool = field(default=True, kw_only=True)
    description: str | None = field(default=None, kw_only=True, compare=False)
    # The zone its schedule is read in; None: the scheduler's (the spec's instance zone).
    time_zone: ZoneInfo | None = field(default=None, kw_only=True)
    # Why it was switched off, as the person who paused it wrote it (None: no note). Not
    # compared: a new note plans nothing again.
    pause_note: str | None = field(default=None, kw_only=True, compare=False)
    retry: RetryPolicy = field(default_factory=RetryPolicy, kw_only=True)
    # None: the spec's rule (a time a tick reached within the scheduler's lateness runs, a
    # gap is skipped whole); else which times a gap left still run.
    catch_up: CatchUp | None = field(default=None, kw_only=True)
    overlap: Overlap = field(default=Overlap.SKIP, kw_only=True)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("name: a job needs a non-empty name")
        if self.time_zone is not None and not isinstance(self.time_zone, ZoneInfo):
            raise TypeError(
                f"time_zone: expected a ZoneInfo or None, got {type(self.time_zone).__name__}"
            )
        if not isinstance(self.schedule, CronSchedule):
            raise TypeError(
                f"schedule: expected a CronSchedule, got {type(self.schedule).__name__}"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """How one run went; handed back to ``Scheduler.finish``."""

    name: str
    token: int
    scheduled_at: int
    started_at: int
    duration_us: int
    outcome: Outcome
    error: str | None = None
    detail: str | None = None  # what the action returned, as text (rows written, bytes, ...)
    # The error as anyone may read it: its kind, and what of its message is dgxmm's own
    # words; never a value the run read (see DgxmmError.public). None when it did not fail.
    public_error: str | None = None
    attempt: int = 1  # 2 and up: a retry of the run of ``scheduled_at``
    # Whether trying again may help: a failure but a refusal of the definition or its rights,
    # or the host giving the run up.
    retryable: bool = False
    cancelled_by: str | None = None  # who cancelled it (``Outcome.CANCELLED``)
    kept: str | None = None  # what the action kept beyond its detail (RunContext.keep)

    @property
    def finished_at(self) -> int:
        """The instant the run ended (started plus its measured duration)."""
        return self.started_at + self.duration_us


_tokens = itertools.count(1)


class JobRun:
    """One run of a job, handed out by the scheduler; run it on any thread, once."""

    __slots__ = (
        "_abandoned",
        "_cancelled_by",
        "_context",
        "_done",
        "_lock",
        "_timer",
        "attempt",
        "job",
        "scheduled_at",
        "started_at",
        "token",
    )

    def __init__(
        self, job: Job, *, scheduled_at: int, started_at: int, timer: Timer, attempt: int = 1
    ) -> None:
        self.job = job
        self.scheduled_at = scheduled_at
        self.started_at = started_at
        self.attempt = attempt
        self.token = next(_tokens)
        self._timer = timer
        self._done = False  # run() or abandon() was called
        self._abandoned = False
        self._context: RunContext | None = None  # set while run() does the work
        self._cancelled_by: str | None = None  # cancelled before it started
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The job's name."""
        return self.job.name

    def run(self) -> RunResult:
        """Do the work and return how it went; any exception becomes a failed run."""
        context = RunContext(
            name=self.job.name,
            scheduled_at=self.scheduled_at,
            started_at=self.started_at,
            limits=self.job.limits,
            timer=self._timer,
        )
        with self._lock:
            if self._done:
                raise Conflict(f"run {self.token} of job {self.job.name} was already used")
            self._done = True
            self._context = context
            if self._cancelled_by is not None:
                context.cancel(self._cancelled_by)  # cancelled before it started: none is done
        detail: str | None = None
        error: str | None = None
        public: str | None = None
        retryable = False
        try:
            if context.cancelled_by is not None:
                context.check()  # cancelled before it started: the action never begins
            returned = self.job.action(context)
            detail = None if returned is None else str(returned)
        except KeyboardInterrupt:
            raise  # the person at the terminal stops the process: not the job's failure
        except BaseException as exc:
            # A failing job is recorded, never raised into the host: an action that raised
            # SystemExit or a panic-like error must not lose its run (and its group) either.
            error = _describe_error(exc)
            public = _describe_public(exc)
            # A wrong definition or a refused right fails the same way again; a host that
            # gave the run up is stopping. Anything else (a limit, an error) may pass.
            retryable = not isinstance(exc, InvalidInput | Forbidden | Abandoned)
        elapsed = context.elapsed()
        timeout = self.job.limits.timeout
        cancelled_by = context.cancelled_by
        if cancelled_by is not None and error is not None:
            # Whatever the action raised once cancelled (its interrupted statement's error
            # among them) is the cancel: the run is recorded cancelled, never retried.
            outcome = Outcome.CANCELLED
            error = public = f"cancelled by {cancelled_by}"
            retryable = False
        elif error is not None:
            outcome = Outcome.FAILED
        elif timeout is not None and elapsed > timeout.total_seconds():
            outcome = Outcome.OVER_TIME
            error = f"finished after {elapsed:.3f} s, past its timeout of {_seconds(timeout)}"
            public = error
        else:
            outcome = Outcome.SUCCEEDED
        with self._lock:
            self._context = None
        return self._result(
            outcome,
            round(elapsed * SECOND_US),
            error,
            detail,
            public,
            retryable=retryable,
            cancelled_by=cancelled_by if outcome is Outcome.CANCELLED else None,
            kept=context.kept,
        )

    def cancel(self, by: str) -> bool:
        """Cancel the run on behalf of ``by``; tell whether it was still to end.

        Under way, its action sees it at its next ``RunContext.check()`` and its interrupts
        (a statement's) are called now; not started yet, ``run()`` does no work and returns
        it cancelled. A run that ended, or was given up, is left as it is.
        """
        with self._lock:
            if self._abandoned or (self._done and self._context is None):
                return False
            context = self._context
            if context is None:
                if self._cancelled_by is None:
                    self._cancelled_by = by
                return True
        context.cancel(by)
        return True

    @property
    def cancelled_by(self) -> str | None:
        """Who cancelled the run, or None while nobody has."""
        context = self._context
        return context.cancelled_by if context is not None else self._cancelled_by

    def abandon(self, reason: str) -> RunResult:
        """Give the run up: a failed run with ``reason``.

        Before ``run()`` the work is never done. While ``run()`` is under way on another
        thread, its action sees the abandonment at its next ``RunContext.check()``; the
        result ``run()`` still returns belongs to nobody (the host gave this one back).
        """
        with self._lock:
            if self._abandoned:
                raise Conflict(f"run {self.token} of job {self.job.name} was already abandoned")
            context = self._context
            if self._done and context is None:
                raise Conflict(f"run {self.token} of job {self.job.name} has already finished")
            self._done = True
            self._abandoned = True
        elapsed = 0.0
        if context is not None:
            context.abandon(reason)
            elapsed = context.elapsed()
        error = f"abandoned: {reason}"
        return self._result(Outcome.FAILED, round(elapsed * SECOND_US), error, None, error)

    @property
    def is_abandoned(self) -> bool:
        """Tell whether the run was given up."""
        return self._abandoned

    def _result(
        self,
        outcome: Outcome,
        duration_us: int,
        error: str | None,
        detail: str | None,
        public_error: str | None,
        *,
        retryable: bool = False,
        cancelled_by: str | None = None,
        kept: str | None = None,
    ) -> RunResult:
        return RunResult(
            name=self.job.name,
            token=self.token,
            scheduled_at=self.scheduled_at,
            started_at=self.started_at,
            duration_us=max(0, duration_us),
            outcome=outcome,
            error=error,
            detail=detail,
            public_error=public_error,
            attempt=self.attempt,
            retryable=retryable,
            cancelled_by=cancelled_by,
            kept=kept,
        )

    def __repr__(self) -> str:
        return f"JobRun({self.job.name!r}, token={self.token}, scheduled_at={self.scheduled_at})"


def _describe_error(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _describe_public(exc: BaseException) -> str:
    """Return the error as anyone may read it: dgxmm's own words, else only its kind."""
    if isinstance(exc, DgxmmError):
        return _describe_error(exc) if exc.public is None else f"{type(exc).__name__}: {exc.public}"
    # Not ours: its text may be anything, a value the action read included.
    return f"{type(exc).__name__} (the message is shown to admins)"


def _seconds(delta: timedelta) -> str:
    return f"{delta.total_seconds():g} s"
