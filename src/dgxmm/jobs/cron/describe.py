"""Cron expressions in plain English: "every 15 minutes", "at 03:00, Monday to Friday"."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["describe"]

_WEEKDAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip


def describe(
    *,
    minutes: frozenset[int],
    hours: frozenset[int],
    days: frozenset[int],
    months: frozenset[int],
    weekdays: frozenset[int],
    rule: str,
) -> str:
    """Say when a schedule with these fields fires."""
    parts = [_time_part(sorted(minutes), sorted(hours))]
    day_part = _day_part(sorted(days), sorted(weekdays), rule)
    if day_part:
        parts.append(day_part)
    if len(months) < 12:
        parts.append("in " + _join_runs(sorted(months), lambda m: _MONTHS[m - 1]))
    return ", ".join(parts)


def _time_part(minutes: list[int], hours: list[int]) -> str:
    every_hour = len(hours) == 24
    during = "" if every_hour else " " + _during_hours(hours)
    if len(minutes) == 60:
        return "every minute" + during
    step = _step_of(minutes, 60)
    if step and minutes[0] == 0:
        return f"every {step} minutes" + during
    if len(minutes) * len(hours) <= 6:
        return "at " + _join([f"{h:02d}:{m:02d}" for h in hours for m in minutes])
    if len(minutes) == 1:
        past = f":{minutes[0]:02d}"
        hour_step = _step_of(hours, 24)
        if every_hour:
            return "every hour, on the hour" if minutes[0] == 0 else f"every hour at {past}"
        if hour_step and hours[0] == 0:
            return f"every {hour_step} hours at {past}"
        if _is_run(hours):
            return f"every hour at {past} from {hours[0]:02d}{past} to {hours[-1]:02d}{past}"
        return f"at {past}" + during
    return f"at minutes {_join_runs(minutes, str)}" + (" of every hour" if every_hour else during)


def _during_hours(hours: list[int]) -> str:
    if _is_run(hours):
        return f"from {hours[0]:02d}:00 to {hours[-1]:02d}:59"
    return "during hours " + _join_runs(hours, lambda h: f"{h:02d}")


def _day_part(days: list[int], weekdays: list[int], rule: str) -> str:
    day_text = (
        f"on day {_join_runs(days, str)} of the month"
        if len(days) == 1
        else f"on days {_join_runs(days, str)} of the month"
    )
    weekday_text = _weekdays(weekdays)
    if rule == "ANY":
        return ""
    if rule == "DAY_OF_MONTH":
        return day_text
    if rule == "WEEKDAY":
        return weekday_text
    if rule == "EITHER":
        return f"{day_text} or {_on(weekday_text)}"
    return f"{day_text}, if it is {weekday_text.removeprefix('on ')}"


def _weekdays(weekdays: list[int]) -> str:
    # Read the week from Monday, so that "1-5" is "Monday to Friday" and "6,0" a weekend.
    ordered = sorted(weekdays, key=lambda w: (w - 1) % 7)
    positions = [(w - 1) % 7 for w in ordered]
    if len(ordered) >= 3 and _is_run(positions):
        return f"{_WEEKDAYS[ordered[0]]} to {_WEEKDAYS[ordered[-1]]}"
    return "on " + _join([_WEEKDAYS[w] for w in ordered])


def _on(text: str) -> str:
    return text if text.startswith("on ") else f"on {text}"


def _step_of(values: list[int], size: int) -> int:
    """Return s when values are 0, s, 2s, ... filling the field, else 0."""
    if len(values) < 2:
        return 0
    step = values[1] - values[0]
    return step if values == list(range(values[0], size, step)) else 0


def _is_run(values: list[int]) -> bool:
    return values == list(range(values[0], values[0] + len(values)))


def _join_runs(values: list[int], name: object) -> str:
    """Join values, writing runs of three or more as 'a to b'."""
    assert callable(name)
    pieces: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        if j - i >= 2:
            pieces.append(f"{name(values[i])} to {name(values[j])}")
        else:
            pieces.extend(name(v) for v in values[i : j + 1])
        i = j + 1
    return _join(pieces)


def _join(items: Iterable[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
