"""Cron nicknames: each one fires exactly as its 5-field form, and every misuse is refused."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgxmm.errors import CronError
from dgxmm.jobs import CronSchedule

FORMS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
ZONES = ("UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Apia")
# 2000-01-01 .. 2040-01-01 in microseconds since the epoch.
INSTANTS = st.integers(min_value=946_684_800_000_000, max_value=2_208_988_800_000_000)


@pytest.mark.parametrize(("nickname", "form"), FORMS.items(), ids=list(FORMS))
def test_it_reads_a_nickname_as_its_five_fields(nickname: str, form: str) -> None:
    schedule = CronSchedule.parse(nickname)
    assert str(schedule) == form
    assert schedule == CronSchedule.parse(form)
    assert schedule.describe() == CronSchedule.parse(form).describe()


@settings(max_examples=200, deadline=None)
@given(
    nickname=st.sampled_from(sorted(FORMS)),
    after=INSTANTS,
    zone=st.sampled_from(ZONES),
)
def test_it_fires_a_nickname_as_its_five_fields(nickname: str, after: int, zone: str) -> None:
    ours = CronSchedule(nickname)  # not the parse cache: the nickname's own parse
    theirs = CronSchedule(FORMS[nickname])
    assert ours.fire_times(after, zone, 3) == theirs.fire_times(after, zone, 3)


def test_it_accepts_a_nickname_between_blanks() -> None:
    assert str(CronSchedule.parse("  @hourly\t")) == "0 * * * *"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("@reboot", "dgxmm has no start-up event"),
        ("@every", "'@every' is not a cron nickname"),
        ("@", "'@' is not a cron nickname"),
        ("@Daily", "'@Daily': nicknames are lower case"),
        ("@HOURLY", "'@HOURLY': nicknames are lower case"),
        ("@daily 5", "'@daily 5': a nickname stands alone"),
        ("@weekly * * * * *", "'@weekly * * * * *': a nickname stands alone"),
        ("0 @daily * * *", "hour: '@daily'"),
    ],
    ids=lambda value: value,
)
def test_it_refuses_a_misused_nickname_naming_the_text(text: str, message: str) -> None:
    with pytest.raises(CronError) as raised:
        CronSchedule.parse(text)
    assert message in str(raised.value)
    assert raised.value.field == "schedule"
