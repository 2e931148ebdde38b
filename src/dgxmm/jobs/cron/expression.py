"""Five-field cron expressions, read on the wall clock of an IANA zone.

``CronSchedule.parse("*/15 9-17 * * mon-fri")`` checks the text once and keeps, per field,
lookup tables of "the next allowed value at or after v", so that finding the next fire time
is a handful of table lookups and integer steps rather than a walk through datetimes.
A nickname (``@daily``, ``nicknames.py``) is read as the five fields it stands for.

The day fields follow Vixie cron: when both day-of-month and day-of-week are restricted
(neither starts with ``*``) a day matches when *either* matches; otherwise both must. So
``0 0 1-7 * 1`` fires on the first seven days of the month *and* on every Monday.

Daylight saving time follows the one rule of ``zones.py``: a wall time in a gap fires at the
first instant after the gap (several gap times fire once), a repeated wall time fires once,
at its first occurrence.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from zoneinfo import ZoneInfo

from dgxmm.errors import CronError
from dgxmm.jobs.cron.calendar import civil_from_days, days_from_civil, days_in_month, weekday_of
from dgxmm.jobs.cron.nicknames import expand_nickname
from dgxmm.jobs.cron.zones import zone_clock
from dgxmm.time_units import SECOND_US

__all__ = ["CronSchedule", "FireTime"]

_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


class _Field(Enum):
    MINUTE = ("minute", 0, 59, ())
    HOUR = ("hour", 0, 23, ())
    DAY = ("day-of-month", 1, 31, ())
    MONTH = ("month", 1, 12, _MONTH_NAMES)
    WEEKDAY = ("day-of-week", 0, 7, _DAY_NAMES)

    def __init__(self, label: str, low: int, high: int, names: tuple[str, ...]) -> None:
        self.label = label
        self.low = low
        self.high = high
        self.names = names


class _DayRule(Enum):
    """How the two day fields combine, decided once at parse time."""

    ANY = "any day"
    DAY_OF_MONTH = "day-of-month only"
    WEEKDAY = "day-of-week only"
    EITHER = "either matches (both restricted)"
    BOTH = "both must match"


@dataclass(frozen=True, slots=True, kw_only=True)
class FireTime:
    """One previewed fire time: the instant, its local reading, and whether a gap moved it."""

    at_us: int
    local: datetime
    moved: bool


_tables: dict[tuple[frozenset[int], int], tuple[int, ...]] = {}
_sets: dict[frozenset[int], frozenset[int]] = {}


def _shared(values: frozenset[int]) -> frozenset[int]:
    """Return one shared copy of each distinct set of field values (schedules repeat them)."""
    return _sets.setdefault(values, values)


def _next_table(values: frozenset[int], high: int) -> tuple[int, ...]:
    """For every v in 0..high+1, the smallest allowed value >= v, or -1 when there is none."""
    known = _tables.get((values, high))
    if known is not None:
        return known
    table = []
    following = -1
    for v in range(high + 1, -1, -1):
        if v in values:
            following = v
        table.append(following)
    # Shared between schedules: a field has few distinct value sets in practice, and each
    # table is a tuple of up to 61 ints. Bounded, so odd inputs cannot grow it for ever.
    result = tuple(reversed(table))
    if len(_tables) < 4096:
        _tables[(values, high)] = result
    return result


class CronSchedule:
    """A parsed 5-field cron expression; compare and hash by its normalized text."""

    __slots__ = (
        "_day_rule",
        "_days",
        "_description",
        "_hours",
        "_minutes",
        "_months",
        "_next_day",
        "_next_hour",
        "_next_minute",
        "_next_month",
        "_normalized",
        "_weekday_step",
        "_weekdays",
        "text",
    )

    def __init__(self, text: str) -> None:
        """Parse ``text``; raise ``CronError`` naming the field and the problem."""
        if not isinstance(text, str):
            raise CronError(f"a cron expression must be text, not {type(text).__name__}")
        self.text = text
        self._description: str | None = None
        parts = expand_nickname(text).split()
        _refuse_extensions(text, parts)
        if len(parts) != 5:
            raise CronError(
                f"expected 5 fields (minute hour day-of-month month day-of-week), "
                f"got {len(parts)} in {text!r}"
            )
        minutes, hours, days, months, weekdays = (
            _parse_field(part, field) for part, field in zip(parts, _Field, strict=True)
        )
        if 7 in weekdays:  # 0 and 7 are both Sunday
            weekdays = (weekdays - {7}) | {0}
        days_restricted = not parts[2].startswith("*")
        weekdays_restricted = not parts[4].startswith("*")
        if len(_sets) < 4096:
            minutes, hours, days = _shared(minutes), _shared(hours), _shared(days)
            months, weekdays = _shared(months), _shared(weekdays)
        self._minutes, self._hours, self._days = minutes, hours, days
        self._months, self._weekdays = months, weekdays
        all_days = len(days) == 31
        all_weekdays = len(weekdays) == 7
        if days_restricted and weekdays_restricted:
            self._day_rule = _DayRule.EITHER
        elif all_days and all_weekdays:
            self._day_rule = _DayRule.ANY
        elif all_weekdays:
            self._day_rule = _DayRule.DAY_OF_MONTH
        elif all_days:
            self._day_rule = _DayRule.WEEKDAY
        else:
            self._day_rule = _DayRule.BOTH
        if self._day_rule in (_DayRule.DAY_OF_MONTH, _DayRule.BOTH):
            _refuse_impossible_days(text, days, months)
        self._next_minute = _next_table(minutes, 59)
        self._next_hour = _next_table(hours, 23)
        self._next_day = _next_table(days, 31)
        self._next_month = _next_table(months, 12)
        # _weekday_step[w]: days from weekday w to the next allowed weekday (0 when allowed).
        self._weekday_step = tuple(
            next(step for step in range(7) if (w + step) % 7 in weekdays) for w in range(7)
        )
        day_text = _render(days, _Field.DAY, star=not days_restricted)
        weekday_text = _render(weekdays, _Field.WEEKDAY, star=not weekdays_restricted)
        # A star-led list such as "*/10,5" has no canonical star form; keep it as written so
        # the day fields keep their meaning (whether a field starts with "*" decides the rule).
        if days_restricted == day_text.startswith("*"):
            day_text = parts[2].lower()
        if weekdays_restricted == weekday_text.startswith("*"):
            weekday_text = parts[4].lower()
        self._normalized = " ".join(
            (
                _render(minutes, _Field.MINUTE, star=True),
                _render(hours, _Field.HOUR, star=True),
                day_text,
                _render(months, _Field.MONTH, star=True),
                weekday_text,
            )
        )

    @classmethod
    def parse(cls, text: str) -> CronSchedule:
        """Parse a 5-field cron expression (the same text twice gives the same object)."""
        raw: object = text  # callers without types may pass anything
        if not isinstance(raw, str):
            return cls(text)  # raises CronError naming the type
        return _parse_cached(raw)

    def __str__(self) -> str:
        return self._normalized

    def __repr__(self) -> str:
        return f"CronSchedule({self._normalized!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CronSchedule) and other._normalized == self._normalized

    def __hash__(self) -> int:
        return hash(self._normalized)

    def __reduce__(self) -> tuple[type[CronSchedule], tuple[str]]:
        return (CronSchedule, (self.text,))

    # -- matching -----------------------------------------------------------------------------

    def next_after(self, after_us: int, zone: ZoneInfo | str) -> int:
        """Return the first fire instant strictly after ``after_us`` (microseconds, UTC)."""
        return self._next(after_us, zone)[0]

    def fire_times(self, after_us: int, zone: ZoneInfo | str, n: int) -> list[FireTime]:
        """Preview the next ``n`` fire times after ``after_us``, marking those a gap moved."""
        info = zone if isinstance(zone, ZoneInfo) else zone_clock(zone).zone
        times = []
        at = after_us
        for _ in range(n):
            at, moved = self._next(at, info)
            local = datetime.fromtimestamp(at // SECOND_US, info)
            times.append(FireTime(at_us=at, local=local, moved=moved))
        return times

    def matches_wall(self, year: int, month: int, day: int, hour: int, minute: int) -> bool:
        """Tell whether the expression names this local date and time."""
        if minute not in self._minutes or hour not in self._hours:
            return False
        if month not in self._months:
            return False
        weekday = weekday_of(days_from_civil(year, month, day))
        return self._day_matches(day, weekday)

    def _day_matches(self, day: int, weekday: int) -> bool:
        rule = self._day_rule
        if rule is _DayRule.EITHER:
            return day in self._days or weekday in self._weekdays
        return day in self._days and weekday in self._weekdays

    def _next(self, after_us: int, zone: ZoneInfo | str) -> tuple[int, bool]:
        clock = zone_clock(zone)
        after_s = after_us // SECOND_US
        wall = clock.wall(after_s)
        # Every wall time up to the one shown at after_s maps to an instant <= after_s, so
        # the answer is the first matching wall minute after it whose instant is later still.
        w = wall - wall % 60 + 60
        while True:
            w = self._next_wall(w)
            t, moved = clock.instant(w)
            if t * SECOND_US > after_us:
                return t * SECOND_US, moved
            # Only in the second pass of a repeated hour: the first occurrence is behind us.
            w += 60

    def _next_wall(self, w: int) -> int:
        """Return the first matching wall minute at or after wall minute ``w``."""
        next_minute, next_hour = self._next_minute, self._next_hour
        days, seconds = divmod(w, 86400)
        hour, minute = seconds // 3600, seconds // 60 % 60
        # Fast path: a later minute or hour of the same day matches and the day itself does.
        m = next_minute[minute]
        if m >= 0 and hour in self._hours and self._day_ok(days):
            return days * 86400 + hour * 3600 + m * 60
        h = next_hour[hour + 1]
        if h >= 0 and self._day_ok(days):
            return days * 86400 + h * 3600 + next_minute[0] * 60
        days = self._next_day_after(days)
        return days * 86400 + next_hour[0] * 3600 + next_minute[0] * 60

    def _day_ok(self, days: int) -> bool:
        rule = self._day_rule
        if rule is _DayRule.ANY and len(self._months) == 12:
            return True
        _, month, day = civil_from_days(days)
        if month not in self._months:
            return False
        if rule is _DayRule.ANY:
            return True
        return self._day_matches(day, weekday_of(days))

    def _next_day_after(self, days: int) -> int:
        """Return the first matching day after day number ``days``."""
        year, month, day = civil_from_days(days + 1)
        next_month, next_day, rule = self._next_month, self._next_day, self._day_rule
        while True:
            m = next_month[month]
            if m < 0:  # no allowed month left this year
                year, month, day = year + 1, next_month[1], 1
                continue
            if m != month:
                month, day = m, 1
            last = days_in_month(year, month)
            first = days_from_civil(year, month, 1)
            found = self._first_day_from(first, day, last, rule, next_day)
            if found >= 0:
                return first + found - 1
            month, day = month + 1, 1
            if month > 12:
                year, month = year + 1, 1

    def _first_day_from(
        self, first: int, day: int, last: int, rule: _DayRule, next_day: tuple[int, ...]
    ) -> int:
        """Return the first matching day of the month in day..last, or -1."""
        if rule is _DayRule.ANY:
            return day
        weekday_step = self._weekday_step
        if rule is _DayRule.DAY_OF_MONTH:
            d = next_day[day]
            return d if 0 < d <= last else -1
        by_weekday = day + weekday_step[weekday_of(first + day - 1)]
        if rule is _DayRule.WEEKDAY:
            return by_weekday if by_weekday <= last else -1
        if rule is _DayRule.EITHER:
            d = next_day[day]
            candidates = [c for c in (d, by_weekday) if 0 < c <= last]
            return min(candidates) if candidates else -1
        d = next_day[day]  # BOTH: an allowed day-of-month that falls on an allowed weekday
        while 0 < d <= last:
            if weekday_of(first + d - 1) in self._weekdays:
                return d
            d = next_day[d + 1]
        return -1

    # -- reading ------------------------------------------------------------------------------

    def describe(self) -> str:
        """Say when the expression fires, in plain English."""
        if self._description is None:
            self._description = self._describe()
        return self._description

    def _describe(self) -> str:
        from dgxmm.jobs.cron.describe import describe

        return describe(
            minutes=self._minutes,
            hours=self._hours,
            days=self._days,
            months=self._months,
            weekdays=self._weekdays,
            rule=self._day_rule.name,
        )


@functools.lru_cache(maxsize=4096)
def _parse_cached(text: str) -> CronSchedule:
    # Schedules are immutable, so one parse serves every caller of the same text; a text
    # that does not parse raises each time (lru_cache keeps only results).
    return CronSchedule(text)


def _refuse_extensions(text: str, parts: list[str]) -> None:
    stripped = text.strip()
    if not stripped:
        raise CronError("the cron expression is empty; write 5 fields like '*/5 * * * *'")
    if len(parts) == 6:
        raise CronError(
            f"a seconds (or year) field is not supported: got 6 fields in {text!r}; "
            f"write the 5 fields minute hour day-of-month month day-of-week"
        )
    for part, field in zip(parts, _Field, strict=False):
        for symbol in ("L", "W", "#", "?"):
            lowered = part.lower()
            if symbol in part and not (symbol in "LW" and _names_contain(lowered, field)):
                raise CronError(
                    f"{field.label}: {symbol!r} in {part!r} is not supported "
                    f"(no L, W, # or ? extensions)",
                    field="schedule",
                )


def _names_contain(lowered: str, field: _Field) -> bool:
    """Tell whether every letter in the item belongs to a name (so 'jul' is not an 'L')."""
    letters = "".join(c if c.isalpha() else " " for c in lowered).split()
    return bool(field.names) and all(word in field.names for word in letters)


def _parse_field(part: str, field: _Field) -> frozenset[int]:
    values: set[int] = set()
    for item in part.split(","):
        if not item:
            raise CronError(f"{field.label}: empty item in {part!r}")
        values.update(_parse_item(item, field))
    return frozenset(values)


def _parse_item(item: str, field: _Field) -> range:
    body, slash, step_text = item.partition("/")
    step = 1
    if slash:
        if not _is_number(step_text):
            raise CronError(f"{field.label}: step {step_text!r} in {item!r} is not a number")
        step = int(step_text)
        if step == 0:
            raise CronError(f"{field.label}: step 0 in {item!r} must be at least 1")
    if body == "*":
        low, high = field.low, field.high
    elif "-" in body:
        first, _, last = body.partition("-")
        low, high = _value(first, field, item), _value(last, field, item)
        if low > high:
            raise CronError(f"{field.label}: range {body!r} is reversed (write the low end first)")
    else:
        low = _value(body, field, item)
        # "5/15" means 5-59/15; a lone value without a step is just itself.
        high = field.high if slash else low
    if step > field.high - field.low + 1 and slash:
        raise CronError(
            f"{field.label}: step {step} in {item!r} is larger than the field's range "
            f"{field.low}-{field.high}"
        )
    return range(low, high + 1, step)


def _is_number(text: str) -> bool:
    """Whether ``text`` is ASCII digits (``isdigit`` alone takes "³", which ``int`` refuses)."""
    return text.isascii() and text.isdigit()


def _value(text: str, field: _Field, item: str) -> int:
    if not text:
        raise CronError(f"{field.label}: missing number in {item!r}")
    if _is_number(text):
        value = int(text)
        if not field.low <= value <= field.high:
            raise CronError(f"{field.label}: {value} is out of range {field.low}-{field.high}")
        return value
    lowered = text.lower()
    if field.names and lowered in field.names:
        index = field.names.index(lowered)
        return index + 1 if field is _Field.MONTH else index
    if field.names:
        hint = f"{field.names[0]}-{field.names[-1]}"
        raise CronError(f"{field.label}: unknown name {text!r} in {item!r} (use {hint})")
    raise CronError(f"{field.label}: {text!r} in {item!r} is not a number")


def _refuse_impossible_days(text: str, days: frozenset[int], months: frozenset[int]) -> None:
    """Refuse a day-of-month that no allowed month has (Feb 30, Apr 31, ...)."""
    longest = {month: days_in_month(2000, month) for month in months}  # 2000: a leap year
    if any(day <= longest[month] for month in months for day in days):
        return
    names = ", ".join(_MONTH_NAMES[month - 1] for month in sorted(months))
    listed = ", ".join(str(day) for day in sorted(days))
    raise CronError(
        f"day-of-month: {text.strip()!r} can never fire: day {listed} never occurs in {names}"
    )


def _render(values: frozenset[int], field: _Field, *, star: bool) -> str:
    """Render a field's values in a canonical form that keeps its meaning."""
    low, high = field.low, field.high if field is not _Field.WEEKDAY else 6
    ordered = sorted(values)
    full = len(ordered) == high - low + 1
    if star:
        if full:
            return "*"
        for step in range(2, (high - low) // 2 + 2 if len(ordered) > 1 else 0):
            if ordered == list(range(low, high + 1, step)):
                return f"*/{step}"
    elif full:
        return f"{low}-{high}"
    pieces: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if j - i >= 2:
            pieces.append(f"{ordered[i]}-{ordered[j]}")
            i = j + 1
            continue
        step = ordered[i + 1] - ordered[i] if i + 1 < len(ordered) else 0
        k = i + 1
        while step > 1 and k + 1 < len(ordered) and ordered[k + 1] - ordered[k] == step:
            k += 1
        if step > 1 and k - i >= 3:
            pieces.append(f"{ordered[i]}-{ordered[k]}/{step}")
            i = k + 1
        else:
            pieces.append(str(ordered[i]))
            i += 1
    return ",".join(pieces)
