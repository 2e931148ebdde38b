"""Parsing cron text: what it accepts, how it normalizes, and every refusal."""

from __future__ import annotations

import pytest
from support import at

from dgxmm.errors import CronError
from dgxmm.jobs import CronSchedule


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("* * * * *", "* * * * *"),
        ("*/15 * * * *", "*/15 * * * *"),
        ("0 3 * * *", "0 3 * * *"),
        ("1-5 * * * *", "1-5 * * * *"),
        ("1-30/5 * * * *", "1-26/5 * * * *"),
        ("5/15 * * * *", "5-50/15 * * * *"),
        ("1,15 * * * *", "1,15 * * * *"),
        ("0 0 1 jan,JUL *", "0 0 1 */6 *"),
        ("0 0 * * Mon-FRI", "0 0 * * 1-5"),
        ("0 0 * * 7", "0 0 * * 0"),
        ("0 0 * * 0,7", "0 0 * * 0"),
        ("  0   3  *  *   *  ", "0 3 * * *"),
        ("0\t3 * * *", "0 3 * * *"),
        ("0 0 1-31 * 1", "0 0 1-31 * 1"),
        ("0 0 */2 * 1", "0 0 */2 * 1"),
        ("0 12 * 2-4 sun", "0 12 * 2-4 0"),
    ],
    ids=lambda value: value.strip() if isinstance(value, str) else value,
)
def test_it_accepts_and_normalizes(text: str, normalized: str) -> None:
    schedule = CronSchedule.parse(text)
    assert str(schedule) == normalized
    assert CronSchedule.parse(normalized) == schedule


def test_it_compares_schedules_by_meaning() -> None:
    assert CronSchedule.parse("0,15,30,45 * * * *") == CronSchedule.parse("*/15 * * * *")
    assert CronSchedule.parse("0 0 * * 7") == CronSchedule.parse("0 0 * * sun")
    assert len({CronSchedule.parse("0 3 * * *"), CronSchedule.parse("0 3 * * *")}) == 1


def test_it_ors_the_day_fields_when_both_are_restricted() -> None:
    schedule = CronSchedule.parse("0 0 1 * 1")  # the 1st, and every Monday
    # 2026-06-01 is a Monday; 2026-06-08 a Monday; 2026-07-01 a Wednesday.
    assert schedule.matches_wall(2026, 6, 8, 0, 0)
    assert schedule.matches_wall(2026, 7, 1, 0, 0)
    assert not schedule.matches_wall(2026, 7, 2, 0, 0)


def test_it_ands_the_day_fields_when_one_starts_with_a_star() -> None:
    schedule = CronSchedule.parse("0 0 */2 * 1")  # odd days that are Mondays
    assert schedule.matches_wall(2026, 6, 1, 0, 0)  # Monday the 1st
    assert not schedule.matches_wall(2026, 6, 8, 0, 0)  # Monday the 8th (even)
    assert not schedule.matches_wall(2026, 6, 3, 0, 0)  # Wednesday the 3rd
    assert CronSchedule.parse("0 0 * * 1").matches_wall(2026, 6, 8, 0, 0)


def test_it_fires_a_star_led_list_with_its_meaning_kept() -> None:
    schedule = CronSchedule.parse("0 0 */10,5 * 1")  # starts with *: AND with Monday
    assert str(schedule) == "0 0 */10,5 * 1"
    assert CronSchedule.parse(str(schedule)) == schedule
    # Monday 2026-06-01 (day 1 is in */10) fires; Friday 2026-06-05 (day 5, not Monday) does not.
    assert schedule.matches_wall(2026, 6, 1, 0, 0)
    assert not schedule.matches_wall(2026, 6, 5, 0, 0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("* * * *", "expected 5 fields"),
        ("* * * * * * *", "expected 5 fields"),
        ("0 * * * * *", "seconds"),
        ("60 * * * *", "minute: 60 is out of range 0-59"),
        ("* 24 * * *", "hour: 24 is out of range 0-23"),
        ("* * 0 * *", "day-of-month: 0 is out of range 1-31"),
        ("* * 32 * *", "day-of-month: 32 is out of range 1-31"),
        ("* * * 13 *", "month: 13 is out of range 1-12"),
        ("* * * * 8", "day-of-week: 8 is out of range 0-7"),
        ("*/0 * * * *", "minute: step 0"),
        ("* 5-3 * * *", "hour: range '5-3' is reversed"),
        ("* * * foo *", "month: unknown name 'foo'"),
        ("* * * * funday", "day-of-week: unknown name 'funday'"),
        ("* * * * mon-bogus", "day-of-week: unknown name 'bogus'"),
        ("1,,2 * * * *", "minute: empty item in '1,,2'"),
        ("1, * * * *", "minute: empty item"),
        ("*/x * * * *", "minute: step 'x'"),
        ("-5 * * * *", "minute: missing number"),
        ("*/61 * * * *", "minute: step 61"),
        ("jan * * * *", "minute: 'jan'"),
        ("0 0 30 2 *", "can never fire"),
        ("0 0 31 4,6,9,11 *", "can never fire"),
        ("0 0 L * *", "'L'"),
        ("0 0 15W * *", "'W'"),
        ("0 0 * * 1#2", "'#'"),
        ("0 0 ? * *", "'?'"),
        ("0 0 * * 5L", "'L'"),
        ("@reboot", "no start-up event"),
        ("@fortnightly", "not a cron nickname"),
    ],
    ids=lambda value: value or "empty",
)
def test_it_refuses_with_a_message_naming_the_problem(text: str, message: str) -> None:
    with pytest.raises(CronError) as raised:
        CronSchedule.parse(text)
    assert message in str(raised.value)
    assert raised.value.field == "schedule"


def test_it_refuses_non_text() -> None:
    with pytest.raises(CronError, match="must be text"):
        CronSchedule.parse(15)  # type: ignore[arg-type]


def test_it_reads_names_that_contain_extension_letters() -> None:
    # 'jul' holds an L and 'wed' a W: they are names, not the L and W extensions.
    assert str(CronSchedule.parse("0 0 * JUL WED")) == "0 0 * 7 3"


def test_it_fires_on_a_leap_day_only() -> None:
    schedule = CronSchedule.parse("0 0 29 2 *")
    first = schedule.next_after(at("2026-01-01T00:00:00+00:00"), "UTC")
    assert first == at("2028-02-29T00:00:00+00:00")
    assert schedule.next_after(first, "UTC") == at("2032-02-29T00:00:00+00:00")


@pytest.mark.parametrize(
    ("text", "description"),
    [
        ("* * * * *", "every minute"),
        ("*/15 * * * *", "every 15 minutes"),
        ("0 3 * * 1-5", "at 03:00, Monday to Friday"),
        ("0 3 * * *", "at 03:00"),
        ("30 2 * * 6,0", "at 02:30, on Saturday and Sunday"),
        ("7 * * * *", "every hour at :07"),
        ("0 * * * *", "every hour, on the hour"),
        ("0 9-17 * * mon-fri", "every hour at :00 from 09:00 to 17:00, Monday to Friday"),
        ("*/5 9-17 * * *", "every 5 minutes from 09:00 to 17:59"),
        ("0 0 29 2 *", "at 00:00, on day 29 of the month, in February"),
        ("0 0 1-7 * 1", "at 00:00, on days 1 to 7 of the month or on Monday"),
        ("0 0,12 1 * *", "at 00:00 and 12:00, on day 1 of the month"),
        ("15 */2 * * *", "every 2 hours at :15"),
    ],
)
def test_it_describes_in_plain_english(text: str, description: str) -> None:
    assert CronSchedule.parse(text).describe() == description
