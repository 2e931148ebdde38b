"""Idle windows in a traffic profile, and the candidates for a proposal they make (pure).

An hour of the week is *idle enough* when it was observed in at least one week and idle in
at least 90 % of the weeks it was observed in. A *window* is a run of consecutive such hours,
wrapping from Sunday to Monday, at least 2 hours long; it sleeps at its first hour and wakes
15 minutes before its first active hour. A profile idle in every hour has no first active
hour and gives no window (there is nothing to wake for).

Windows shorter than 4 hours, or seen in one week only (some hour of it observed in fewer
than two weeks), are skipped. The rest are grouped: windows with the same start time and
length on several days make one candidate with a sleep schedule and a wake schedule, each
with its days (the wake's days are the days the windows end).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from dgxmm.decider.days import DAY_NAMES, describe_days, mask_of
from dgxmm.decider.profiles import WINDOW_DAYS, HourProfile
from dgxmm.decider.traffic import WEEK_HOURS

__all__ = [
    "FEATURES",
    "IDLE_SHARE_PERCENT",
    "MIN_PROPOSAL_HOURS",
    "MIN_WINDOW_HOURS",
    "RULES_PRIORITY_BELOW",
    "STRONG_WEEKS",
    "WAKE_EARLY_MINUTES",
    "Candidate",
    "DeploymentFacts",
    "Skip",
    "Window",
    "idle_windows",
    "is_idle_hour",
    "is_strong",
    "make_candidates",
    "skip_reason",
]

IDLE_SHARE_PERCENT = 90
MIN_WINDOW_HOURS = 2
MIN_PROPOSAL_HOURS = 4
MIN_WEEKS = 2  # a window whose hours were seen in fewer weeks is "seen in one week only"
STRONG_WEEKS = 3
RULES_PRIORITY_BELOW = 90
WAKE_EARLY_MINUTES = 15
WEEK_MINUTES = WEEK_HOURS * 60

# What the feedback model learns from, in this order; stored with each proposal.
FEATURES = (
    "hours",
    "days",
    "sleep_hour",
    "crosses_midnight",
    "weekend_days",
    "weeks_observed",
    "weeks_idle",
    "idle_share",
    "requests_30d",
    "rpm_p95_before",
    "rpm_p95_after",
    "gpu_memory_gib_hours",
    "priority",
)


class Skip(StrEnum):
    """Why a window is not a candidate."""

    SHORT = "shorter than 4 h"
    ONE_WEEK = "seen in one week only"


@dataclass(frozen=True, slots=True, kw_only=True)
class DeploymentFacts:
    """What a proposal needs to know of its deployment."""

    id: int
    name: str
    priority: int
    time_zone: str
    gpus: int
    memory_gib_awake: float  # per GPU
    memory_gib_asleep: float  # per GPU
    # Its scheduled wakes begin at their minute: a proposal proposes the measured wake lead
    # too, so the model is up when the hour it wakes for begins (issue 25).
    wake_lead_off: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class Window:
    """A run of idle hours of the week."""

    start: int  # the hour of the week of its first idle hour (0: Monday 00:00)
    hours: int
    weeks_observed: int  # the fewest weeks in which any of its hours was observed
    weeks_idle: int  # the fewest weeks in which any of its hours was idle
    idle_every_week: bool  # each of its hours idle in every week it was observed in

    @property
    def hours_of_week(self) -> tuple[int, ...]:
        """Its hours of the week, in order (wrapping after Sunday 23:00)."""
        return tuple((self.start + offset) % WEEK_HOURS for offset in range(self.hours))

    @property
    def first_active_hour(self) -> int:
        """The hour of the week it ends at."""
        return (self.start + self.hours) % WEEK_HOURS

    @property
    def sleep_minute(self) -> int:
        """The minute of the week it sleeps at (its start)."""
        return self.start * 60

    @property
    def wake_minute(self) -> int:
        """The minute of the week it wakes at: 15 minutes before its first active hour."""
        return ((self.start + self.hours) * 60 - WAKE_EARLY_MINUTES) % WEEK_MINUTES

    def to_json(self) -> dict[str, Any]:
        """Return the window as JSON values."""
        return {
            "start": _minute_text(self.sleep_minute),
            "first_active": _minute_text(self.first_active_hour * 60),
            "wake": _minute_text(self.wake_minute),
            "hours": self.hours,
            "hours_of_week": list(self.hours_of_week),
            "weeks_observed": self.weeks_observed,
            "weeks_idle": self.weeks_idle,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """Windows with the same times on one or more days: one sleep and one wake schedule."""

    deployment: DeploymentFacts
    windows: tuple[Window, ...]
    sleep_days: int
    sleep_time: str
    wake_days: int
    wake_time: str
    features: dict[str, float]
    evidence: dict[str, Any]

    @property
    def key(self) -> tuple[int, str, int, str, str]:
        """What makes two proposals the same: days, times and zone."""
        return (
            self.sleep_days,
            self.sleep_time,
            self.wake_days,
            self.wake_time,
            self.deployment.time_zone,
        )

    @property
    def description(self) -> str:
        """Say it in words: 'sleep Monday to Friday at 22:00, wake Tuesday to Saturday at 06:45'."""
        return (
            f"sleep {describe_days(self.sleep_days)} at {self.sleep_time}, "
            f"wake {describe_days(self.wake_days)} at {self.wake_time}"
        )


def is_idle_hour(hour: HourProfile) -> bool:
    """Tell whether an hour was observed and idle in at least 90 % of its observed weeks."""
    return (
        hour.observed_weeks > 0
        and hour.idle_weeks * 100 >= IDLE_SHARE_PERCENT * hour.observed_weeks
    )


def idle_windows(hours: Sequence[HourProfile]) -> list[Window]:
    """Return the windows (runs of at least 2 idle hours) of a 168-hour profile, by start."""
    if len(hours) != WEEK_HOURS:
        return []
    idle = [is_idle_hour(hour) for hour in hours]
    if all(idle) or not any(idle):
        return []
    # Start after an active hour, so that no run is cut in two by the end of the week.
    origin = idle.index(False)
    windows = []
    run: list[int] = []
    for step in range(1, WEEK_HOURS + 1):
        index = (origin + step) % WEEK_HOURS
        if idle[index]:
            run.append(index)
            continue
        if len(run) >= MIN_WINDOW_HOURS:
            windows.append(_window(run, hours))
        run = []
    return sorted(windows, key=lambda window: window.start)


def skip_reason(window: Window) -> Skip | None:
    """Say why a window is skipped, or None for a candidate."""
    if window.hours < MIN_PROPOSAL_HOURS:
        return Skip.SHORT
    if window.weeks_observed < MIN_WEEKS:
        return Skip.ONE_WEEK
    return None


def is_strong(window: Window) -> bool:
    """Tell whether the rules alone may propose it: idle in each of at least 3 weeks, >= 4 h."""
    return (
        window.idle_every_week
        and window.weeks_observed >= STRONG_WEEKS
        and window.hours >= MIN_PROPOSAL_HOURS
    )


def make_candidates(
    windows: Sequence[Window],
    *,
    deployment: DeploymentFacts,
    hours: Sequence[HourProfile],
    requests_by_hour: Sequence[int],
) -> list[Candidate]:
    """Group windows with the same start time and length into candidates, earliest first."""
    groups: dict[tuple[int, int], list[Window]] = {}
    for window in windows:
        groups.setdefault((window.start % 24, window.hours), []).append(window)
    candidates = [
        _candidate(tuple(group), deployment, hours, requests_by_hour) for group in groups.values()
    ]
    return sorted(candidates, key=lambda c: (c.windows[0].start % 24, c.windows[0].hours))


def _window(run: list[int], hours: Sequence[HourProfile]) -> Window:
    members = [hours[index] for index in run]
    return Window(
        start=run[0],
        hours=len(run),
        weeks_observed=min(hour.observed_weeks for hour in members),
        weeks_idle=min(hour.idle_weeks for hour in members),
        idle_every_week=all(hour.idle_weeks == hour.observed_weeks for hour in members),
    )


def _candidate(
    windows: tuple[Window, ...],
    deployment: DeploymentFacts,
    hours: Sequence[HourProfile],
    requests_by_hour: Sequence[int],
) -> Candidate:
    first = windows[0]
    sleep_days = mask_of(window.start // 24 for window in windows)
    wake_days = mask_of(window.wake_minute // 1440 for window in windows)
    sleep_time = _clock_text(first.sleep_minute % 1440)
    wake_time = _clock_text(first.wake_minute % 1440)
    requests = [sum(requests_by_hour[h] for h in window.hours_of_week) for window in windows]
    weeks_observed = min(window.weeks_observed for window in windows)
    weeks_idle = min(window.weeks_idle for window in windows)
    asleep_hours = sum(window.hours - WAKE_EARLY_MINUTES / 60 for window in windows)
    freed_gib = max(0.0, deployment.memory_gib_awake - deployment.memory_gib_asleep)
    gib_hours = freed_gib * deployment.gpus * asleep_hours
    before = max(hours[(window.start - 1) % WEEK_HOURS].rpm_p95 for window in windows)
    after = max(hours[window.first_active_hour].rpm_p95 for window in windows)
    features = {
        "hours": float(first.hours),
        "days": float(len(windows)),
        "sleep_hour": float(first.start % 24),
        "crosses_midnight": float(first.start % 24 + first.hours > 24),
        "weekend_days": float(sum(1 for window in windows if window.start // 24 >= 5)),
        "weeks_observed": float(weeks_observed),
        "weeks_idle": float(weeks_idle),
        "idle_share": weeks_idle / weeks_observed if weeks_observed else 0.0,
        "requests_30d": float(sum(requests)),
        "rpm_p95_before": before,
        "rpm_p95_after": after,
        "gpu_memory_gib_hours": gib_hours,
        "priority": float(deployment.priority),
    }
    evidence = {
        "sleep": {"days": sleep_days, "days_text": describe_days(sleep_days), "time": sleep_time},
        "wake": {"days": wake_days, "days_text": describe_days(wake_days), "time": wake_time},
        "time_zone": deployment.time_zone,
        "windows": [
            {**window.to_json(), "requests_30d": count}
            for window, count in zip(windows, requests, strict=True)
        ],
        "hours": first.hours,
        "weeks_observed": weeks_observed,
        "weeks_idle": weeks_idle,
        "requests_30d": sum(requests),
        "window_days": WINDOW_DAYS,
        "asleep_hours_per_week": asleep_hours,
        "gpu_memory_gib_hours_per_week": gib_hours,
    }
    return Candidate(
        deployment=deployment,
        windows=windows,
        sleep_days=sleep_days,
        sleep_time=sleep_time,
        wake_days=wake_days,
        wake_time=wake_time,
        features=features,
        evidence=evidence,
    )


def _clock_text(minute_of_day: int) -> str:
    return f"{minute_of_day // 60:02d}:{minute_of_day % 60:02d}"


def _minute_text(minute_of_week: int) -> str:
    day, minute = divmod(minute_of_week, 1440)
    return f"{DAY_NAMES[day][:3]} {_clock_text(minute)}"
