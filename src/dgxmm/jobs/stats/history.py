"""One job's history: its buckets of runs, its last run, its skips by reason and the last one.

``WorkloadStats`` holds one ``JobHistory`` per job twice, the whole and what was recorded
since the last merge; ``absorb`` adds the second to another process's whole, so the merge rule
(counts added, the later last run and skip win) is written once. It is not locked: the stats
that hold it take their lock around every call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dgxmm.jobs.job import Outcome, SkipReason
from dgxmm.jobs.stats.series import Tier, add_bucket, new_series, series_from_json, series_to_json

__all__ = ["JobHistory", "LastRun", "RunCounts", "SkipRecord", "later_run"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LastRun:
    """The latest finished run of a job."""

    started_at: int
    duration_us: int
    outcome: Outcome
    error: str | None
    detail: str | None = None
    public_error: str | None = None  # what a viewer may read of the error (RunResult's)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunCounts:
    """Runs that started in the last hour, two days and 90 days."""

    last_hour: int
    last_two_days: int
    last_90_days: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SkipRecord:
    """A due time that did not start a run, and why."""

    name: str
    at_us: int
    reason: SkipReason
    detail: str | None = None


class JobHistory:
    """What the stats hold of one job: its series, last run, skips and last skip."""

    __slots__ = ("counted", "last", "last_skip", "series", "skips")

    def __init__(self) -> None:
        self.series = new_series()
        self.last: LastRun | None = None
        self.skips: dict[SkipReason, int] = {}
        self.last_skip: SkipRecord | None = None
        # The run counts kept for one minute (its start): within a minute the windows cover
        # the same buckets (every bucket starts on a minute), so they are summed once per job
        # and minute, or after a run is counted, never per request.
        self.counted: tuple[int, RunCounts] | None = None

    def absorb(self, mine: JobHistory) -> None:
        """Add ``mine`` (what another holder recorded) to this history."""
        self.counted = None
        for tier in Tier:
            for start, values in mine.series[tier].items():
                add_bucket(self.series[tier], tier, start, values)
        self.last = later_run(self.last, mine.last)
        for reason, count in mine.skips.items():
            self.skips[reason] = self.skips.get(reason, 0) + count
        if mine.last_skip is not None and (
            self.last_skip is None or mine.last_skip.at_us >= self.last_skip.at_us
        ):
            self.last_skip = mine.last_skip

    def to_json(self) -> dict[str, Any]:
        """Return the history as plain JSON values."""
        entry = series_to_json(self.series)
        if self.last is not None:
            entry["last"] = {
                "started_at": self.last.started_at,
                "duration_us": self.last.duration_us,
                "outcome": self.last.outcome.value,
                "error": self.last.error,
                "public_error": self.last.public_error,
                "detail": self.last.detail,
            }
        entry["skips"] = {reason.value: n for reason, n in self.skips.items()}
        if self.last_skip is not None:
            entry["last_skip"] = {
                "at_us": self.last_skip.at_us,
                "reason": self.last_skip.reason.value,
                "detail": self.last_skip.detail,
            }
        return entry

    @classmethod
    def from_json(cls, name: str, entry: dict[str, Any]) -> JobHistory:
        """Rebuild job ``name``'s history written by ``to_json`` (KeyError, ValueError...)."""
        job = cls()
        job.series = series_from_json(entry)
        last = entry.get("last")
        if last:
            job.last = LastRun(
                started_at=int(last["started_at"]),
                duration_us=int(last["duration_us"]),
                outcome=Outcome(last["outcome"]),
                error=last.get("error"),
                detail=last.get("detail"),
                public_error=last.get("public_error", _kind_of(last.get("error"))),
            )
        job.skips = {SkipReason(k): int(v) for k, v in entry.get("skips", {}).items()}
        skip = entry.get("last_skip")
        if skip:
            job.last_skip = SkipRecord(
                name=name,
                at_us=int(skip["at_us"]),
                reason=SkipReason(skip["reason"]),
                detail=skip.get("detail"),
            )
        return job


def later_run(mine: LastRun | None, other: LastRun | None) -> LastRun | None:
    """Return the later of two last runs (``other`` when they started together)."""
    if mine is None:
        return other
    if other is None:
        return mine
    return other if other.started_at >= mine.started_at else mine


def _kind_of(error: str | None) -> str | None:
    """Return an error's kind alone: all a sidecar written before public errors may show."""
    return None if error is None else error.split(":", 1)[0]
