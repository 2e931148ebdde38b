"""The schedule runner's rows in a replay: what each keeps between passes, and what is due.

``RunnerRows`` holds one deployment's enabled schedules as the product's rows keep them
(``last_run_day``, ``deferred_since``) and the runs they recorded (``SlotDecision``). It
answers what the runner's pass reads of them, with the product's functions:

- which minutes can find a slot due (``next_pass``): the replay visits those alone;
- which slots are due at a pass, in the runner's order (``due_at``: ``due_slot``, or
  ``due_early`` with a wake lead, sorted by ``slot_order``, the one that acts last);
- whether an instant lies inside a scheduled awake window (``awake_window``), and when the
  window shuts (``window_shuts``: the next scheduled sleep or stop).

What the pass then does to the deployment (the verdicts, the quiet check, the fit, the
server) is ``deployment.py``'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta

from dgxmm.decider.days import day_bit
from dgxmm.decider.idle import ScheduleSlots, awake_window
from dgxmm.decider.schedules.lead import MAX_LEAD_US, due_early
from dgxmm.decider.schedules.rows import ScheduleAction
from dgxmm.decider.schedules.runner import ResultKind
from dgxmm.decider.schedules.slots import (
    LATE_WINDOW_US,
    Slot,
    due_slot,
    local_today,
    parse_time,
    slot_on,
)
from dgxmm.decider.schedules.verdicts import slot_order
from dgxmm.jobs import resolve_zone
from dgxmm.lab.fleetfile import LabSchedule
from dgxmm.time_units import DAY_US, MINUTE_US

__all__ = ["RunnerRows", "ScheduleRow", "SlotDecision"]

_WEEK_DAYS = 8  # a weekly schedule's next slot lies within the next 8 local days


@dataclass(frozen=True, slots=True, kw_only=True)
class SlotDecision:
    """One slot the replayed runner recorded: when, which schedule, and how it ended."""

    at_us: int  # the pass's minute
    schedule: int  # the schedule's number (fleet-file order, from 1)
    action: ScheduleAction
    kind: ResultKind
    reason: str | None = None


@dataclass(slots=True)
class ScheduleRow:
    """What the product's schedule row keeps between passes."""

    number: int
    schedule: LabSchedule
    slots: ScheduleSlots
    last_run_day: str | None = None
    deferred_since: int | None = None


class RunnerRows:
    """One deployment's enabled schedules over a replay's span; see the module."""

    def __init__(
        self,
        schedules: tuple[tuple[int, LabSchedule], ...],
        *,
        start_us: int,
        end_us: int,
        leads: bool,
    ) -> None:
        self.rows = [
            ScheduleRow(number=n, schedule=s, slots=ScheduleSlots(
                action=s.action, days=s.days, time=parse_time(s.time),
                zone=resolve_zone(s.time_zone)))
            for n, s in schedules if s.enabled
        ]  # fmt: skip
        self.window_slots = [row.slots for row in self.rows]
        self.end_us = end_us
        self.decisions: list[SlotDecision] = []
        self.passes = self._candidate_passes(start_us, end_us, leads=leads)
        self.cursor = 0
        self.last_pass: int | None = None

    def _candidate_passes(self, start_us: int, end_us: int, *, leads: bool) -> list[int]:
        """Return the minutes at which some slot is within its 15 minutes (or its lead).

        At any other minute ``due_slot`` finds nothing unless a slot was deferred (then
        ``next_pass`` visits every minute), so those passes are skipped unasked: a replay of
        weeks asks at a few hundred minutes per schedule rather than at every one.
        """
        first = math.ceil(start_us / MINUTE_US) * MINUTE_US
        minutes: set[int] = set()
        for row in self.rows:
            slots = row.slots
            ahead = MAX_LEAD_US if leads and not slots.action.quiets else 0
            day = local_today(start_us - DAY_US, slots.zone)
            last = local_today(end_us + DAY_US, slots.zone)
            while day <= last:
                if slots.days & day_bit(day.weekday()):
                    at = slot_on(day, slots.time, slots.zone).at_us
                    minute = max(math.ceil((at - ahead) / MINUTE_US) * MINUTE_US, first)
                    while minute <= at + LATE_WINDOW_US and minute < end_us:
                        minutes.add(minute)
                        minute += MINUTE_US
                day += timedelta(days=1)
        return sorted(minutes)

    def next_pass(self) -> int | None:
        """Return the next minute at which a pass could find a slot due, or None."""
        passes = self.passes
        found = passes[self.cursor] if self.cursor < len(passes) else None
        if self.last_pass is not None and any(r.deferred_since is not None for r in self.rows):
            # A deferred slot stays due past its 15 minutes: every minute until recorded.
            every = self.last_pass + MINUTE_US
            found = every if found is None else min(found, every)
        return found

    def due_at(self, now: int, *, lead_us: int | None) -> list[tuple[ScheduleRow, Slot]]:
        """Take the pass at ``now``: return its due slots, the one that acts last last.

        ``lead_us``: how early a wake or start begins (None: no wake lead in force).
        """
        self.last_pass = now
        while self.cursor < len(self.passes) and self.passes[self.cursor] <= now:
            self.cursor += 1
        due: list[tuple[ScheduleRow, Slot]] = []
        for row in self.rows:
            slots = row.slots
            if slots.action.quiets or lead_us is None:
                slot = due_slot(
                    days=slots.days, time=slots.time, zone=slots.zone, now_us=now,
                    last_run_day=row.last_run_day, deferred_since=row.deferred_since,
                )  # fmt: skip
            else:
                slot = due_early(
                    days=slots.days, time=slots.time, zone=slots.zone, now_us=now,
                    last_run_day=row.last_run_day, lead_us=lead_us,
                )  # fmt: skip
            if slot is not None:
                due.append((row, slot))
        due.sort(key=lambda found: slot_order(found[0].number, found[1]))
        return due

    def record(
        self, now: int, row: ScheduleRow, slot: Slot, kind: ResultKind, reason: str | None
    ) -> None:
        """Keep a run that is not a deferral as the runner does: the day is done."""
        row.last_run_day, row.deferred_since = slot.day.isoformat(), None
        self.decisions.append(
            SlotDecision(at_us=now, schedule=row.number, action=row.schedule.action, kind=kind,
                         reason=reason)
        )  # fmt: skip

    def defer(self, now: int, row: ScheduleRow, since: int, reason: str) -> None:
        """Keep a deferral as the runner does: the slot stays due, since its first one."""
        row.deferred_since = since
        self.decisions.append(
            SlotDecision(at_us=now, schedule=row.number, action=row.schedule.action,
                         kind=ResultKind.DEFERRED, reason=reason)
        )  # fmt: skip

    def pause(self, actions: tuple[ScheduleAction, ...]) -> None:
        """Switch off the schedules of ``actions``, as the product pauses them after a failure.

        For the rest of the span: the product lifts a pause when a person switches a
        schedule on again, or when a sleep that timed out is found finished later, and a
        replay has neither. A paused schedule bounds the idle policy no more.
        """
        self.rows = [row for row in self.rows if row.schedule.action not in actions]
        self.window_slots = [row.slots for row in self.rows]

    def in_awake_window(self, now: int) -> bool:
        """Tell whether ``now`` is inside a scheduled awake window (``awake_window``)."""
        return awake_window(self.window_slots, now)

    def window_shuts(self, now: int) -> int:
        """Return the next scheduled sleep or stop after ``now`` (the span's end if none)."""
        found = self.end_us
        for row in self.rows:
            slots = row.slots
            if not slots.action.quiets:
                continue
            day = local_today(now, slots.zone)
            for _ in range(_WEEK_DAYS):
                if slots.days & day_bit(day.weekday()):
                    at = slot_on(day, slots.time, slots.zone).at_us
                    if at > now:
                        found = min(found, at)
                        break
                day += timedelta(days=1)
        return found
