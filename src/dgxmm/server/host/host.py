"""The host: the thread that ticks the scheduler, and the threads that do the jobs' work.

This is the spec's dev server session thread. Every ``tick_seconds`` the ticker thread takes
finished runs back, picks up catalog changes, and asks the scheduler what is due; each due
run is handed to a thread of its own. The ticker never does a job's work, so requests (served
by the ASGI server's threads) never wait for a job: each scheduler call is a short step under
one lock. ``run_now`` (``POST /api/jobs/run``) starts a run on a worker too and waits for it
on the request's thread, while other requests go on.

With a lease (``dgxmm serve``) only the holder ticks. It beats at every pass of its ticker;
a standby that sees the holder's beat unmoved for ``stuck_after(tick_seconds)`` seconds (at
least 10, and 4 ticks: 20 s at the default 5 s tick) deposes it: it ends the stuck holder's
sessions, which frees the lease, and takes it at its next try. A deposed holder that wakes
up claims nothing (the claim is fenced on its lease) and stands by at its next step.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from dgxmm.clock import Clock
from dgxmm.errors import Busy, Conflict, DgxmmError
from dgxmm.jobs import (
    CronSchedule,
    Explanation,
    Job,
    JobRun,
    RunResult,
    Scheduler,
    SkipReason,
    Timer,
    resolve_zone,
)
from dgxmm.server.host.definitions import CatalogJobs
from dgxmm.server.host.lease import (
    LEASE_TRY_SECONDS,
    TAKEOVER_CATCHUP_US,
    TickerLease,
    stuck_after,
)
from dgxmm.server.host.moves import Moves
from dgxmm.server.host.run_cancels import apply_cancels
from dgxmm.store import InstanceRole, JobDefinition, NotScheduled, Store, Trigger
from dgxmm.store.database import CHANGE_BUSY_MS
from dgxmm.telemetry import NO_TELEMETRY, Telemetry
from dgxmm.time_units import SECOND_US
from dgxmm.words import counted

__all__ = ["Host", "RowParts"]

# The parts of a user job's row in the job list that follow from its definition alone, its
# parsed schedule and the zone it is read in (``server/lists/jobs.py``).
RowParts = tuple[dict[str, Any], CronSchedule | None, ZoneInfo]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Waiter:
    done: threading.Event = field(default_factory=threading.Event)
    result: RunResult | None = None


class Host:
    """Ticks a store's scheduler on a thread of its own and runs jobs on worker threads."""

    def __init__(
        self,
        store: Store,
        *,
        time_zone: str,
        clock: Clock | None = None,
        tick_seconds: float = 5.0,
        system_jobs: Iterable[Job] = (),
        timer: Timer = time.monotonic,
        stop_grace_seconds: float = 10.0,
        telemetry: Telemetry = NO_TELEMETRY,
        lease: bool = False,
        pulses: Iterable[Callable[[int], object]] = (),
        pulse_seconds: float = 1.0,
    ) -> None:
        self.store = store
        # Called with now every ``pulse_seconds`` by the ticking instance, between its ticks:
        # the idle policies, whose steps a 5-second tick would make up to 5 s late. Each
        # returns at once (it hands its work to threads of its own).
        self._pulses = list(pulses)
        self.pulse_seconds = pulse_seconds
        self._telemetry = telemetry
        self.clock = clock or store.clock
        self.time_zone = resolve_zone(time_zone, field="time_zone")
        self.tick_seconds = tick_seconds
        store.job_overrides.load()
        self.scheduler = Scheduler(
            self.time_zone,
            stats=store.workload_stats,
            overrides=store.job_overrides,
            timer=timer,
            telemetry=telemetry,
        )
        self.lock = threading.RLock()  # every scheduler call happens under it
        # With a lease (``dgxmm serve``), only the holder of the store's ticker lease ticks;
        # without one (a library or a test), this host ticks whatever else runs.
        self._lease = (
            TickerLease(
                store,
                stuck_seconds=stuck_after(tick_seconds),
                take_over=self._take_over,
                lock=self.lock,
            )
            if lease
            else None
        )
        self.not_scheduled: list[NotScheduled] = []
        self._stop_grace = stop_grace_seconds
        extra = list(system_jobs)
        store.reserve_job_names(job.name for job in extra)
        for job in [*store.system_jobs(), *extra]:
            self.scheduler.add(job)
        self._catalog_version: int | None = None
        self._catalog_jobs = CatalogJobs(store)  # the user jobs' definitions, kept by version
        # Kept here, with the store they come from, by (name, version): a new version of a job
        # is a new key, and another store's job of the same name is another host's.
        self.row_parts: dict[tuple[str, int], RowParts] = {}
        self._finished: queue.Queue[RunResult] = queue.Queue()
        self._waiters: dict[int, _Waiter] = {}
        self._claims: dict[int, int] = {}  # run token -> its row in the store's job_runs
        self._workers: dict[int, threading.Thread] = {}
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._ticker: threading.Thread | None = None
        self._planned = False  # the scheduler had its first (planning) tick
        # Moves whenever this host's job list changed in memory (runs started or taken back,
        # skips, a sync): with the store's counter, the jobs topic of ``GET /api/changes``.
        self.moves = Moves()
        # This host's first tick: a time before it that no run records was not ticked here.
        self.ticking_since: int | None = None

    # -- life ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Plan the jobs (the first tick only plans) and start the ticker thread.

        With a lease: the holder ticks; on PostgreSQL another instance stands by, trying the
        lease every second; on SQLite a second server on the database is refused (Conflict).
        """
        if self._lease is None:
            self.tick()
        else:
            self._lease.start()
        self._ticker = threading.Thread(target=self._tick_forever, name="dgxmm-ticker", daemon=True)
        self._ticker.start()

    def stop(self) -> list[RunResult]:
        """Stop ticking, give up the runs under way, flush the statistics; return those runs."""
        self._stopping.set()
        self._wake.set()
        if self._ticker is not None:
            self._ticker.join(timeout=30)
        abandoned = []
        with self.lock:
            self.collect()
            for run in self.scheduler.running():
                try:
                    result = run.abandon("the server stopped while it ran")
                except Conflict:
                    continue  # it has just finished: its result is on its way to the queue
                self._record(result)
                self._finish(result)
                abandoned.append(result)
        # Give the abandoned work a moment to notice (a query stops at its next check).
        deadline = time.monotonic() + self._stop_grace
        for worker in list(self._workers.values()):
            worker.join(timeout=max(0.0, deadline - time.monotonic()))
        self.collect()  # the runs that finished as the stop began
        self.store.flush_stats()
        if self._lease is not None:
            self.store.presence.stop()  # a standby takes the lease at its next try
        return abandoned

    @property
    def role(self) -> InstanceRole:
        """Say whether this host ticks (the holder) or stands by."""
        return InstanceRole.HOLDER if self._lease is None else self._lease.role

    @property
    def running(self) -> bool:
        """Tell whether the ticker thread is alive."""
        return self._ticker is not None and self._ticker.is_alive()

    # -- the ticker's steps -------------------------------------------------------------------

    def tick(self, now: int | None = None) -> list[JobRun]:
        """One tick: take results back, pick up catalog changes, start what is due."""
        with self.lock:
            self._planned = True
            self.collect()
            self.sync()
            at = self.clock.now_us() if now is None else now
            if self.ticking_since is None:
                self.ticking_since = at
            runs = []
            skips = self.scheduler.skips
            last_skip = skips[-1] if skips else None
            due = self.scheduler.start_due(at)
            skipped = []
            for record in reversed(skips):  # the skips of this tick, newest first
                if record is last_skip:
                    break
                skipped.append(record.name)
            if due or skipped:
                self.moves.moved([run.name for run in due] + skipped)
            # Claimed in the store before they start, in one transaction: another process
            # that claimed the same time runs it, and this one gives it back untouched.
            for run, refused in zip(due, self._claim(due), strict=True):
                if refused is not None:
                    self.scheduler.forgo(run, at, refused[1], reason=refused[0])
                    continue
                self._spawn(run)
                runs.append(run)
            return runs

    def explain(self, name: str, asked: int | datetime) -> Explanation:
        """Say what became of a job's time: the store's records and this scheduler's skips."""
        with self.lock:  # the scheduler's part; the store's records are read outside it
            job = self.scheduler.get(name)
            zone = self.scheduler.zone_of(job)
            builtin = self.scheduler.builtin(name).enabled
            skips = list(self.scheduler.skips)
        return self.store.explain_time(
            job,
            asked,
            zone=zone,
            max_lateness_us=self.scheduler.max_lateness_us,
            builtin_enabled=builtin,
            skips=skips,
            ticking_since=self.ticking_since,
        )

    def collect(self) -> list[RunResult]:
        """Take finished runs back into the scheduler; return them."""
        taken = []
        with self.lock:
            while True:
                try:
                    result = self._finished.get_nowait()
                except queue.Empty:
                    break
                self._workers.pop(result.token, None)
                if result.token not in {run.token for run in self.scheduler.running()}:
                    continue  # given up earlier (abandoned): its late result belongs to nobody
                self._finish(result)
                taken.append(result)
            if taken:
                self.moves.moved([result.name for result in taken])
        return taken

    def sync(self, *, force: bool = False) -> None:
        """Give the scheduler the catalog's user jobs when the catalog changed."""
        before = self._catalog_version
        # The version and the jobs changed since, in one read: every request and tick looks,
        # and a define then costs one transaction here, not three (issue 28).
        changes = None if force or before is None else self.store.job_changes(before)
        if changes is not None and changes.version == before:
            return
        with self.lock:
            if self._catalog_version != before:  # another sync moved on meanwhile
                before = self._catalog_version
                changes = None if force or before is None else self.store.job_changes(before)
            if changes is None or changes.names is None:  # the whole catalog, read again
                # Read before the jobs: a change in between is seen at the next sync.
                version = self.store.catalog_version()
                found = self.store.sync(self.scheduler)
                self.not_scheduled = list(found.not_scheduled)
            elif changes.version == before:
                return
            else:  # only the jobs that changed: a define costs the same at any size
                version, names = changes.version, changes.names
                found = self.store.sync_jobs(self.scheduler, names, changes.jobs)
                kept = [n for n in self.not_scheduled if n.name not in names]
                self.not_scheduled = kept + list(found.not_scheduled)
            self._catalog_version = version
            self.moves.moved(None)

    def wait_idle(self, timeout: float = 30.0) -> list[RunResult]:
        """Wait for the runs under way to finish, take them back, and return them."""
        deadline = time.monotonic() + timeout
        for worker in list(self._workers.values()):
            worker.join(timeout=max(0.0, deadline - time.monotonic()))
        return self.collect()

    def definitions(self) -> list[JobDefinition]:
        """Return the catalog's user jobs by name, read again only when the catalog moved."""
        by_name, names = self.definitions_in_order()
        return [by_name[name] for name in names]

    def definitions_by_name(self) -> dict[str, JobDefinition]:
        """Return the catalog's user jobs by name, in no order (do not change it)."""
        return self.definitions_in_order()[0]

    def definitions_in_order(self) -> tuple[dict[str, JobDefinition], list[str]]:
        """Return the catalog's user jobs by name and their names in order, one snapshot
        (do not change them; ``definitions.py`` keeps them)."""
        return self._catalog_jobs.in_order()

    # -- on demand ----------------------------------------------------------------------------

    def run_now(self, name: str, *, timeout: float | None = None) -> RunResult:
        """Run a job now on a worker and wait for it; ``Busy`` while it or its group runs."""
        with self.lock:
            self.sync()
            for skipped in self.not_scheduled:
                if skipped.name == name:
                    raise Conflict(f"job {name} is not scheduled here: {skipped.reason}")
            now = self.clock.now_us()
            run = self.scheduler.start_now(name, now)
            try:  # Busy while it or its group runs in another process
                run_id = self.store.runs.claim(run, Trigger.MANUAL, busy_ms=CHANGE_BUSY_MS)
            except BaseException:
                self.scheduler.forgo(run, now, reason=None)
                raise
            assert run_id is not None  # a run by hand has no unique key
            self._claims[run.token] = run_id
            waiter = _Waiter()
            self._waiters[run.token] = waiter
            self._spawn(run)
        self._wake.set()
        if not waiter.done.wait(timeout):
            raise TimeoutError(f"job {name} did not finish within {timeout} s")
        assert waiter.result is not None
        return waiter.result

    def runs_here(self) -> dict[int, JobRun]:
        """This host's runs under way, by their row in the store's job_runs."""
        with self.lock:
            by_token = {run.token: run for run in self.scheduler.running()}
            return {i: by_token[t] for t, i in self._claims.items() if t in by_token}

    # -- inside -------------------------------------------------------------------------------

    def _claim(self, runs: list[JobRun]) -> list[tuple[SkipReason, str] | None]:
        """Claim scheduled runs in the store; for each, why not, or None when it is ours."""
        try:
            answers = self.store.runs.claim_all(
                runs, Trigger.SCHEDULE, busy_ms=CHANGE_BUSY_MS, leading=self._lease is not None
            )
        except DgxmmError as error:  # nothing runs without its record
            log.warning("dgxmm host: could not claim %s: %s", counted(len(runs), "run"), error)
            if self._lease is not None and not self.store.presence.holds_lease():
                self._lease.stand_down("its claims were refused")  # deposed while it slept
            return [(SkipReason.CLAIMED, f"could not claim it: {error}")] * len(runs)
        refusals: list[tuple[SkipReason, str] | None] = []
        for run, answer in zip(runs, answers, strict=True):
            if isinstance(answer, Busy):  # it, or a job of its group, runs in another process
                refusals.append((SkipReason.GROUP_BUSY, str(answer)))
            elif answer is None:
                refusals.append((SkipReason.CLAIMED, "another instance claimed it"))
            else:
                self._claims[run.token] = answer
                refusals.append(None)
        return refusals

    def _record(self, result: RunResult) -> None:
        """Write how a run ended into its row (the first word on a run stands)."""
        run_id = self._claims.pop(result.token, None)
        if run_id is None:
            return
        try:
            self.store.runs.finish(run_id, result)
        except DgxmmError as error:  # the store is down: the row stays under way
            log.warning("dgxmm host: could not record the end of %s: %s", result.name, error)

    def _spawn(self, run: JobRun) -> None:
        worker = threading.Thread(
            target=self._work, args=(run,), name=f"dgxmm-job-{run.name}", daemon=True
        )
        try:
            worker.start()
        except RuntimeError as error:  # "can't start new thread": out of threads or memory
            # Give the run up with the reason, through the queue like any finished run, so
            # the scheduler frees its group and a waiter (POST /api/jobs/run) hears why.
            result = run.abandon(str(error))
            self._record(result)
            self._finished.put(result)
            self._wake.set()
            if not self.running:
                self.collect()
            return
        self._workers[run.token] = worker

    def _work(self, run: JobRun) -> None:
        try:
            result = run.run()
        except Conflict:
            return  # abandoned before it started
        self._record(result)
        self._finished.put(result)
        self._wake.set()  # the ticker takes it back now rather than at its next tick
        if not self.running:
            self.collect()  # no ticker (a library host, or stopping): take it back here

    def _finish(self, result: RunResult) -> None:
        """Give a run back to the scheduler, tell the telemetry, and wake who waits for it."""
        self.scheduler.finish(result)
        self._telemetry.run_finished(result.name, result.outcome, result.duration_us / SECOND_US)
        self._release(result)

    def _release(self, result: RunResult) -> None:
        waiter = self._waiters.pop(result.token, None)
        if waiter is not None:
            waiter.result = result
            waiter.done.set()

    # -- the lease ----------------------------------------------------------------------------

    def _take_over(self) -> None:
        """Become the ticking instance: record the lost ones' runs, plan, tick."""
        with self.lock:
            # The lost runs are recorded before this instance says it holds the lease, so
            # whoever sees "holder" in /api/instances also sees them abandoned.
            lost = self.store.runs.reap_lost()
            if lost:
                log.warning("dgxmm host: took over; runs of %s recorded abandoned", lost)
            assert self._lease is not None
            self._lease.hold()
            if not self._planned:
                # Planned from a little before now, so that a time the lost holder had no
                # chance to claim still runs here (one it claimed is refused by the key).
                self.tick(self.clock.now_us() - TAKEOVER_CATCHUP_US)
            self.tick()

    def _tick_forever(self) -> None:
        next_tick = time.monotonic() + self.tick_seconds
        next_try = time.monotonic()
        next_pulse = time.monotonic() + self.pulse_seconds
        while not self._stopping.is_set():
            if self.role is InstanceRole.HOLDER:
                wake_at = min(next_tick, next_pulse) if self._pulses else next_tick
            else:
                wake_at = min(next_tick, next_try)
            self._wake.wait(timeout=max(0.0, wake_at - time.monotonic()))
            self._wake.clear()
            if self._stopping.is_set():
                return
            try:
                if self._claims:  # runs of ours under way: did anyone ask to cancel one?
                    apply_cancels(self.store, self.runs_here())
                if self._lease is not None and time.monotonic() >= next_try:
                    next_try = time.monotonic() + LEASE_TRY_SECONDS
                    self._lease.step()
                if self._lease is not None and self.role is not InstanceRole.HOLDER:
                    # A standby never ticks, whatever woke it (its tick time between two
                    # tries, a run of its own that finished): it takes its Run now results
                    # back and says it is here.
                    self.collect()
                    if time.monotonic() >= next_tick:
                        next_tick = time.monotonic() + self.tick_seconds
                        self.store.presence.beat()
                    continue
                if time.monotonic() >= next_pulse:
                    next_pulse = max(next_pulse + self.pulse_seconds, time.monotonic())
                    self._pulse()
                if time.monotonic() >= next_tick:
                    next_tick = max(next_tick + self.tick_seconds, time.monotonic())
                    try:
                        self.tick()
                    finally:
                        # The beat says the ticker is alive, even when a tick failed: the
                        # standbys depose a stuck holder, not one whose job list is wrong.
                        if self._lease is not None and self.role is InstanceRole.HOLDER:
                            self.store.presence.beat()
                    if self._lease is not None:
                        self.store.runs.reap_lost()
                else:
                    self.collect()
                    with self.lock:  # a time waited for a run, of its job or its group: now
                        if self.scheduler.has_released():
                            self.tick()
            except Busy as error:  # another write held the lock past its wait: not a crash
                log.warning("dgxmm host: a tick waited too long for the database (%s); "
                            "ticking on, it is tried again at the next tick", error)  # fmt: skip
            except Exception:  # the ticker must outlive any one bad step
                log.exception("dgxmm host: a tick failed; ticking on")

    def _pulse(self) -> None:
        now = self.clock.now_us()
        for pulse in self._pulses:
            try:
                pulse(now)
            except Exception:  # one failing pulse must not stop the others, or the ticks
                log.exception("dgxmm host: a pulse failed; pulsing on")
