"""Days of the week as a bitmask: Monday 1, Tuesday 2, Wednesday 4, ... Sunday 64.

``datetime.weekday()`` numbers Monday 0 ... Sunday 6, so a day's bit is ``1 << weekday``.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["ALL_DAYS", "DAY_NAMES", "day_bit", "days_in", "describe_days", "mask_of", "shift_days"]

DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
ALL_DAYS = 127


def day_bit(weekday: int) -> int:
    """Return the bit of a weekday (Monday 0 ... Sunday 6)."""
    if not 0 <= weekday <= 6:
        raise ValueError(f"weekday {weekday} is not 0 (Monday) to 6 (Sunday)")
    return 1 << weekday


def mask_of(weekdays: Iterable[int]) -> int:
    """Return the mask of some weekdays (Monday 0 ... Sunday 6)."""
    mask = 0
    for weekday in weekdays:
        mask |= day_bit(weekday)
    return mask


def days_in(mask: int) -> list[int]:
    """Return the weekdays (Monday 0 ... Sunday 6) a mask holds."""
    return [weekday for weekday in range(7) if mask & (1 << weekday)]


def shift_days(mask: int, by: int = 1) -> int:
    """Move every day of a mask ``by`` days later, Sunday wrapping to Monday."""
    return mask_of((weekday + by) % 7 for weekday in days_in(mask))


def describe_days(mask: int) -> str:
    """Say which days a mask holds: 'every day', 'Monday to Friday', 'Saturday and Sunday'."""
    days = days_in(mask)
    if len(days) == 7:
        return "every day"
    if not days:
        return "no day"
    if len(days) >= 3 and days == list(range(days[0], days[-1] + 1)):
        return f"{DAY_NAMES[days[0]]} to {DAY_NAMES[days[-1]]}"
    names = [DAY_NAMES[day] for day in days]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
