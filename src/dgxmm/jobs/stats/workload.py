"""Workload statistics: every run and skip of every job, per minute, hour and day.

``WorkloadStats`` holds each job's history (``history.py``: its buckets, last run and skips)
and the saved queries run per channel (``Channel``: a job's run, the API, the CLI, the
playground) in the same three series (``series.py``). Minutes and hours are aligned on UTC;
days start at local midnight in the stats' ``time_zone`` (so a day bucket is 23 or 25 hours
long on a DST day). Everything round-trips through plain JSON (``to_json`` / ``from_json``);
the store keeps it in a sidecar file beside the database.

The overrides of a system job's schedule and switch go through ``set_job_override`` and
``job_override``. Alone, the stats keep them (and write them with the rest); given a keeper
(``keep_overrides_in``), both calls are the keeper's, so there is one place of truth: a store
hands its database's overrides, which every instance on it shares, and the spec's
``store.workload_stats.set_job_override(...)`` reaches them.

The host reads the stats from request threads while its ticker records runs, so every method
takes the one lock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from typing import Any, Final
from zoneinfo import ZoneInfo

from dgxmm.jobs.cron.zones import resolve_zone, zone_clock
from dgxmm.jobs.job import Outcome, RunResult, SkipReason
from dgxmm.jobs.stats.history import JobHistory, LastRun, RunCounts, SkipRecord, later_run
from dgxmm.jobs.stats.overrides import (
    KEEP,
    JobOverrides,
    Keep,
    Override,
    check_override,
    overridden,
)
from dgxmm.jobs.stats.series import (
    Bucket,
    Series,
    Tier,
    add_bucket,
    buckets_of,
    count_run,
    count_since,
    new_series,
    series_from_json,
    series_to_json,
)
from dgxmm.time_units import DAY_US, HOUR_US, MINUTE_US, SECOND_US

__all__ = ["Channel", "WorkloadStats"]

_FORMAT: Final = 1


class Channel(Enum):
    """Where a saved query was run from."""

    JOB = "job"  # a query job's run
    API = "api"  # POST /api/queries/run
    CLI = "cli"  # dgxmm queries run
    PLAYGROUND = "playground"  # the browser playground's engine


class WorkloadStats:
    """Per-job run history and overrides; safe to share between threads."""

    def __init__(self, time_zone: ZoneInfo | str = "UTC") -> None:
        self.time_zone = resolve_zone(time_zone)
        self._day: tuple[int, int, ZoneInfo | None] = (0, 0, None)  # the last local day seen
        self._lock = threading.RLock()
        self._jobs: dict[str, JobHistory] = {}
        self._overrides: dict[str, Override] = {}
        # Per channel and tier: bucket start -> [count, failures, total_us, longest_us].
        self._channels: dict[Channel, dict[Tier, dict[int, list[int]]]] = {}
        # What was recorded here since the last ``merge_into``: what another process sharing
        # the sidecar has not seen yet (added to its counts, never written over them).
        self._pending: dict[str, JobHistory] = {}
        self._pending_overrides: set[str] = set()
        self._pending_channels: dict[Channel, dict[Tier, dict[int, list[int]]]] = {}
        self._version = 0  # bumped on every change, so a flush can tell whether to write
        self._keeper: JobOverrides | None = None  # where the overrides live, if not here

    @property
    def version(self) -> int:
        """A number that changes whenever the stats change."""
        return self._version

    @contextmanager
    def _changing(self) -> Iterator[None]:
        with self._lock:
            yield
            self._version += 1

    # -- recording ----------------------------------------------------------------------------

    def record_run(self, result: RunResult) -> None:
        """Count a finished run in every tier and remember it as the job's last run."""
        failed = result.outcome in (Outcome.FAILED, Outcome.OVER_TIME)
        with self._changing():
            last = LastRun(
                started_at=result.started_at,
                duration_us=result.duration_us,
                outcome=result.outcome,
                error=result.error,
                detail=result.detail,
                public_error=result.public_error,
            )
            for jobs in (self._jobs, self._pending):
                job = jobs.get(result.name)
                if job is None:
                    job = jobs[result.name] = JobHistory()
                self._count(job.series, result.started_at, result.duration_us, failed)
                job.counted = None
                job.last = later_run(job.last, last)

    def record_query(
        self, channel: Channel, *, started_at: int, duration_us: int, failed: bool
    ) -> None:
        """Count one run of a saved query under its channel, in every tier."""
        with self._changing():
            for channels in (self._channels, self._pending_channels):
                series = channels.setdefault(channel, new_series())
                self._count(series, started_at, duration_us, failed)

    def _count(self, series: Series, at_us: int, duration_us: int, failed: bool) -> None:
        for tier in Tier:
            count_run(series[tier], tier, self._bucket_start(at_us, tier), duration_us, failed)

    def _bucket_start(self, at_us: int, tier: Tier) -> int:
        if tier is not Tier.DAYS:
            return at_us - at_us % tier.width_us
        day = self._day  # most runs fall in the same local day as the one before
        if day[0] <= at_us < day[1] and day[2] is self.time_zone:
            return day[0]
        clock = zone_clock(self.time_zone)
        wall = clock.wall(at_us // SECOND_US)
        midnight = wall - wall % 86400
        start, _ = clock.instant(midnight)  # a gap at midnight: its end
        end, _ = clock.instant(midnight + 86400)
        self._day = (start * SECOND_US, end * SECOND_US, self.time_zone)
        return start * SECOND_US

    def record_skip(self, skip: SkipRecord) -> None:
        """Count a skipped time by its reason."""
        with self._changing():
            for jobs in (self._jobs, self._pending):
                job = jobs.setdefault(skip.name, JobHistory())
                job.skips[skip.reason] = job.skips.get(skip.reason, 0) + 1
                job.last_skip = skip

    # -- reading ------------------------------------------------------------------------------

    def names(self) -> list[str]:
        """Return the names of the jobs with recorded runs or skips."""
        with self._lock:
            return sorted(self._jobs)

    def history(self, name: str, tier: Tier) -> list[Bucket]:
        """Return a job's buckets in ``tier``, oldest first (empty for an unknown job)."""
        with self._lock:
            job = self._jobs.get(name)
            if job is None:
                return []
            rows = sorted(job.series[tier].items())
        return buckets_of(rows)

    def channel_history(self, channel: Channel, tier: Tier) -> list[Bucket]:
        """Return the queries run from ``channel`` in ``tier``'s buckets, oldest first."""
        with self._lock:
            series = self._channels.get(channel)
            rows = [] if series is None else sorted(series[tier].items())
        return buckets_of(rows)

    def counts(self, name: str, now_us: int) -> RunCounts:
        """Return how many runs started in the last hour, two days and 90 days before ``now_us``."""
        with self._lock:
            job = self._jobs.get(name)
            if job is None:
                return RunCounts(last_hour=0, last_two_days=0, last_90_days=0)
            minute = now_us - now_us % MINUTE_US
            kept = job.counted
            if kept is not None and kept[0] == minute:
                return kept[1]
            minutes = job.series[Tier.MINUTES]
            hours = job.series[Tier.HOURS]
            counts = RunCounts(
                last_hour=count_since(minutes, now_us - HOUR_US, now_us),
                last_two_days=count_since(minutes, now_us - 2 * DAY_US, now_us),
                last_90_days=count_since(hours, now_us - 90 * DAY_US, now_us),
            )
            job.counted = (minute, counts)
            return counts

    def last_run(self, name: str) -> LastRun | None:
        """Return the latest finished run of a job, if any."""
        with self._lock:
            job = self._jobs.get(name)
            return None if job is None else job.last

    def skips(self, name: str) -> dict[SkipReason, int]:
        """Return how often a job's times were skipped, by reason."""
        with self._lock:
            job = self._jobs.get(name)
            return {} if job is None else dict(job.skips)

    def last_skip(self, name: str) -> SkipRecord | None:
        """Return the latest skipped time of a job, if any."""
        with self._lock:
            job = self._jobs.get(name)
            return None if job is None else job.last_skip

    # -- overrides ----------------------------------------------------------------------------

    def keep_overrides_in(self, keeper: JobOverrides) -> None:
        """Make ``keeper`` the one place of the overrides: both override calls become its.

        Overrides these stats held before (a sidecar's) stay here, unused: the caller moves
        them first (``job_overrides`` lists them; ``Store`` moves them to its database).
        """
        with self._lock:
            self._keeper = keeper

    def set_job_override(
        self,
        name: str,
        *,
        schedule: str | Keep | None = KEEP,
        enabled: bool | Keep | None = KEEP,
        note: str | Keep | None = KEEP,
    ) -> None:
        """Change a job's overridden schedule, switch and/or pause note; None: none."""
        check_override(schedule, enabled, note)
        keeper = self._keeper
        if keeper is not None:
            keeper.set_job_override(name, schedule=schedule, enabled=enabled, note=note)
            return
        with self._changing():
            current = self._overrides.get(name, Override())
            new = overridden(current, schedule, enabled, note)
            self._pending_overrides.add(name)
            if new == Override():
                self._overrides.pop(name, None)
            else:
                self._overrides[name] = new

    def job_override(self, name: str) -> Override | None:
        """Return a job's override, if it has one (the keeper's, when given one)."""
        keeper = self._keeper
        if keeper is not None:
            return keeper.job_override(name)
        with self._lock:
            return self._overrides.get(name)

    def job_overrides(self) -> dict[str, Override]:
        """Return every override these stats hold themselves, by name (not a keeper's)."""
        with self._lock:
            return dict(self._overrides)

    # -- several processes on one sidecar ------------------------------------------------------

    @property
    def has_pending(self) -> bool:
        """Tell whether anything was recorded since the last ``merge_into``."""
        with self._lock:
            return bool(self._pending or self._pending_overrides or self._pending_channels)

    def merge_into(self, theirs: WorkloadStats) -> None:
        """Add what was recorded here since the last merge to ``theirs``, then become it.

        ``theirs`` is the sidecar as another process may have written it meanwhile: counts
        are added (never written over), the later last run and skip win, and an override
        changed here replaces theirs. Afterwards these stats hold the sum (``theirs`` is
        used up) and start a new pending record.
        """
        with self._lock:
            for name, mine in self._pending.items():
                theirs._jobs.setdefault(name, JobHistory()).absorb(mine)
            for channel, mine_series in self._pending_channels.items():
                series = theirs._channels.setdefault(channel, new_series())
                for tier in Tier:
                    for start, values in mine_series[tier].items():
                        add_bucket(series[tier], tier, start, values)
            for name in self._pending_overrides:
                override = self._overrides.get(name)
                if override is None:
                    theirs._overrides.pop(name, None)
                else:
                    theirs._overrides[name] = override
            self._jobs = theirs._jobs
            self._channels = theirs._channels
            self._overrides = dict(theirs._overrides)
            self._pending = {}
            self._pending_channels = {}
            self._pending_overrides = set()
            self._version += 1

    # -- persistence --------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """Return the stats as plain JSON values."""
        with self._lock:
            jobs = {name: job.to_json() for name, job in self._jobs.items()}
            overrides = {
                name: {"schedule": o.schedule, "enabled": o.enabled}
                | ({} if o.note is None else {"note": o.note})
                for name, o in sorted(self._overrides.items())
            }
            channels = {
                channel.value: series_to_json(series) for channel, series in self._channels.items()
            }
            return {
                "format": _FORMAT,
                "jobs": jobs,
                "overrides": overrides,
                "channels": channels,
            }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WorkloadStats:
        """Rebuild stats written by ``to_json``; raise ``ValueError`` on anything else."""
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise ValueError(f"workload stats: expected format {_FORMAT}")
        stats = cls()
        try:
            for name, entry in data.get("jobs", {}).items():
                stats._jobs[name] = JobHistory.from_json(name, entry)
            for label, entry in data.get("channels", {}).items():
                stats._channels[Channel(label)] = series_from_json(entry)
            for name, o in data.get("overrides", {}).items():
                stats.set_job_override(
                    name, schedule=o.get("schedule"), enabled=o.get("enabled"), note=o.get("note")
                )
            stats._pending_overrides = set()
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise ValueError(f"workload stats: malformed entry ({error})") from error
        stats._version = 0
        return stats
