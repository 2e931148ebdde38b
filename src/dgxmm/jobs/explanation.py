"""Why a job's time ran or not, told from the records a host keeps.

``place`` says where an instant falls in a schedule: one of its times, one a DST gap moved
(the wall time does not exist that day: the time is right after the gap), the second pass of
a repeated hour (the job ran at the first), or none of its times (the next one is given).

``explain`` then says what happened at that time, from what is recorded: the runs of the job
and of its group (the store's ``job_runs``), the job's switch over time (the catalog's
journal), and the scheduler's own skip records where this process still holds them. The
scheduler's rules decide each case, in the order it applies them:

- a run whose scheduled time it is: it ran (or runs now), with its id and outcome;
- a run of the job under way at that time (started before it, ended at or after it): skipped,
  ``overlap`` (a job never overlaps itself);
- a run of the job that waited for its group from an earlier time and started at or after
  this one: skipped, ``group_busy`` (it ran once for the times that passed meanwhile);
- the job switched off at that time (``disabled``) or not defined yet (``not_defined``);
- otherwise no tick reached it within the lateness allowed: ``missed``; or, before the host
  ticked at all, ``not_ticking``.

A skip record of this very time (``claimed`` by another instance, or any other) is taken as
it is. A switch within one tick of a time may be told as it was at the time, where the
scheduler saw it at the tick. Pure: no I/O, and the caller passes ``now``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any
from zoneinfo import ZoneInfo

from dgxmm.clock import from_us, to_us
from dgxmm.errors import InvalidInput
from dgxmm.jobs.cron.expression import CronSchedule
from dgxmm.jobs.cron.zones import zone_clock
from dgxmm.jobs.job import Outcome, SkipReason
from dgxmm.jobs.stats.history import SkipRecord
from dgxmm.time_units import SECOND_US

__all__ = [
    "Cause",
    "Explanation",
    "Placement",
    "RunFact",
    "Switch",
    "Verdict",
    "explain",
    "place",
    "place_wall",
    "read_asked",
]


class Verdict(Enum):
    """What became of a time."""

    RAN = "ran"  # a run has it as its scheduled time, and has ended
    RUNNING = "running"  # ... and is under way
    SKIPPED = "skipped"  # it did not start a run (``Cause`` says why)
    UPCOMING = "upcoming"  # it has not come yet
    NOT_A_TIME = "not_a_time"  # the instant is none of the job's times


class Cause(Enum):
    """Why a time did not start a run: the scheduler's skip reasons, and two more."""

    OVERLAP = "overlap"
    MISSED = "missed"
    GROUP_BUSY = "group_busy"
    DISABLED = "disabled"
    CLAIMED = "claimed"
    NOT_TICKING = "not_ticking"  # before the host ticked at all
    NOT_DEFINED = "not_defined"  # the job did not exist then (or was dropped)


_CAUSE_OF = {reason: Cause(reason.value) for reason in SkipReason}


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFact:
    """A run as recorded: what ``explain`` reads of the store's ``job_runs``."""

    id: int | None
    job: str
    scheduled: bool  # started by its schedule (not by hand)
    scheduled_at: int
    started_at: int
    finished_at: int | None  # None while under way
    outcome: Outcome | None
    instance: str | None = None
    attempt: int = 1  # 2 and up: a retry of the run of ``scheduled_at``


@dataclass(frozen=True, slots=True, kw_only=True)
class Switch:
    """The job's switch from ``at_us`` on: on, off, or None where it was not defined."""

    at_us: int
    enabled: bool | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    """Where an instant falls in a schedule."""

    zone: ZoneInfo  # the job's: the one its schedule is read in
    asked_us: int
    wall: str  # the wall time asked, in the job's zone ("2026-03-08 02:30")
    time_us: int | None  # the job's time this is about; None when it is none of them
    moved: bool  # a DST gap moved that time: its wall time does not exist that day
    repeated: bool  # the instant asked is the second pass of a repeated wall time
    next_us: int  # the job's first time after the instant asked

    @property
    def is_time(self) -> bool:
        """Tell whether the instant asked is itself one of the job's times."""
        return self.time_us == self.asked_us


@dataclass(frozen=True, slots=True, kw_only=True)
class Explanation:
    """What became of one time, and why."""

    placement: Placement
    verdict: Verdict
    cause: Cause | None = None
    detail: str
    run: RunFact | None = None  # the run of that time, or the one that held it off

    def to_json(self) -> dict[str, Any]:
        """Return it as plain JSON values, instants in the job's zone (and in microseconds)."""
        p = self.placement
        show = _shower(p.zone)
        run = self.run
        return {
            "zone": p.zone.key,
            "asked": show(p.asked_us),
            "asked_us": p.asked_us,
            "wall": p.wall,
            "is_time": p.is_time,
            "time": None if p.time_us is None else show(p.time_us),
            "time_us": p.time_us,
            "moved": p.moved,
            "repeated": p.repeated,
            "next": show(p.next_us),
            "verdict": self.verdict.value,
            "cause": None if self.cause is None else self.cause.value,
            "detail": self.detail,
            "run": None
            if run is None
            else {
                "id": run.id,
                "job": run.job,
                "scheduled_at": show(run.scheduled_at),
                "started_at": show(run.started_at),
                "finished_at": None if run.finished_at is None else show(run.finished_at),
                "outcome": None if run.outcome is None else run.outcome.value,
                "instance": run.instance,
            },
        }


# The years an instant asked about may fall in: zone data and cron tables are read from
# 1970, and a year past 2199 is no time anyone schedules.
_FIRST_YEAR, _LAST_YEAR = 1971, 2199


def read_asked(text: object, field: str = "at") -> int | datetime:
    """Read an instant asked about: ISO 8601 with an offset (an instant) or without one (a
    wall time of the job's zone, returned naive); ``InvalidInput`` naming ``field``."""
    if not isinstance(text, str) or not 10 <= len(text) <= 40:
        raise InvalidInput(field, f"{str(text)[:40]!r} is not an ISO 8601 time")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(field, f"{text!r} is not an ISO 8601 time") from None
    if not _FIRST_YEAR <= moment.year <= _LAST_YEAR:
        raise InvalidInput(field, f"{text!r}: the year is outside {_FIRST_YEAR}-{_LAST_YEAR}")
    if moment.tzinfo is None:
        return moment
    return to_us(moment)


def place(schedule: CronSchedule, zone: ZoneInfo, at_us: int) -> Placement:
    """Say where instant ``at_us`` falls in ``schedule`` read in ``zone``."""
    local = from_us(at_us, zone)
    wall = local.strftime("%Y-%m-%d %H:%M")
    first = schedule.fire_times(at_us - 1, zone, 1)[0]
    if first.at_us == at_us:
        return Placement(
            zone=zone, asked_us=at_us, wall=wall, time_us=at_us, moved=first.moved, repeated=False,
            next_us=schedule.next_after(at_us, zone),
        )  # fmt: skip
    on_minute = local.second == 0 and local.microsecond == 0
    if on_minute and schedule.matches_wall(
        local.year, local.month, local.day, local.hour, local.minute
    ):
        # A wall time the schedule names that is not one of its times: the second pass of a
        # repeated hour. It ran (or was due) at the first occurrence.
        clock = zone_clock(zone)
        earlier, _ = clock.instant(clock.wall(at_us // SECOND_US))
        return Placement(
            zone=zone, asked_us=at_us, wall=wall, time_us=earlier * SECOND_US, moved=False,
            repeated=True,
            next_us=first.at_us,
        )  # fmt: skip
    return Placement(
        zone=zone, asked_us=at_us, wall=wall, time_us=None, moved=False, repeated=False,
        next_us=first.at_us,
    )  # fmt: skip


def place_wall(schedule: CronSchedule, zone: ZoneInfo, wall: datetime) -> Placement:
    """Say where a wall time of ``zone`` (naive) falls: a gap's wall time is read as moved."""
    since = wall.replace(microsecond=0) - datetime(1970, 1, 1)
    instant, moved = zone_clock(zone).instant(since.days * 86400 + since.seconds)
    found = place(schedule, zone, instant * SECOND_US + wall.microsecond)
    text = wall.strftime("%Y-%m-%d %H:%M")
    named = schedule.matches_wall(wall.year, wall.month, wall.day, wall.hour, wall.minute)
    if moved and named and wall.second == 0 and wall.microsecond == 0:
        # The wall time does not exist that day; the job's time is right after the gap.
        return Placement(
            zone=zone, asked_us=found.asked_us, wall=text, time_us=found.asked_us, moved=True,
            repeated=False, next_us=found.next_us,
        )  # fmt: skip
    return Placement(
        zone=zone, asked_us=found.asked_us, wall=text, time_us=found.time_us, moved=found.moved,
        repeated=found.repeated, next_us=found.next_us,
    )  # fmt: skip


def explain(
    placement: Placement,
    *,
    name: str,
    now_us: int,
    max_lateness_us: int,
    runs: Iterable[RunFact] = (),
    group_runs: Iterable[RunFact] = (),
    switches: Iterable[Switch] = (),
    skips: Iterable[SkipRecord] = (),
    ticking_since: int | None = None,
) -> Explanation:
    """Say what became of the time ``placement`` is about, from what is recorded.

    ``runs`` are the job's own (every trigger), ``group_runs`` those of the other jobs of its
    group, ``switches`` its switch over time (oldest first), ``skips`` the scheduler's skip
    records this process holds, ``ticking_since`` when this host first ticked.
    """
    t = placement.time_us
    show = _shower(placement.zone)
    if t is None:
        return Explanation(
            placement=placement,
            verdict=Verdict.NOT_A_TIME,
            detail=f"not one of its times; the next is {show(placement.next_us)}",
        )
    runs = list(runs)
    here = "it"
    if placement.moved:
        here = f"its time, moved by a DST gap to {show(t)} ({placement.wall} does not exist then),"
    elif placement.repeated:
        here = f"{placement.wall} comes twice that night: its time is the first, {show(t)}, and it"
    switches = list(switches)
    if t > now_us:
        off = bool(switches) and switches[-1].enabled is False
        note = "; the job is switched off now, so it is skipped unless switched on" if off else ""
        return Explanation(
            placement=placement, verdict=Verdict.UPCOMING, detail=f"{here} has not come yet{note}"
        )
    own = sorted(
        (r for r in runs if r.scheduled and r.scheduled_at == t),
        key=lambda r: (r.attempt, r.started_at),
    )
    if own:
        run = own[-1]
        waited = own[0].started_at - t
        where = f" on {run.instance}" if run.instance else ""
        note = ""
        if waited > max_lateness_us:
            group_runs = list(group_runs)
            before = _holder((r for r in runs if r.started_at < t and r not in own), t)
            holder = _holder(group_runs, t)
            if before is not None:  # buffer_one or cancel_other: it waited for the job's run
                note = (
                    f", after waiting {waited / SECOND_US:.0f} s for run {before.id} of it to"
                    " end (its overlap policy)"
                )
            elif holder is None and not group_runs:  # nothing held it: a gap caught up
                note = f", caught up {waited / SECOND_US:.0f} s late after a gap (its catch-up)"
            else:
                by = f": {holder.job}'s run {holder.id} ran then" if holder is not None else ""
                note = f", after waiting {waited / SECOND_US:.0f} s for its group{by}"
        if run.finished_at is None:
            return Explanation(
                placement=placement, verdict=Verdict.RUNNING, run=run,
                detail=f"{here} runs now as run {run.id}{where} since {show(run.started_at)}"
                f"{note}",
            )  # fmt: skip
        outcome = run.outcome.value if run.outcome is not None else "ended"
        if len(own) > 1:
            tries = ", ".join(
                f"attempt {r.attempt} (run {r.id}) "
                f"{r.outcome.value if r.outcome is not None else 'under way'}"
                for r in own
            )
            note += f"; it was retried: {tries}"
        return Explanation(
            placement=placement, verdict=Verdict.RAN, run=run,
            detail=f"{here} ran as run {run.id}{where} at {show(run.started_at)}: {outcome}{note}",
        )  # fmt: skip
    skips = [s for s in skips if s.name == name]
    for skip in skips:
        if skip.at_us == t:
            cause = _CAUSE_OF[skip.reason]
            more = f" ({skip.detail})" if skip.detail else ""
            return _skipped(placement, cause, f"{here} was skipped: {cause.value}{more}")
    for run in runs:
        end = run.finished_at if run.finished_at is not None else now_us
        if max(run.scheduled_at, run.started_at) < t <= end:
            return _skipped(
                placement, Cause.OVERLAP,
                f"{here} was skipped: run {run.id} (from {show(run.started_at)}"
                f"{'' if run.finished_at is None else ' to ' + show(run.finished_at)}) was under"
                " way, and a job never overlaps itself", run,
            )  # fmt: skip
    group_runs = list(group_runs)
    for run in runs:
        if run.scheduled and run.scheduled_at < t <= run.started_at:
            # Only a wait for its group starts a time later than the lateness allowed (a tick
            # that late skips it as missed), or a catch-up; a start within it was a late tick.
            delayed = run.started_at - run.scheduled_at > max_lateness_us
            if delayed and not group_runs and _holder(runs, run.scheduled_at) is None:
                return _skipped(
                    placement, Cause.MISSED,
                    f"{here} was skipped: missed in a gap, and coalesced: its time of"
                    f" {show(run.scheduled_at)} was caught up for it, as run {run.id} at"
                    f" {show(run.started_at)}", run,
                )  # fmt: skip
            if delayed:
                return _skipped(
                    placement, Cause.GROUP_BUSY,
                    f"{here} passed while its time of {show(run.scheduled_at)} waited for its"
                    f" group; it ran once for them, as run {run.id} at {show(run.started_at)}",
                    run,
                )  # fmt: skip
            return _skipped(
                placement, Cause.OVERLAP,
                f"{here} was skipped: the run of its time of {show(run.scheduled_at)} (run"
                f" {run.id}) started late, at {show(run.started_at)}, and a job never overlaps"
                " itself", run,
            )  # fmt: skip
    state: bool | None = True
    for switch in switches:
        if switch.at_us < t:
            state = switch.enabled
    if state is None:
        return _skipped(placement, Cause.NOT_DEFINED, f"{here} was not run: no such job then")
    if state is False:
        return _skipped(placement, Cause.DISABLED, f"{here} was skipped: switched off")
    if ticking_since is not None and t < ticking_since:
        return _skipped(
            placement, Cause.NOT_TICKING,
            f"{here} was not run: no run of it is recorded, and this host ticked first at"
            f" {show(ticking_since)}",
        )  # fmt: skip
    covering = [s for s in skips if s.at_us < t and s.reason is SkipReason.MISSED]
    late = f" ({covering[-1].detail}, from {show(covering[-1].at_us)})" if covering else ""
    return _skipped(
        placement, Cause.MISSED,
        f"{here} was skipped: missed, no tick reached it within {max_lateness_us / SECOND_US:g} s"
        f"{late}",
    )  # fmt: skip


def _skipped(
    placement: Placement, cause: Cause, detail: str, run: RunFact | None = None
) -> Explanation:
    return Explanation(
        placement=placement, verdict=Verdict.SKIPPED, cause=cause, detail=detail, run=run
    )


def _holder(group_runs: Iterable[RunFact], t: int) -> RunFact | None:
    """The run of another job of the group under way at ``t``."""
    for run in group_runs:
        if run.started_at <= t and (run.finished_at is None or t < run.finished_at):
            return run
    return None


def _shower(zone: ZoneInfo) -> Callable[[int], str]:
    """Instants as ISO 8601 in ``zone``."""

    def show(at_us: int) -> str:
        return from_us(at_us, zone).isoformat()

    return show
