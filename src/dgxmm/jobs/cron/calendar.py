"""Proleptic Gregorian calendar arithmetic on integer day numbers (day 0 is 1970-01-01).

These are Howard Hinnant's ``days_from_civil`` / ``civil_from_days``: a few integer
operations where ``datetime.date`` would build an object per step.
"""

from __future__ import annotations

__all__ = ["civil_from_days", "days_from_civil", "days_in_month", "is_leap", "weekday_of"]

_DAYS_IN_MONTH = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def is_leap(year: int) -> bool:
    """Tell whether ``year`` has a February 29."""
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year: int, month: int) -> int:
    """Return how many days ``month`` of ``year`` has."""
    if month == 2 and is_leap(year):
        return 29
    return _DAYS_IN_MONTH[month]


def days_from_civil(year: int, month: int, day: int) -> int:
    """Return the day number of a date."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """Return the (year, month, day) of a day number."""
    days += 719468
    era = days // 146097
    day_of_era = days - era * 146097
    year_of_era = (
        day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096
    ) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    mp = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return year_of_era + era * 400 + (month <= 2), month, day


def weekday_of(days: int) -> int:
    """Return the weekday of a day number as cron counts it: Sunday 0 ... Saturday 6."""
    return (days + 4) % 7  # day 0, 1970-01-01, was a Thursday
