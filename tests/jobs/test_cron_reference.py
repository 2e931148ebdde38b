"""`next_after` held against a brute-force reference written here, slow and obvious.

The reference parses the subset of cron it generates with a tiny parser of its own, walks
local wall-clock minutes one at a time (naive datetimes read in the zone through `zoneinfo`),
and maps each matching wall time to an instant by the rule of the spec:

- a wall time that does not exist (the clocks jumped over it) fires at the first instant
  after the gap, so several gap times land on one instant and fire once;
- a wall time that happens twice fires once, at its first occurrence (fold=0);
- the answer is the first such instant strictly after the instant asked about, also when
  that instant lies in the second pass of a repeated hour.

It shares no code with `dgxmm.jobs`: the only thing it trusts is `zoneinfo`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, assume, event, example, given, settings
from hypothesis import strategies as st
from support import at

from dgxmm.errors import CronError
from dgxmm.jobs import CronSchedule

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
SECOND = timedelta(seconds=1)
US = 1_000_000

ZONES = (
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "Pacific/Apia",
    "America/Santiago",
    "Europe/Dublin",
    "Asia/Tehran",
    "America/St_Johns",
    "Pacific/Chatham",
    "Antarctica/Troll",
    "Africa/Casablanca",
    "UTC",
    "Asia/Kolkata",
)

# Instants are drawn from these years; the transitions near which most of them lie are found
# in the same years.
FIRST_YEAR, LAST_YEAR = 1975, 2040
# The rarest expression generated (a leap day on one weekday, with the days ANDed) fires
# at least once in 28 years; a walk longer than this means the generator or the reference
# is wrong, not that the expression is rare.
MAX_WALK_DAYS = 40 * 366


# -- the reference parser ---------------------------------------------------------------------

MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


@dataclass(frozen=True)
class RefField:
    low: int
    high: int
    names: tuple[str, ...] = ()
    first_name_value: int = 0


# Day-of-week runs 0-7 as in Vixie cron: 0 and 7 are both Sunday, so `5-7` is Fri-Sun and
# `3/2` is Wed, Fri, Sun.
MINUTE = RefField(0, 59)
HOUR = RefField(0, 23)
DAY = RefField(1, 31)
MONTH = RefField(1, 12, MONTH_NAMES, 1)
WEEKDAY = RefField(0, 7, DAY_NAMES, 0)


def ref_value(token: str, field: RefField) -> int:
    if token.lower() in field.names:
        return field.names.index(token.lower()) + field.first_name_value
    return int(token)


def ref_values(text: str, field: RefField) -> frozenset[int]:
    """Expand one field: `*`, `n`, `a-b`, any of them `/step`, `n/step` (= n-high/step), lists."""
    values: set[int] = set()
    for item in text.split(","):
        base, slash, step_text = item.partition("/")
        step = int(step_text) if slash else 1
        if base == "*":
            low, high = field.low, field.high
        elif "-" in base:
            first, last = base.split("-")
            low, high = ref_value(first, field), ref_value(last, field)
        else:
            low = ref_value(base, field)
            high = field.high if slash else low
        values.update(range(low, high + 1, step))
    return frozenset(values)


@dataclass(frozen=True)
class RefCron:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday; 7 folded onto 0
    either_day: bool

    @classmethod
    def parse(cls, text: str) -> RefCron:
        minute, hour, day, month, weekday = text.split()
        return cls(
            minutes=ref_values(minute, MINUTE),
            hours=ref_values(hour, HOUR),
            days=ref_values(day, DAY),
            months=ref_values(month, MONTH),
            weekdays=frozenset(v % 7 for v in ref_values(weekday, WEEKDAY)),
            # Vixie cron: when both day fields are restricted (neither starts with `*`) a day
            # matches when either matches; otherwise both must.
            either_day=not day.startswith("*") and not weekday.startswith("*"),
        )

    def matches_day(self, d: date) -> bool:
        if d.month not in self.months:
            return False
        by_day = d.day in self.days
        by_weekday = d.isoweekday() % 7 in self.weekdays
        return (by_day or by_weekday) if self.either_day else (by_day and by_weekday)

    def matches_wall(self, wall: datetime) -> bool:
        return (
            self.matches_day(wall.date())
            and wall.hour in self.hours
            and (wall.minute in self.minutes and wall.second == 0)
        )

    def can_fire(self) -> bool:
        """Whether some date matches (the spec refuses expressions that never fire)."""
        if self.either_day:
            return True  # every month has every weekday
        longest = {2: 29, 4: 30, 6: 30, 9: 30, 11: 30}
        return any(d <= longest.get(m, 31) for d in self.days for m in self.months)


# -- the reference walk -----------------------------------------------------------------------


def seconds_of(aware: datetime) -> int:
    return (aware - EPOCH) // SECOND


def reading(t_seconds: int, zone: ZoneInfo) -> datetime:
    """The zone's wall clock at an instant, as a naive datetime."""
    return (EPOCH + timedelta(seconds=t_seconds)).astimezone(zone).replace(tzinfo=None)


def instant_of(wall: datetime, zone: ZoneInfo) -> int:
    """Return the instant (seconds) a matching wall time fires at, by the spec's rule."""
    # zoneinfo reads a wall time with both offsets in play near a transition (PEP 495);
    # an instant is an occurrence of `wall` when the zone's clock reads `wall` there.
    candidates = {seconds_of(wall.replace(tzinfo=zone, fold=fold)) for fold in (0, 1)}
    occurrences = [t for t in candidates if reading(t, zone) == wall]
    if occurrences:
        return min(occurrences)  # a repeated wall time fires at its first occurrence
    # A gap: the two readings straddle the jump. Fire at the first instant whose wall clock
    # is already past `wall`, which is the transition instant.
    low, high = sorted(candidates)
    assert reading(low, zone) < wall < reading(high, zone), (wall, zone)
    while high - low > 1:
        middle = (low + high) // 2
        if reading(middle, zone) > wall:
            high = middle
        else:
            low = middle
    return high


def is_repeated(wall: datetime, zone: ZoneInfo) -> bool:
    """Whether the zone's clock reads `wall` at two instants (the hour after clocks go back)."""
    candidates = {seconds_of(wall.replace(tzinfo=zone, fold=fold)) for fold in (0, 1)}
    return len([t for t in candidates if reading(t, zone) == wall.replace(microsecond=0)]) == 2


def reference_next_after(cron: RefCron, after_us: int, zone: ZoneInfo) -> int:
    """Walk wall-clock minutes from just before `after_us`; return the first fire after it."""
    # The wall -> instant map above never goes backwards (checked by a test below), so the
    # first matching wall time whose instant is past `after_us` is the answer. Start a few
    # hours before the wall clock's reading, which covers any repeated stretch.
    start = reading(after_us // US, zone) - timedelta(hours=3)
    day = start.date()
    for _ in range(MAX_WALK_DAYS):
        # No minute of a day fires unless the day matches: skip the 1,440 checks.
        if cron.matches_day(day):
            for minute_of_day in range(24 * 60):
                wall = datetime.combine(day, time(*divmod(minute_of_day, 60)))
                if wall < start.replace(second=0, microsecond=0):
                    continue
                if wall.hour in cron.hours and wall.minute in cron.minutes:
                    t = instant_of(wall, zone)
                    if t * US > after_us:
                        return t * US
        day += timedelta(days=1)
    raise AssertionError(
        f"the reference walked {MAX_WALK_DAYS} days from {start} without a fire time for "
        f"{cron}: generate more frequent expressions"
    )


# -- transitions, to draw instants near them --------------------------------------------------


@functools.cache
def transitions(name: str) -> tuple[int, ...]:
    """Return the instants (seconds) in the years drawn from where the zone's offset changes."""
    zone = ZoneInfo(name)

    def offset(t: int) -> timedelta | None:
        return (EPOCH + timedelta(seconds=t)).astimezone(zone).utcoffset()

    found = []
    t = seconds_of(datetime(FIRST_YEAR, 1, 1, tzinfo=UTC))
    end = seconds_of(datetime(LAST_YEAR + 1, 1, 1, tzinfo=UTC))
    day = 86_400
    while t < end:
        if offset(t) != offset(t + day):
            low, high = t, t + day  # offset(low) != offset(high): bisect to the second
            while high - low > 1:
                middle = (low + high) // 2
                if offset(middle) == offset(low):
                    low = middle
                else:
                    high = middle
            found.append(high)
        t += day
    return tuple(found)


def test_it_finds_the_transitions_it_draws_instants_near() -> None:
    # Europe/Berlin went to summer time at 2026-03-29 01:00 UTC and back at 2026-10-25 01:00.
    berlin = transitions("Europe/Berlin")
    assert at("2026-03-29T01:00:00+00:00") // US in berlin
    assert at("2026-10-25T01:00:00+00:00") // US in berlin
    # Samoa skipped 2011-12-30 at 10:00 UTC.
    assert at("2011-12-30T10:00:00+00:00") // US in transitions("Pacific/Apia")
    assert transitions("UTC") == ()


def test_it_maps_wall_times_to_instants_the_spec_way() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    # The gap: 02:30 does not exist and fires at 03:00+02:00, as 02:00 and 02:59 do.
    for minute in (0, 30, 59):
        wall = datetime(2026, 3, 29, 2, minute)
        assert instant_of(wall, berlin) * US == at("2026-03-29T03:00:00+02:00")
    # The fold: 02:30 happens twice and fires at the first, +02:00.
    assert instant_of(datetime(2026, 10, 25, 2, 30), berlin) * US == at("2026-10-25T02:30:00+02:00")
    # Samoa's missing day fires once, at the first instant after it.
    apia = ZoneInfo("Pacific/Apia")
    assert instant_of(datetime(2011, 12, 30, 12, 0), apia) * US == at("2011-12-31T00:00:00+14:00")
    # Lord Howe's half-hour gap.
    lord_howe = ZoneInfo("Australia/Lord_Howe")
    assert instant_of(datetime(2026, 10, 4, 2, 15), lord_howe) * US == at(
        "2026-10-04T02:30:00+11:00"
    )


@pytest.mark.parametrize("name", ZONES)
def test_it_never_maps_a_later_wall_time_to_an_earlier_instant(name: str) -> None:
    # The reference returns the first matching wall time past `after_us`; that is the first
    # instant only if this map is monotonic. Check it minute by minute around transitions.
    zone = ZoneInfo(name)
    for t in transitions(name)[::7]:
        wall = reading(t, zone).replace(second=0) - timedelta(hours=4)
        previous = instant_of(wall, zone)
        for _ in range(8 * 60):
            wall += timedelta(minutes=1)
            current = instant_of(wall, zone)
            assert current >= previous, (name, wall)
            previous = current


def test_the_reference_answers_the_spec_examples() -> None:
    def ref(expr: str, zone: str, after: str) -> int:
        return reference_next_after(RefCron.parse(expr), at(after), ZoneInfo(zone))

    # Gap times fire once, at the end of the gap.
    assert ref("*/10 2 * * *", "Europe/Berlin", "2026-03-29T01:55:00+01:00") == at(
        "2026-03-29T03:00:00+02:00"
    )
    assert ref("*/10 2 * * *", "Europe/Berlin", "2026-03-29T03:00:00+02:00") == at(
        "2026-03-30T02:00:00+02:00"
    )
    # No second pass through the repeated hour, also when asked from inside it.
    assert ref("*/15 * * * *", "Europe/Berlin", "2026-10-25T02:50:00+02:00") == at(
        "2026-10-25T03:00:00+01:00"
    )
    assert ref("*/15 * * * *", "Europe/Berlin", "2026-10-25T02:20:00+01:00") == at(
        "2026-10-25T03:00:00+01:00"
    )
    # Vixie's OR: the first seven days of the month and every Monday.
    assert ref("0 0 1-7 * 1", "UTC", "2026-01-07T12:00:00+00:00") == at("2026-01-12T00:00:00+00:00")
    # Apia's missing day.
    assert ref("0 12 * * *", "Pacific/Apia", "2011-12-29T13:00:00-10:00") == at(
        "2011-12-31T00:00:00+14:00"
    )


# -- strategies -------------------------------------------------------------------------------


def names_in_any_case(names: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.sampled_from(names).flatmap(
        lambda name: st.sampled_from([name, name.upper(), name.capitalize()])
    )


@st.composite
def field_items(draw: st.DrawFn, field: RefField, hot: tuple[int, ...] = ()) -> str:
    """One list item of a field: a number or name, a range, either with a step, `*/k`."""
    span = field.high - field.low
    value = st.integers(field.low, field.high)
    if hot:
        value = st.one_of(st.sampled_from(hot), value)
    kind = draw(st.sampled_from(["value", "value", "range", "range_step", "start_step", "star"]))
    if kind == "star":
        return f"*/{draw(st.integers(1, span))}"
    first = draw(value)
    if kind == "start_step":
        return f"{first}/{draw(st.integers(1, span))}"
    if kind == "value":
        by_name: bool = draw(st.booleans())
        if field.names and by_name:
            return draw(names_in_any_case(field.names))
        return str(first)
    last = draw(st.integers(first, field.high))
    named: bool = draw(st.booleans())
    if field.names and named:
        a = field.names[min(first - field.first_name_value, len(field.names) - 1)]
        b = field.names[min(last - field.first_name_value, len(field.names) - 1)]
        if field.names.index(a) <= field.names.index(b):
            first_text, last_text = a, b
        else:
            first_text, last_text = str(first), str(last)
    else:
        first_text, last_text = str(first), str(last)
    if kind == "range":
        return f"{first_text}-{last_text}"
    return f"{first_text}-{last_text}/{draw(st.integers(1, span))}"


def field_text(
    field: RefField, *, star_weight: int, hot: tuple[int, ...] = ()
) -> st.SearchStrategy[str]:
    """A whole field: mostly `*` when `star_weight` is high, else one item or a short list."""
    items = st.lists(field_items(field, hot), min_size=1, max_size=3).map(",".join)
    return st.one_of(*[st.just("*")] * star_weight, items)


@st.composite
def expressions(
    draw: st.DrawFn,
    hot_minutes: tuple[int, ...] = (0, 30),
    hot_hours: tuple[int, ...] = (0, 1, 2, 3, 4, 22, 23),
    hot_day: date | None = None,
) -> str:
    """A cron expression that mostly fires often, with hours near where clocks change."""
    fields = [
        draw(field_text(MINUTE, star_weight=1, hot=hot_minutes)),
        draw(field_text(HOUR, star_weight=2, hot=hot_hours)),
        draw(field_text(DAY, star_weight=4, hot=(hot_day.day,) if hot_day else ())),
        draw(field_text(MONTH, star_weight=6, hot=(hot_day.month,) if hot_day else ())),
        draw(field_text(WEEKDAY, star_weight=3, hot=(hot_day.isoweekday(),) if hot_day else ())),
    ]
    spaces = st.sampled_from([" ", " ", "  ", "\t"])
    text = fields[0]
    for f in fields[1:]:
        text += draw(spaces) + f
    return draw(st.sampled_from(["", " "])) + text + draw(st.sampled_from(["", " ", "\n"]))


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, str, int]:
    """An expression, a zone and an instant (microseconds), mostly just before a transition.

    The expression's hours and minutes lean towards the wall times the transition skips or
    repeats, so that many draws fire in a gap or a repeated stretch.
    """
    name = draw(st.sampled_from(ZONES))
    near = transitions(name)
    if not near or draw(st.integers(0, 19)) == 19:
        low = at(f"{FIRST_YEAR}-01-01T00:00:00+00:00")
        high = at(f"{LAST_YEAR}-12-31T00:00:00+00:00")
        return draw(expressions()), name, draw(st.integers(low, high))
    t = draw(st.sampled_from(near))
    zone = ZoneInfo(name)
    before, after = reading(t - 1, zone), reading(t, zone)
    walls = sorted([before, after])
    hours = {walls[0].hour, walls[1].hour, (walls[0] - timedelta(hours=1)).hour}
    hours |= {
        (walls[0] + timedelta(hours=h)).hour
        for h in range(1, 24)
        if walls[0] + timedelta(hours=h) < walls[1]
    }
    minutes = (0, 15, 29, 30, 45, 59, after.minute)
    text = draw(
        expressions(hot_minutes=minutes, hot_hours=tuple(sorted(hours)), hot_day=walls[0].date())
    )
    # Mostly in the hours before the transition (a frequent expression reaches it within a
    # few fires), sometimes a day before (a daily one does), sometimes just after; sometimes
    # on a whole minute, as successive fire times are.
    shift = draw(
        st.one_of(
            st.integers(-10, -1).map(lambda m: m * 60 * US),
            st.integers(-120, -1).map(lambda m: m * 60 * US),
            st.integers(-3 * 3600 * US, 0),
            st.integers(-30 * 3600, 3 * 3600).map(lambda s: s * US),
            st.integers(-360, 360).map(lambda m: m * 60 * US),
            st.integers(-6 * 3600 * US, 6 * 3600 * US),
        )
    )
    return text, name, t * US + shift


# -- the properties ---------------------------------------------------------------------------

FIRES_IN_A_ROW = 4


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), by_name=st.booleans())
@example(case=("*/10 2 * * *", "Europe/Berlin", at("2026-03-29T01:55:00+01:00")), by_name=True)
@example(case=("*/15 * * * *", "Europe/Berlin", at("2026-10-25T02:20:00+01:00")), by_name=False)
@example(case=("*/5 * * * *", "Australia/Lord_Howe", at("2026-04-05T01:40:00+11:00")), by_name=True)
@example(case=("0 * * * *", "Pacific/Apia", at("2011-12-29T22:30:00-10:00")), by_name=True)
@example(case=("0 0 * * *", "America/Santiago", at("2026-09-05T22:00:00-04:00")), by_name=True)
@example(case=("0 0 1-7 * mon", "Europe/Dublin", at("2026-03-28T12:00:00+00:00")), by_name=True)
@example(case=("0 0 29 2 *", "Asia/Tehran", at("2021-03-01T00:00:00+03:30")), by_name=True)
def test_it_fires_when_the_reference_does(case: tuple[str, str, int], by_name: bool) -> None:
    text, name, after = case
    zone = ZoneInfo(name)
    ref = RefCron.parse(text)
    if not ref.can_fire():
        with pytest.raises(CronError):
            CronSchedule.parse(text)
        return
    schedule = CronSchedule.parse(text)
    expected, got = [], []
    ref_at = got_at = after
    for _ in range(FIRES_IN_A_ROW):
        ref_at = reference_next_after(ref, ref_at, zone)
        got_at = schedule.next_after(got_at, name if by_name else zone)
        expected.append(ref_at)
        got.append(got_at)
    # What the draw exercised, for --hypothesis-show-statistics.
    if any(not ref.matches_wall(reading(t // US, zone)) for t in expected):
        event("a fire time moved by a gap")
    if any(reading(t // US - 1, zone) + SECOND < reading(t // US, zone) for t in expected):
        event("a fire time at the end of a gap")
    if any(is_repeated(reading(t // US, zone), zone) for t in expected):
        event("a fire time in a repeated stretch")
    if is_repeated(reading(after // US, zone), zone):
        event("asked from inside a repeated stretch")
    assert got == expected, (
        f"{text!r} in {name} after {iso(after, zone)}: "
        f"expected {[iso(t, zone) for t in expected]}, got {[iso(t, zone) for t in got]}"
    )


def iso(t_us: int, zone: ZoneInfo) -> str:
    return (EPOCH + timedelta(microseconds=t_us)).astimezone(zone).isoformat()


CRON_ALPHABET = "0123456789*-/,? \t#LW@abcdefghijklmnopqrstuvwxyzJANMONSUN"


@settings(max_examples=500, deadline=None)
@given(
    text=st.one_of(
        st.text(),
        st.text(alphabet=CRON_ALPHABET, max_size=30),
        expressions()
        .flatmap(
            lambda e: st.tuples(
                st.just(e), st.integers(0, len(e)), st.text(CRON_ALPHABET, max_size=3)
            )
        )
        .map(lambda parts: parts[0][: parts[1]] + parts[2] + parts[0][parts[1] :]),
    )
)
def test_it_raises_only_cron_errors(text: str) -> None:
    refused: CronError | None = None
    try:
        schedule = CronSchedule.parse(text)
    except CronError as error:
        refused = error
    if refused is not None:
        assert str(refused), f"an empty message for {text!r}"
        return
    # What parses reads back as itself.
    assert CronSchedule.parse(str(schedule)) == schedule


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_its_normalized_text_reparses_to_the_same_schedule(case: tuple[str, str, int]) -> None:
    text, name, after = case
    assume(RefCron.parse(text).can_fire())
    schedule = CronSchedule.parse(text)
    again = CronSchedule.parse(str(schedule))
    assert again == schedule
    assert str(again) == str(schedule)
    # Same meaning: the normalized text must keep Vixie's OR/AND choice among other things.
    assert [f.at_us for f in again.fire_times(after, name, 5)] == [
        f.at_us for f in schedule.fire_times(after, name, 5)
    ], f"{text!r} normalized to {str(schedule)!r}"
