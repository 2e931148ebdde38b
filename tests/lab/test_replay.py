"""The schedules as given, replayed through the runner's verdicts and the proxy's hold."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lab.labkit import FIXED_TIMES, lab_deployment, lab_fleet

from dgxmm.decider.schedules import QUIET_US, ResultKind, ScheduleAction
from dgxmm.lab import (
    Fixed,
    LabSchedule,
    LogNormal,
    Phase,
    ServerTimes,
    Trace,
    replay_schedules,
)
from dgxmm.time_units import HOUR_US, MINUTE_US, SECOND_US

S = SECOND_US
SLEEP_20 = LabSchedule(
    action=ScheduleAction.SLEEP, days=127, time="20:00", time_zone="Europe/Berlin"
)
WAKE_0730 = LabSchedule(
    action=ScheduleAction.WAKE, days=127, time="07:30", time_zone="Europe/Berlin"
)
CHAT = lab_deployment(model="llama", schedules=(SLEEP_20, WAKE_0730), durations=FIXED_TIMES)
START = "2026-06-01T00:00:00+02:00"  # Berlin in summer time, no change of clocks near
END = "2026-06-03T00:00:00+02:00"


def us(iso: str) -> int:
    return int(datetime.fromisoformat(iso).timestamp()) * SECOND_US


def trace_of(*instants: str | int) -> Trace:
    return Trace.of([(us(at) if isinstance(at, str) else at, "llama") for at in instants])


DAYTIME = (
    "2026-06-01T09:00:00+02:00",
    "2026-06-01T12:00:00+02:00",
    "2026-06-01T18:00:00+02:00",
    "2026-06-02T09:00:00+02:00",
    "2026-06-02T12:00:00+02:00",
    "2026-06-02T18:00:00+02:00",
)


def test_it_sleeps_at_20_wakes_at_0730_and_holds_the_23_00_request_for_one_wake() -> None:
    trace = trace_of(*DAYTIME, "2026-06-02T23:00:00+02:00")
    replayed = replay_schedules(trace, lab_fleet(CHAT), start_us=us(START), end_us=us(END), seed=7)
    chat = replayed["chat"]
    assert chat.timeline.phases() == [
        (us(START), Phase.AWAKE),
        (us("2026-06-01T20:00:00+02:00"), Phase.GOING_DOWN),
        (us("2026-06-01T20:00:02+02:00"), Phase.ASLEEP_1),
        (us("2026-06-02T07:30:00+02:00"), Phase.WAKING),
        (us("2026-06-02T07:30:04+02:00"), Phase.AWAKE),
        (us("2026-06-02T20:00:00+02:00"), Phase.GOING_DOWN),
        (us("2026-06-02T20:00:02+02:00"), Phase.ASLEEP_1),
        (us("2026-06-02T23:00:00+02:00"), Phase.WAKING),  # the request brought it up
        (us("2026-06-02T23:00:04+02:00"), Phase.AWAKE),
    ]
    assert chat.waits_us.tolist() == [0] * 6 + [4 * S]
    ledger = chat.ledger("chat", CHAT.footprint)
    assert (ledger.cold, ledger.waits_s, ledger.wakes, ledger.sleeps) == (1, (4.0,), 2, 2)
    asleep_h = (11.5 * HOUR_US - 2 * S + 3 * HOUR_US - 2 * S) / HOUR_US
    assert ledger.freed_gib_h == pytest.approx(68.0 * asleep_h)


def test_it_skips_the_morning_wake_of_a_deployment_a_request_woke_in_the_night() -> None:
    trace = trace_of("2026-06-01T23:00:00+02:00")
    chat = replay_schedules(trace, lab_fleet(CHAT), start_us=us(START), end_us=us(END), seed=7)[
        "chat"
    ]
    wakes = [d for d in chat.decisions if d.action is ScheduleAction.WAKE]
    assert [(d.at_us, d.kind, d.reason) for d in wakes] == [
        (us("2026-06-01T07:30:00+02:00"), ResultKind.SKIPPED, "it is already awake and running"),
        (us("2026-06-02T07:30:00+02:00"), ResultKind.SKIPPED, "it is already awake and running"),
    ]
    assert chat.waits_us.tolist() == [4 * S]


@pytest.mark.parametrize(
    ("last_request", "sleeps_at"),
    [
        ("19:50:00", "20:00:00"),  # ten minutes quiet: on time
        ("19:55:00", "20:05:00"),
        ("19:59:30", "20:10:00"),  # quiet at 20:09:30, the next pass is 20:10
    ],
    ids=["quiet-on-time", "deferred-5-minutes", "deferred-to-the-next-pass"],
)
def test_it_defers_the_sleep_until_ten_minutes_after_the_last_request(
    last_request: str, sleeps_at: str
) -> None:
    trace = trace_of(f"2026-06-01T{last_request}+02:00")
    chat = replay_schedules(trace, lab_fleet(CHAT), start_us=us(START), end_us=us(END), seed=7)[
        "chat"
    ]
    went_down = us(f"2026-06-01T{sleeps_at}+02:00")
    assert (went_down, Phase.GOING_DOWN) in chat.timeline.phases()
    assert went_down - us(f"2026-06-01T{last_request}+02:00") >= QUIET_US
    first_day = [d for d in chat.decisions if d.at_us <= went_down]
    deferrals = (went_down - us("2026-06-01T20:00:00+02:00")) // MINUTE_US
    assert [d.kind for d in first_day if d.action is ScheduleAction.SLEEP] == [
        ResultKind.DEFERRED
    ] * deferrals + [ResultKind.DONE]


def test_it_gives_up_a_sleep_still_busy_an_hour_after_its_first_deferral() -> None:
    busy = [us("2026-06-01T19:58:00+02:00") + minute * 5 * MINUTE_US for minute in range(15)]
    chat = replay_schedules(
        trace_of(*busy), lab_fleet(CHAT), start_us=us(START), end_us=us(END), seed=7
    )["chat"]
    first_day = [
        d
        for d in chat.decisions
        if d.action is ScheduleAction.SLEEP and d.at_us < us("2026-06-02T00:00:00+02:00")
    ]
    assert first_day[-1].kind is ResultKind.SKIPPED
    assert first_day[-1].at_us == us("2026-06-01T21:00:00+02:00")
    assert "busy" in (first_day[-1].reason or "")
    assert Phase.GOING_DOWN not in [
        phase for at, phase in chat.timeline.phases() if at < us("2026-06-02T00:00:00+02:00")
    ]


def test_a_stop_then_a_wake_starts_it_and_a_request_meanwhile_starts_it_sooner() -> None:
    stop = replace(SLEEP_20, action=ScheduleAction.STOP)
    stopping = replace(CHAT, schedules=(stop, WAKE_0730))
    chat = replay_schedules(
        trace_of("2026-06-02T23:00:00+02:00"),
        lab_fleet(stopping),
        start_us=us(START),
        end_us=us(END),
        seed=7,
    )["chat"]
    assert chat.timeline.phases()[:5] == [
        (us(START), Phase.AWAKE),
        (us("2026-06-01T20:00:00+02:00"), Phase.GOING_DOWN),
        (us("2026-06-01T20:00:03+02:00"), Phase.STOPPED),
        (us("2026-06-02T07:30:00+02:00"), Phase.STARTING),  # stopped by a schedule: started
        (us("2026-06-02T07:30:50+02:00"), Phase.AWAKE),
    ]
    assert chat.waits_us.tolist() == [50 * S]  # a schedule stopped it: the request starts it
    assert chat.refused == {}


def test_a_request_while_it_goes_down_waits_for_the_way_down_then_the_way_up() -> None:
    slow = replace(CHAT, durations=replace(FIXED_TIMES, sleep_1=Fixed(value_us=90 * S)))
    during = us("2026-06-01T20:00:30+02:00")
    chat = replay_schedules(
        trace_of(during, during + S), lab_fleet(slow), start_us=us(START), end_us=us(END), seed=7
    )["chat"]
    up = us("2026-06-01T20:01:30+02:00") + 4 * S  # the sleep ends, then one wake for both
    assert chat.waits_us.tolist() == [up - during, up - during - S]
    assert chat.timeline.phases()[1:5] == [
        (us("2026-06-01T20:00:00+02:00"), Phase.GOING_DOWN),
        (us("2026-06-01T20:01:30+02:00"), Phase.WAKING),  # asleep for no time: dropped
        (up, Phase.AWAKE),
        (us("2026-06-02T20:00:00+02:00"), Phase.GOING_DOWN),  # awake since: no wake at 07:30
    ]


def test_with_no_schedules_it_is_always_awake_and_frees_nothing() -> None:
    plain = replace(CHAT, schedules=())
    trace = trace_of(*DAYTIME, "2026-06-01T23:00:00+02:00")
    chat = replay_schedules(trace, lab_fleet(plain), start_us=us(START), end_us=us(END), seed=7)[
        "chat"
    ]
    assert chat.timeline.phases() == [(us(START), Phase.AWAKE)]
    ledger = chat.ledger("chat", plain.footprint)
    assert (ledger.freed_gib_h, ledger.cold, ledger.requests) == (0.0, 0, 7)
    assert chat.decisions == ()


def test_a_seed_gives_the_same_draws_and_the_wait_is_the_drawn_wake() -> None:
    drawn = replace(CHAT, durations=replace(FIXED_TIMES, wake_1=LogNormal.of_p90(S, 4 * S)))
    trace = trace_of("2026-06-01T23:00:00+02:00", "2026-06-02T23:00:00+02:00")
    runs = [
        replay_schedules(trace, lab_fleet(drawn), start_us=us(START), end_us=us(END), seed=seed)[
            "chat"
        ]
        for seed in (1, 1, 2)
    ]
    assert runs[0].waits_us.tolist() == runs[1].waits_us.tolist()
    assert runs[0].waits_us.tolist() != runs[2].waits_us.tolist()
    phases = runs[0].timeline.phases()
    woke = phases.index((us("2026-06-01T23:00:00+02:00"), Phase.WAKING))
    assert phases[woke + 1][0] - phases[woke][0] == runs[0].waits_us[0]


ARRIVALS = st.lists(
    st.integers(min_value=0, max_value=2 * 24 * 60 * 60 - 1).map(
        lambda seconds: us(START) + seconds * SECOND_US
    ),
    max_size=60,
)
SCHEDULES = st.lists(
    st.builds(
        LabSchedule,
        action=st.sampled_from(list(ScheduleAction)),
        days=st.integers(min_value=1, max_value=127),
        time=st.sampled_from(["00:00", "07:30", "12:00", "19:55", "20:00", "23:59"]),
        time_zone=st.sampled_from(["Europe/Berlin", "UTC", "America/New_York"]),
    ),
    max_size=4,
)


@settings(max_examples=60, deadline=None)
@given(
    arrivals=ARRIVALS, schedules=SCHEDULES, level=st.sampled_from([1, 2]), seed=st.integers(0, 9)
)
def test_every_cold_request_waited_and_it_never_frees_more_than_always_on(
    arrivals: list[int], schedules: list[LabSchedule], level: int, seed: int
) -> None:
    deployment = replace(
        CHAT, schedules=tuple(schedules), sleep_level=level, durations=ServerTimes()
    )
    trace = trace_of(*arrivals)
    chat = replay_schedules(
        trace, lab_fleet(deployment), start_us=us(START), end_us=us(END), seed=seed
    )["chat"]
    ledger = chat.ledger("chat", deployment.footprint)
    assert ledger.cold == int(np.count_nonzero(chat.waits_us > 0))
    assert 0.0 <= ledger.freed_gib_h <= ledger.always_on_gib_h + 1e-9
    assert ledger.requests == len(arrivals)
