"""Workload statistics: every run and skip of every job, per minute, hour and day.

Per job, three series of buckets hold the count of runs, the failures, the total and the
longest duration: minutes are kept 2 days, hours 90 days and days 3 years. Minutes and hours
are aligned on UTC; days start at local midnight in the stats' ``time_zone`` (so a day bucket
is 23 or 25 hours long on a DST day). The stats
also hold the last run, skip counts by reason, and the saved queries run per channel
(``Channel``: a job's run, the API, the CLI, the playground) in the same three series.
Everything round-trips through plain JSON (``to_json`` / ``from_json``); the store keeps it in
a sidecar file beside the database.

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
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final, Protocol
from zoneinfo import ZoneInfo

from dgxmm.errors import InvalidInput
from dgxmm.jobs.job import Outcome, RunResult, SkipReason
from dgxmm.jobs.keys import check_pause_note
from dgxmm.jobs.zones import resolve_zone, zone_clock
from dgxmm.time_units import DAY_US, HOUR_US, MINUTE_US, SECOND_US

__all__ = [
    "KEEP",
    "Bucket",
    "Channel",
    "JobOverrides",
    "Keep",
    "LastRun",
    "Override",
    "RunCounts",
    "SkipRecord",
    "Tier",
    "WorkloadStats",
]

_FORMAT: Final = 1


class Tier(Enum):
    """A series of buckets: its width and how long it is kept."""

    MINUTES = ("minutes", MINUTE_US, 2 * DAY_US)
    HOURS = ("hours", HOUR_US, 90 * DAY_US)
    DAYS = ("days", DAY_US, 3 * 366 * DAY_US)

    def __init__(self, label: str, width_us: int, keep_us: int) -> None:
        self.label = label
        self.width_us = width_us
        self.keep_us = keep_us

    @classmethod
    def named(cls, label: str) -> Tier:
        """Return the tier called ``label`` ('minutes', 'hours' or 'days')."""
        for tier in cls:
            if tier.label == label:
                return tier
        raise ValueError(f"tier: {label!r} is not one of minutes, hours, days")


class Channel(Enum):
    """Where a saved query was run from."""

    JOB = "job"  # a query job's run
    API = "api"  # POST /api/queries/run
    CLI = "cli"  # dgxmm queries run
    PLAYGROUND = "playground"  # the browser playground's engine


@dataclass(frozen=True, slots=True, kw_only=True)
class Bucket:
    """The runs of one job (or a channel's queries) that started in one minute, hour or day."""

    start_us: int
    count: int
    failures: int
    total_us: int
    longest_us: int


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


@dataclass(frozen=True, slots=True, kw_only=True)
class Override:
    """A system job's schedule and switch as changed by the instance's user (None: built in)."""

    schedule: str | None = None
    enabled: bool | None = None
    note: str | None = None  # why it was switched off (kept while it is off)


class _JobSeries:
    __slots__ = ("counted", "last", "last_skip", "series", "skips")

    def __init__(self) -> None:
        # Per tier: bucket start -> [count, failures, total_us, longest_us], oldest first.
        self.series: dict[Tier, dict[int, list[int]]] = {tier: {} for tier in Tier}
        self.last: LastRun | None = None
        self.skips: dict[SkipReason, int] = {}
        self.last_skip: SkipRecord | None = None
        # The run counts kept for one minute (its start): within a minute the windows cover
        # the same buckets (every bucket starts on a minute), so they are summed once per job
        # and minute, or after a run is counted, never per request.
        self.counted: tuple[int, RunCounts] | None = None


class Keep(Enum):
    """A typed "leave it as it is" for an override that None restores."""

    KEEP = "keep"


KEEP: Final = Keep.KEEP


class JobOverrides(Protocol):
    """Where a scheduler keeps the overrides of its system jobs' schedules and switches.

    ``WorkloadStats`` keeps them in memory (and its sidecar) unless given a keeper; a store
    keeps them in its database, shared by every instance on it
    (``dgxmm.store.runs.overrides``), and gives its stats that keeper.
    """

    def job_override(self, name: str) -> Override | None:
        """Return a job's override, if it has one."""
        ...

    def set_job_override(
        self,
        name: str,
        *,
        schedule: str | Keep | None = KEEP,
        enabled: bool | Keep | None = KEEP,
        note: str | Keep | None = KEEP,
    ) -> None:
        """Change a job's overridden schedule, switch and/or pause note; None: none."""
        ...


class WorkloadStats:
    """Per-job run history and overrides; safe to share between threads."""

    def __init__(self, time_zone: ZoneInfo | str = "UTC") -> None:
        self.time_zone = resolve_zone(time_zone)
        self._day: tuple[int, int, ZoneInfo | None] = (0, 0, None)  # the last local day seen
        self._lock = threading.RLock()
        self._jobs: dict[str, _JobSeries] = {}
        self._overrides: dict[str, Override] = {}
        # Per channel and tier: bucket start -> [count, failures, total_us, longest_us].
        self._channels: dict[Channel, dict[Tier, dict[int, list[int]]]] = {}
        # What was recorded here since the last ``merge_into``: what another process sharing
        # the sidecar has not seen yet (added to its counts, never written over them).
        self._pending: dict[str, _JobSeries] = {}
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
                    job = jobs[result.name] = _JobSeries()
                self._count(job.series, result.started_at, result.duration_us, failed)
                job.counted = None
                job.last = _later_run(job.last, last)

    def record_query(
        self, channel: Channel, *, started_at: int, duration_us: int, failed: bool
    ) -> None:
        """Count one run of a saved query under its channel, in every tier."""
        with self._changing():
            for channels in (self._channels, self._pending_channels):
                series = channels.setdefault(channel, {tier: {} for tier in Tier})
                self._count(series, started_at, duration_us, failed)

    def _count(
        self, series: dict[Tier, dict[int, list[int]]], at_us: int, duration_us: int, failed: bool
    ) -> None:
        for tier in Tier:
            buckets = series[tier]
            start = self._bucket_start(at_us, tier)
            bucket = buckets.get(start)
            if bucket is None:
                buckets[start] = [1, int(failed), duration_us, duration_us]
                _prune(buckets, start - tier.keep_us)
            else:
                bucket[0] += 1
                bucket[1] += failed
                bucket[2] += duration_us
                bucket[3] = max(bucket[3], duration_us)

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
                job = jobs.setdefault(skip.name, _JobSeries())
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
        return _buckets(rows)

    def channel_history(self, channel: Channel, tier: Tier) -> list[Bucket]:
        """Return the queries run from ``channel`` in ``tier``'s buckets, oldest first."""
        with self._lock:
            series = self._channels.get(channel)
            rows = [] if series is None else sorted(series[tier].items())
        return _buckets(rows)

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
                last_hour=_count_since(minutes, now_us - HOUR_US, now_us),
                last_two_days=_count_since(minutes, now_us - 2 * DAY_US, now_us),
                last_90_days=_count_since(hours, now_us - 90 * DAY_US, now_us),
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
        if schedule is not KEEP and schedule is not None and not isinstance(schedule, str):
            raise InvalidInput("schedule", f"{schedule!r} is not cron text (or None)")
        if enabled is not KEEP and enabled is not None and not isinstance(enabled, bool):
            raise InvalidInput("enabled", f"{enabled!r} is not true or false (or None)")
        if note is not KEEP and note is not None:
            check_pause_note(note, field="note")
        keeper = self._keeper
        if keeper is not None:
            keeper.set_job_override(name, schedule=schedule, enabled=enabled, note=note)
            return
        with self._changing():
            current = self._overrides.get(name, Override())
            new = Override(
                schedule=current.schedule if schedule is KEEP else schedule,
                enabled=current.enabled if enabled is KEEP else enabled,
                note=current.note if note is KEEP else note,
            )
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
                job = theirs._jobs.setdefault(name, _JobSeries())
                job.counted = None
                for tier in Tier:
                    for start, values in mine.series[tier].items():
                        _add_bucket(job.series[tier], tier, start, values)
                job.last = _later_run(job.last, mine.last)
                for reason, count in mine.skips.items():
                    job.skips[reason] = job.skips.get(reason, 0) + count
                if mine.last_skip is not None and (
                    job.last_skip is None or mine.last_skip.at_us >= job.last_skip.at_us
                ):
                    job.last_skip = mine.last_skip
            for channel, mine_series in self._pending_channels.items():
                series = theirs._channels.setdefault(channel, {tier: {} for tier in Tier})
                for tier in Tier:
                    for start, values in mine_series[tier].items():
                        _add_bucket(series[tier], tier, start, values)
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
            jobs: dict[str, Any] = {}
            for name, job in self._jobs.items():
                entry: dict[str, Any] = {
                    tier.label: [
                        [start, *values] for start, values in sorted(job.series[tier].items())
                    ]
                    for tier in Tier
                }
                if job.last is not None:
                    entry["last"] = {
                        "started_at": job.last.started_at,
                        "duration_us": job.last.duration_us,
                        "outcome": job.last.outcome.value,
                        "error": job.last.error,
                        "public_error": job.last.public_error,
                        "detail": job.last.detail,
                    }
                entry["skips"] = {reason.value: n for reason, n in job.skips.items()}
                if job.last_skip is not None:
                    entry["last_skip"] = {
                        "at_us": job.last_skip.at_us,
                        "reason": job.last_skip.reason.value,
                        "detail": job.last_skip.detail,
                    }
                jobs[name] = entry
            overrides = {
                name: {"schedule": o.schedule, "enabled": o.enabled}
                | ({} if o.note is None else {"note": o.note})
                for name, o in sorted(self._overrides.items())
            }
            channels = {
                channel.value: {
                    tier.label: [[start, *values] for start, values in sorted(series[tier].items())]
                    for tier in Tier
                }
                for channel, series in self._channels.items()
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
                job = _JobSeries()
                for tier in Tier:
                    job.series[tier] = {
                        int(row[0]): [int(v) for v in row[1:5]] for row in entry.get(tier.label, [])
                    }
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
                stats._jobs[name] = job
            for label, entry in data.get("channels", {}).items():
                stats._channels[Channel(label)] = {
                    tier: {
                        int(row[0]): [int(v) for v in row[1:5]] for row in entry.get(tier.label, [])
                    }
                    for tier in Tier
                }
            for name, o in data.get("overrides", {}).items():
                stats.set_job_override(
                    name, schedule=o.get("schedule"), enabled=o.get("enabled"), note=o.get("note")
                )
            stats._pending_overrides = set()
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise ValueError(f"workload stats: malformed entry ({error})") from error
        stats._version = 0
        return stats


def _buckets(rows: list[tuple[int, list[int]]]) -> list[Bucket]:
    return [
        Bucket(start_us=start, count=c, failures=f, total_us=t, longest_us=lg)
        for start, (c, f, t, lg) in rows
    ]


def _add_bucket(buckets: dict[int, list[int]], tier: Tier, start: int, values: list[int]) -> None:
    """Add one bucket's count, failures and time to ``buckets`` (the longest: the larger)."""
    bucket = buckets.get(start)
    if bucket is None:
        in_order = not buckets or start > next(reversed(buckets))
        buckets[start] = list(values)
        if not in_order:  # merged in from another process: keep the dict oldest first
            ordered = sorted(buckets.items())
            buckets.clear()
            buckets.update(ordered)
        _prune(buckets, next(reversed(buckets)) - tier.keep_us)
        return
    bucket[0] += values[0]
    bucket[1] += values[1]
    bucket[2] += values[2]
    bucket[3] = max(bucket[3], values[3])


def _later_run(mine: LastRun | None, other: LastRun | None) -> LastRun | None:
    if mine is None:
        return other
    if other is None:
        return mine
    return other if other.started_at >= mine.started_at else mine


def _prune(buckets: dict[int, list[int]], cutoff: int) -> None:
    """Drop buckets that started before ``cutoff`` (the dict is oldest first)."""
    while buckets:
        oldest = next(iter(buckets))
        if oldest >= cutoff:
            return
        del buckets[oldest]


def _count_since(buckets: dict[int, list[int]], since_us: int, now_us: int) -> int:
    return sum(values[0] for start, values in buckets.items() if since_us < start <= now_us)


def _kind_of(error: str | None) -> str | None:
    """Return an error's kind alone: all a sidecar written before public errors may show."""
    return None if error is None else error.split(":", 1)[0]
