"""The wake lead: how early a scheduled wake or start begins, so the model is up at its minute.

A deployment's ``wake_lead`` is ``off`` (the spec's behaviour: the action begins at the
slot), a number of seconds, or ``measured``: the p95 of the deployment's last 20 times to
ready at that level (its events record each), bounded to 15 minutes. Before any has been
measured a default per level stands in (``DEFAULT_LEAD_US``: vLLM's published wake times,
docs/savings.md). The slot keeps its planned minute for due-ness, lateness and once per day:
the lead only moves when the action begins (``due_early``).

The runner passes once a minute, so an action due ``lead`` before its slot begins at the
pass at or before that instant: the lead is rounded up to whole minutes of the runner's
pass (a 42 s lead begins at the minute before the slot). Where the issue is silent, that is
the choice: a pass that waited inside itself for the exact second would hold the runner's
worker for up to a minute for a gain of seconds of memory.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from zoneinfo import ZoneInfo

from dgxmm.decider.schedules.slots import Slot, due_slot
from dgxmm.fleet import (
    LEAD_OFF,
    MAX_LEAD_US,
    LeadKind,
    WakeLead,
    parse_wake_lead,
)
from dgxmm.time_units import MINUTE_US, SECOND_US

__all__ = [
    "DEFAULT_LEAD_US",
    "LEAD_OFF",
    "MAX_LEAD_US",
    "MEASURED_WAKES",
    "Lead",
    "LeadKind",
    "WakeLead",
    "due_early",
    "lead_for",
    "parse_wake_lead",
]

MEASURED_WAKES = 20  # the last this many times to ready make the measured lead
# Before any wake was measured: vLLM's published upper figures (docs/savings.md): a level-1
# wake takes up to 6 s, level 2 up to 2.6 s more, a cold start 30 to 100+ s.
DEFAULT_LEAD_US = {1: 6 * SECOND_US, 2: 9 * SECOND_US, 0: 120 * SECOND_US}  # 0: a start


@dataclass(frozen=True, slots=True, kw_only=True)
class Lead:
    """How early an action begins, and where the figure came from (shown on the page)."""

    us: int
    source: str  # "p95 of the last 20 wakes", "set: 30 s", ...

    @property
    def says(self) -> str:
        """The schedules page's words: 'begins 42 s early: p95 of the last 20 wakes'."""
        if not self.us:
            return f"begins at its minute ({self.source})"
        return f"begins {self.us / SECOND_US:.0f} s early: {self.source}"


def lead_for(setting: WakeLead, *, level: int, ready_times_us: Sequence[int]) -> Lead:
    """Return the lead of a wake at ``level`` (1, 2; 0 for a start).

    ``ready_times_us``: the deployment's times to ready at that level, oldest first; the
    last ``MEASURED_WAKES`` count.
    """
    if setting.kind is LeadKind.OFF:
        return Lead(us=0, source="wake lead off")
    if setting.kind is LeadKind.SECONDS:
        return Lead(us=round(setting.seconds * SECOND_US), source=f"set: {setting.seconds:g} s")
    what = "starts" if level == 0 else f"level-{level} wakes"
    recent = sorted(ready_times_us[-MEASURED_WAKES:])
    if not recent:
        found = DEFAULT_LEAD_US.get(level, DEFAULT_LEAD_US[1])
        return Lead(us=found, source=f"no {what} measured yet: the default for them")
    # Nearest rank: the smallest time at least 95 % of the measured ones are within.
    p95 = recent[max(0, math.ceil(0.95 * len(recent)) - 1)]
    bounded = min(p95, MAX_LEAD_US)
    cap = " (bounded to 15 minutes)" if p95 > MAX_LEAD_US else ""
    return Lead(us=bounded, source=f"p95 of the last {len(recent)} {what}{cap}")


def due_early(
    *,
    days: int,
    time: tuple[int, int],
    zone: ZoneInfo,
    now_us: int,
    last_run_day: str | None,
    lead_us: int,
    today: date | None = None,
) -> Slot | None:
    """Return the wake or start slot due at ``now_us`` when it begins ``lead_us`` early.

    Due as ``due_slot`` says, or within the lead before its instant (rounded up to the
    runner's minute). The slot returned keeps its planned instant and day, so lateness and
    once per day are the slot's own.
    """
    found = due_slot(
        days=days, time=time, zone=zone, now_us=now_us, last_run_day=last_run_day, today=today
    )
    if found is not None or lead_us <= 0:
        return found
    ahead = math.ceil(lead_us / MINUTE_US) * MINUTE_US
    coming = due_slot(
        days=days, time=time, zone=zone, now_us=now_us + ahead, last_run_day=last_run_day
    )
    if coming is None or coming.at_us <= now_us:
        return None  # not a slot still to come: due_slot above had its say on those
    return coming
