"""The scheduler: the host ticks it with the current time; it decides what runs.

Two ways to drive it:

- ``tick(now)`` starts what is due and runs it on the calling thread;
- ``start_due(now)`` only does the bookkeeping and hands out one ``JobRun`` per due job (and
  ``start_now(name, now)`` one on demand); the host runs each on a thread of its choice and
  gives the result back with ``finish(result)``. Until then the job and its group count as
  running.

The rules, each with a test in ``tests/jobs/test_scheduler.py``:

- the first tick only plans: every job gets its next time after that instant;
- a job never overlaps itself: while it runs it has no planned time; when it finishes it is
  planned after the instant it finished, and a time that passed meanwhile is recorded as
  skipped (overlap);
- a due time that no tick reached within ``max_lateness`` (the host was stopped or stuck)
  is skipped (missed), and the job is planned after now: there is no catch-up burst;
- a job whose group is busy waits, keeping its time; it starts at the first tick after the
  group frees (the host ticks at once when a run ends and ``has_released`` says so, so a
  group drains within its minute) and runs once however many of its times passed
  meanwhile; a waiting job is late, never missed, and its lateness counts from its time;
- a disabled job does not run; its due times are recorded as skipped (disabled).

A job's own policies may change two of these (``jobs/catchup.py``, ``jobs/overlap.py``):
its catch-up window and coalesce choice which times of a gap still run, and its overlap
policy lets one time wait for its run under way (``buffer_one``), or cancels that run
(``cancel_other``). Their defaults are the rules above.

Each job's schedule is read in its own zone (``Job.time_zone``) when it has one, else in the
scheduler's.

The scheduler owns no thread and never reads the wall clock. It is not itself thread-safe:
the host calls it from one thread at a time (dgxmm's server holds a lock around it).
"""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Callable
from datetime import timedelta
from heapq import heappop
from zoneinfo import ZoneInfo

from dgxmm.errors import Busy, Conflict
from dgxmm.jobs.catchup import CATCHUP_TIMES_MAX, CatchUp, plan_catch_up
from dgxmm.jobs.context import Timer
from dgxmm.jobs.cron.expression import CronSchedule
from dgxmm.jobs.job import Job, JobRun, Outcome, RunResult, SkipReason
from dgxmm.jobs.overlap import CANCELLED_BY_OVERLAP, Overlap, OverlapStep, on_overlap
from dgxmm.jobs.roster import Entry, Roster
from dgxmm.jobs.stats.history import SkipRecord
from dgxmm.jobs.stats.overrides import JobOverrides
from dgxmm.jobs.stats.workload import WorkloadStats
from dgxmm.telemetry import NO_TELEMETRY, Telemetry
from dgxmm.time_units import SECOND_US
from dgxmm.words import counted

__all__ = ["Scheduler"]

# How many times a long run may have passed over before the overlap count stops counting.
_OVERLAP_COUNT_CAP = 1000


class Scheduler(Roster):
    """Plans and starts jobs on a cron schedule, in one time zone (the job list: ``Roster``)."""

    def __init__(
        self,
        time_zone: ZoneInfo | str = "UTC",
        stats: WorkloadStats | None = None,
        *,
        max_lateness: timedelta = timedelta(minutes=1),
        timer: Timer = time.monotonic,
        keep_skips: int = 1000,
        overrides: JobOverrides | None = None,
        telemetry: Telemetry = NO_TELEMETRY,
        rng: Callable[[], float] = random.random,
    ) -> None:
        super().__init__(time_zone, stats, overrides)
        # Told of every skip, with the times it covers (the server's /metrics counts them).
        self.telemetry = telemetry
        self._rng = rng  # a retry's wait: full jitter, uniform in [0, its bound)
        self._max_lateness = round(max_lateness.total_seconds() * SECOND_US)
        self._timer = timer
        self._released: list[Entry] = []  # jobs just free with a time queued: start next tick
        self._last_tick: int | None = None
        self.skips: deque[SkipRecord] = deque(maxlen=keep_skips)

    # -- ticking ------------------------------------------------------------------------------

    def tick(self, now: int) -> list[RunResult]:
        """Start what is due at ``now`` and run it on this thread; return the results."""
        results = []
        for run in self.start_due(now):
            result = run.run()
            self.finish(result)
            results.append(result)
        return results

    def start_due(self, now: int) -> list[JobRun]:
        """Do the bookkeeping of a tick and hand out a run for each job that starts now."""
        _check_instant(now)
        first = self._last_tick is None
        if self._unplanned:
            # Planned after the previous tick, so a time between it and now is still due.
            after = now if first or self._last_tick is None else min(self._last_tick, now)
            for entry in self._unplanned.values():
                if entry.run is None:  # a job whose run goes on is planned by finish()
                    self._plan(entry, after)
            self._unplanned.clear()
        self._last_tick = now
        if first:
            return []  # the first tick only plans
        runs: list[JobRun] = []
        if self._waiting:
            self._start_waiting(now, runs)
        heap = self._heap
        while heap and heap[0][0] <= now:
            at, _, gen, entry = heappop(heap)
            if gen != entry.gen:
                continue  # replanned, removed or started since this item was pushed
            entry.next_at = None
            job = entry.job
            if entry.retry is not None:
                self._start_retry(entry, at, now, runs)
            elif not job.enabled:
                self._skip(job.name, at, SkipReason.DISABLED)
                self._plan(entry, now)
            elif entry.run is not None or entry.queued or entry.waiting_since is not None:
                self._due_while_busy(entry, at, now)
            elif job.catch_up is not None:
                self._catch_up(entry, job.catch_up, at, now, runs)
            elif now - at > self._max_lateness:
                late = (now - at) / SECOND_US
                # One record, however many times passed unticked; the telemetry counts each.
                passed = 1 + self._count_between(job.schedule, self.zone_of(job), at, now)
                self._skip(
                    job.name,
                    at,
                    SkipReason.MISSED,
                    f"no tick until {late:.0f} s later",
                    count=passed,
                )
                self._plan(entry, now)
            elif job.group is not None and job.group in self._busy:
                self._wait(entry, at)
            else:
                runs.append(self._start(entry, scheduled_at=at, now=now))
        if self._released:
            self._start_released(now, runs)
        return runs

    def has_released(self) -> bool:
        """Tell whether a tick now would start a time that waited for a run to end.

        True when a job just freed has a time queued, or when a group that jobs wait for has
        no run under way: the host then ticks at once rather than at its next tick.
        """
        if self._released:
            return True
        return any(queue and group not in self._busy for group, queue in self._waiting.items())

    def start_now(self, name: str, now: int) -> JobRun:
        """Hand out a run now, whatever the schedule; ``Busy`` while the job or its group runs."""
        _check_instant(now)
        entry = self._entry(name)
        if entry.run is not None:
            raise Busy(f"job {name} is running; try again when it has finished")
        group = entry.job.group
        if group is not None and group in self._busy:
            holder = self._busy[group].job.name
            raise Busy(f"job {holder} of group {group} is running; try again when it has finished")
        if entry.waiting_since is not None:
            self._unwait(entry)
        entry.retry = None  # a run by hand stands in for a retry planned
        return self._start(entry, scheduled_at=now, now=now)

    def finish(self, result: RunResult) -> None:
        """Take a run's result back: record it, free its group, plan the job's next time."""
        run = self._running.pop(result.token, None)
        if run is None:
            raise Conflict(f"run {result.token} of job {result.name} is not under way")
        group = run.job.group
        if group is not None and self._busy.get(group) is run:
            del self._busy[group]
        if self.stats is not None:
            self.stats.record_run(result)
        entry = self._entries.get(result.name)
        if entry is None or entry.run is not run:
            return  # removed while it ran
        entry.run = None
        finished = result.finished_at
        schedule = entry.job.schedule
        zone = self.zone_of(entry.job)
        first = schedule.next_after(max(run.scheduled_at, run.started_at), zone)
        retry_at = None if entry.queued else self._retry_at(entry.job, result, first)
        if retry_at is not None:  # a time queued comes first: a retry never runs past it
            entry.retry = (run.scheduled_at, result.attempt + 1, first)
            self._plan(entry, finished, at=retry_at)
            return
        if entry.job.overlap is not Overlap.SKIP:
            # Its times were planned while it ran (each told at its tick): one that waits
            # starts now; else the time planned stays, or it is planned after the end.
            if entry.queued:
                self._released.append(entry)
            elif entry.next_at is None:
                self._plan(entry, finished)
            return
        if first <= finished:
            passed = 1 + self._count_between(schedule, zone, first, finished)
            # Counting stops at the cap: "1000+ times".
            said = f"{passed}+ times" if passed >= _OVERLAP_COUNT_CAP else counted(passed, "time")
            detail = f"{said} while it ran"
            self._skip(result.name, first, SkipReason.OVERLAP, detail, count=passed)
        if entry.queued:  # a gap's next time caught up starts now
            entry.freed_at = finished
            self._released.append(entry)
        elif first > finished:  # the common case: no time passed while it ran
            self._plan(entry, finished, at=first)
        else:
            self._plan(entry, finished)

    def forgo(
        self,
        run: JobRun,
        now: int,
        detail: str | None = None,
        *,
        reason: SkipReason | None = SkipReason.CLAIMED,
    ) -> None:
        """Give back a run handed out but never run (another process claimed its time).

        Nothing is counted as a run: its time is recorded as skipped with ``reason`` (None:
        not recorded, for a run asked for by hand), its group freed, and the job planned
        after ``now``.
        """
        _check_instant(now)
        if self._running.pop(run.token, None) is None:
            raise Conflict(f"run {run.token} of job {run.name} is not under way")
        group = run.job.group
        if group is not None and self._busy.get(group) is run:
            del self._busy[group]
        if reason is not None:
            self._skip(run.name, run.scheduled_at, reason, detail)
        entry = self._entries.get(run.name)
        if entry is None or entry.run is not run:
            return  # removed meanwhile
        entry.run = None
        if entry.queued:  # a gap's next time caught up is tried in turn (and claimed, or not)
            self._released.append(entry)
            if entry.job.overlap is Overlap.SKIP:
                entry.freed_at = max(now, run.scheduled_at)
                return
        self._plan(entry, max(now, run.scheduled_at))

    def running(self) -> list[JobRun]:
        """Return the runs under way."""
        return list(self._running.values())

    def is_group_busy(self, group: str) -> bool:
        """Tell whether a run of ``group`` is under way."""
        return group in self._busy

    @property
    def max_lateness_us(self) -> int:
        """How late a tick may reach a time and still run it (microseconds)."""
        return self._max_lateness

    # -- inside -------------------------------------------------------------------------------

    def _retry_at(self, job: Job, result: RunResult, next_time: int) -> int | None:
        """When to try a failed run again: before the job's next time, or never."""
        policy = job.retry
        if result.outcome is not Outcome.FAILED or not result.retryable:
            return None
        if result.attempt > policy.retries:
            return None
        bound = policy.bound(result.attempt + 1)
        wait = round(self._rng() * bound.total_seconds() * SECOND_US)
        at = result.finished_at + max(0, wait)
        return at if at < next_time else None  # a retry never runs at or past the next time

    def _start_retry(
        self, entry: Entry, at: int, now: int, runs: list[JobRun], *, waited: bool = False
    ) -> None:
        """Start a planned retry, or give it up: off, its next time come, or no tick in time."""
        assert entry.retry is not None
        original, attempt, deadline = entry.retry
        late = not waited and now - at > self._max_lateness
        if not entry.job.enabled or now >= deadline or late:
            entry.retry = None
            self._plan(entry, min(now, deadline - 1))  # the schedule's times go on
        elif entry.job.group is not None and entry.job.group in self._busy:
            entry.next_at = None  # waits for its group, as a time does (not a skip of a time)
            entry.waiting_since = at
            self._waiting.setdefault(entry.job.group, deque()).append(entry)
        else:
            entry.retry = None
            runs.append(self._start(entry, scheduled_at=original, now=now, attempt=attempt))

    def _start(self, entry: Entry, *, scheduled_at: int, now: int, attempt: int = 1) -> JobRun:
        run = JobRun(
            entry.job, scheduled_at=scheduled_at, started_at=now, timer=self._timer, attempt=attempt
        )
        entry.gen += 1
        entry.next_at = None
        entry.run = run
        self._running[run.token] = run
        if entry.job.group is not None:
            self._busy[entry.job.group] = run
        if entry.job.overlap is not Overlap.SKIP:
            # Its next time is planned while it runs: that time's tick applies the policy.
            self._plan(entry, max(scheduled_at, now))
        return run

    def _due_while_busy(self, entry: Entry, at: int, now: int) -> None:
        """A time came while the job runs (or a time of it waits): its overlap policy."""
        job = entry.job
        passed = 1 + self._count_between(job.schedule, self.zone_of(job), at, now)
        waits = bool(entry.queued) or entry.waiting_since is not None or entry.run is None
        step = on_overlap(job.overlap, one_waits=waits)
        if step is not OverlapStep.SKIP:
            entry.queued.append(at)
            passed -= 1
            if step is OverlapStep.CANCEL_AND_WAIT and entry.run is not None:
                entry.run.cancel(CANCELLED_BY_OVERLAP)
        if passed:
            holder = f"run {entry.run.token}" if entry.run is not None else "a time waiting"
            first = (
                at if step is OverlapStep.SKIP else job.schedule.next_after(at, self.zone_of(job))
            )
            self._skip(
                job.name,
                first,
                SkipReason.OVERLAP,
                f"{counted(passed, 'time')} while {holder} of it was under way",
                count=passed,
            )
        self._plan(entry, now)

    def _catch_up(
        self, entry: Entry, policy: CatchUp, at: int, now: int, runs: list[JobRun]
    ) -> None:
        """The times passed since ``at``, by the job's catch-up window and coalesce choice."""
        job = entry.job
        zone = self.zone_of(job)
        times = [at]
        while len(times) < CATCHUP_TIMES_MAX:
            following = job.schedule.next_after(times[-1], zone)
            if following > now:
                break
            times.append(following)
        beyond = self._count_between(job.schedule, zone, times[-1], now)  # past the cap
        plan = plan_catch_up(times, now, policy)
        window = f"{policy.window.total_seconds():g} s"
        if plan.missed or beyond:
            late = (now - times[0]) / SECOND_US
            self._skip(
                job.name, times[0], SkipReason.MISSED,
                f"no tick until {late:.0f} s later, past its catch-up window of {window}",
                count=len(plan.missed) + beyond,
            )  # fmt: skip
        if plan.coalesced:
            chosen = plan.run[0]
            self._skip(
                job.name, plan.coalesced[0], SkipReason.MISSED,
                f"coalesced ({policy.coalesce.value}): {counted(len(plan.coalesced), 'time')}"
                " inside its"
                f" catch-up window of {window} run once, as the time {chosen}",
                count=len(plan.coalesced),
            )  # fmt: skip
        if not plan.run:
            self._plan(entry, now)
            return
        entry.queued.extend(plan.run[1:])
        if job.group is not None and job.group in self._busy:
            self._wait(entry, plan.run[0])
        else:
            runs.append(self._start(entry, scheduled_at=plan.run[0], now=now))

    def _start_released(self, now: int, runs: list[JobRun]) -> None:
        """Start the times queued of the jobs that just got free (their group permitting)."""
        released, self._released = self._released, []
        for entry in released:
            if self._entries.get(entry.job.name) is not entry or entry.run is not None:
                continue  # removed, or started by hand meanwhile
            if not entry.queued or entry.waiting_since is not None:
                continue
            at = entry.queued.popleft()
            if entry.freed_at is not None:  # a skip job: the times since its run ended
                freed, entry.freed_at = entry.freed_at, None
                job, zone = entry.job, self.zone_of(entry.job)
                passed = self._count_between(job.schedule, zone, freed, now)
                if passed:
                    first = job.schedule.next_after(freed, zone)
                    detail = f"{counted(passed, 'time')} while it caught up a gap"
                    self._skip(job.name, first, SkipReason.OVERLAP, detail, count=passed)
            if not entry.job.enabled:
                for time_ in (at, *entry.queued):
                    self._skip(entry.job.name, time_, SkipReason.DISABLED)
                entry.queued.clear()
                if entry.next_at is None:
                    self._plan(entry, now)
            elif entry.job.group is not None and entry.job.group in self._busy:
                self._wait(entry, at)
            else:
                runs.append(self._start(entry, scheduled_at=at, now=now))

    def _wait(self, entry: Entry, at: int) -> None:
        group = entry.job.group
        assert group is not None
        entry.waiting_since = at
        self._waiting.setdefault(group, deque()).append(entry)
        holder = self._busy[group].job.name
        self._skip(entry.job.name, at, SkipReason.GROUP_BUSY, f"waits for {holder} ({group})")

    def _start_waiting(self, now: int, runs: list[JobRun]) -> None:
        for group in list(self._waiting):
            queue = self._waiting[group]
            while queue and group not in self._busy:
                entry = queue.popleft()
                at, entry.waiting_since = entry.waiting_since, None
                assert at is not None
                if self._entries.get(entry.job.name) is not entry:
                    continue  # removed while it waited
                if entry.retry is not None:
                    self._start_retry(entry, at, now, runs, waited=True)
                elif not entry.job.enabled:
                    self._skip(entry.job.name, at, SkipReason.DISABLED)
                    self._plan(entry, now)
                elif entry.job.group != group and entry.job.group in self._busy:
                    self._wait(entry, at)  # its group changed while it waited
                else:
                    runs.append(self._start(entry, scheduled_at=at, now=now))
            if not queue:
                del self._waiting[group]

    def _skip(
        self,
        name: str,
        at: int,
        reason: SkipReason,
        detail: str | None = None,
        *,
        count: int = 1,
    ) -> None:
        """Record a skip of ``count`` times (an overlap or a gap in the ticks spans several)."""
        record = SkipRecord(name=name, at_us=at, reason=reason, detail=detail)
        self.skips.append(record)
        if self.stats is not None:
            self.stats.record_skip(record)
        self.telemetry.runs_skipped(name, reason, count)

    def _count_between(self, schedule: CronSchedule, zone: ZoneInfo, after: int, until: int) -> int:
        """Count the fire times in (after, until], up to a cap."""
        count = 0
        at = after
        while count < _OVERLAP_COUNT_CAP:
            at = schedule.next_after(at, zone)
            if at > until:
                break
            count += 1
        return count


def _check_instant(now: object) -> None:
    if not isinstance(now, int) or isinstance(now, bool):
        raise TypeError(f"now: expected integer microseconds since the epoch, got {now!r}")
