"""dgxmm's idle ladder, its schedule bounds, the fit, the wake lead and the histogram, replayed.

Every expectation is worked out by hand from the rules (issue 25) and fixed durations, in
Berlin's summer time (no change of clocks near): a runner pass at every whole minute, a wake
lead rounded up to the pass before; the idle policy checked on the host's tick (each second,
``IDLE_TICK_US``): an idle step at the first tick at or after it is due (one due during an
action at the first tick once the action has ended), a histogram pre-wake at the tick at or
before its instant.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

import numpy as np
import pytest
from lab.labkit import FIXED_TIMES, lab_deployment, lab_fleet

from dgxmm.decider.idle import GapHistogram, IdleLadder
from dgxmm.decider.schedules import ResultKind, ScheduleAction
from dgxmm.decider.schedules.lead import parse_wake_lead
from dgxmm.lab import (
    Fixed,
    LabFleet,
    LabSchedule,
    LogNormal,
    Phase,
    ScheduleReplay,
    ServerTimes,
    Trace,
    Uniform,
)
from dgxmm.lab.replay.fleet import Rules, replay_fleet, replay_schedules
from dgxmm.time_units import MINUTE_US, SECOND_US

S = SECOND_US
LADDER = Rules(idle=True)
MEASURED = parse_wake_lead("measured")
# Every step fixed, level 2's too: every expected instant is exact.
DURATIONS = replace(FIXED_TIMES, sleep_2=Fixed(value_us=1 * S), wake_2=Fixed(value_us=6 * S))
WAKE_0730 = LabSchedule(
    action=ScheduleAction.WAKE, days=127, time="07:30", time_zone="Europe/Berlin"
)
SLEEP_2000 = LabSchedule(
    action=ScheduleAction.SLEEP, days=127, time="20:00", time_zone="Europe/Berlin"
)
FULL_LADDER = IdleLadder(sleep_after_us=300 * S, deepen_after_us=1800 * S, stop_after_us=3600 * S)
SLEEP_AFTER_5_MIN = IdleLadder(sleep_after_us=300 * S)
CHAT = lab_deployment(durations=DURATIONS)


def at(clock: str, day: int = 1) -> int:
    """Return the instant of a Berlin ``HH:MM:SS`` on 2026-06-``day`` (a Monday for day 1)."""
    return int(datetime.fromisoformat(f"2026-06-{day:02d}T{clock}+02:00").timestamp()) * S


def trace(requests: Sequence[tuple[int, str]]) -> Trace:
    return Trace.of(list(requests))


def replay(
    requests: Sequence[int | tuple[int, str]],
    machine: LabFleet,
    rules: Rules,
    *,
    start: int,
    end: int,
    seed: int = 7,
) -> dict[str, ScheduleReplay]:
    rows = [row if isinstance(row, tuple) else (row, "chat") for row in requests]
    return replay_fleet(trace(rows), machine, rules, start_us=start, end_us=end, seed=seed)


def test_it_climbs_the_ladder_on_the_hosts_ticks_and_starts_what_it_stopped() -> None:
    machine = lab_fleet(replace(CHAT, idle=FULL_LADDER))
    chat = replay(
        [at("00:00:10"), at("02:00:10")], machine, LADDER, start=at("00:00:00"), end=at("04:00:00")
    )["chat"]
    assert chat.timeline.phases() == [
        (at("00:00:00"), Phase.AWAKE),
        (at("00:05:10"), Phase.GOING_DOWN),  # 300 s after 00:00:10: a tick, taken at once
        (at("00:05:12"), Phase.ASLEEP_1),
        (at("00:30:11"), Phase.ASLEEP_2),  # deepened at 00:30:10, level 1 held until it ends
        (at("01:00:13"), Phase.STOPPED),  # stopped at 01:00:10 (3600 s after 00:00:10)
        (at("02:00:10"), Phase.STARTING),  # the request starts what the idle policy stopped
        (at("02:01:00"), Phase.AWAKE),
        (at("02:06:00"), Phase.GOING_DOWN),  # and the ladder again, from the start's end
        (at("02:06:02"), Phase.ASLEEP_1),
        (at("02:31:01"), Phase.ASLEEP_2),
        (at("03:01:03"), Phase.STOPPED),
    ]
    assert chat.waits_us.tolist() == [0, 50 * S]
    assert chat.refused == {}
    assert chat.steps == {"idle sleeps": 2, "idle deepens": 2, "idle stops": 2}
    assert chat.decisions == ()


def test_without_the_idle_rules_the_fleet_files_ladder_is_not_played() -> None:
    machine = lab_fleet(replace(CHAT, idle=FULL_LADDER))
    chat = replay([at("00:00:10")], machine, Rules(), start=at("00:00:00"), end=at("04:00:00"))[
        "chat"
    ]
    assert chat.timeline.phases() == [(at("00:00:00"), Phase.AWAKE)]
    assert chat.steps == {}


def test_a_deployment_with_no_ladder_of_its_own_takes_the_default_one() -> None:
    chat = replay(
        [at("00:00:10")], lab_fleet(CHAT), LADDER, start=at("00:00:00"), end=at("04:00:00")
    )["chat"]
    assert chat.timeline.phases() == [
        (at("00:00:00"), Phase.AWAKE),
        (at("00:05:10"), Phase.GOING_DOWN),  # 5 minutes
        (at("00:05:12"), Phase.ASLEEP_1),
        (at("00:15:11"), Phase.ASLEEP_2),  # deepened at 00:15:10, 15 minutes
        (at("01:00:13"), Phase.STOPPED),  # stopped at 01:00:10, an hour
    ]


def test_in_the_awake_window_it_sleeps_at_level_1_only_and_stops_once_the_window_shuts() -> None:
    machine = lab_fleet(replace(CHAT, idle=FULL_LADDER, schedules=(WAKE_0730, SLEEP_2000)))
    chat = replay(
        [at("08:00:20")], machine, LADDER, start=at("08:00:00"), end=at("08:00:00", day=2)
    )["chat"]
    assert chat.timeline.phases() == [
        (at("08:00:00"), Phase.AWAKE),
        (at("08:05:20"), Phase.GOING_DOWN),  # level 1 is allowed in the window
        (at("08:05:22"), Phase.ASLEEP_1),  # idle for 12 h, not deepened nor stopped by day
        # The 20:00 tick, after the runner's pass skipped the sleep: the window is shut, and
        # the deepening held back since 08:30:20 gives way to the stop due since 09:00:20.
        (at("20:00:03"), Phase.STOPPED),
        (at("07:30:00", day=2), Phase.STARTING),  # the wake starts what the ladder stopped
        (at("07:30:50", day=2), Phase.AWAKE),
        (at("07:35:50", day=2), Phase.GOING_DOWN),  # 5 minutes after the start's end
        (at("07:35:52", day=2), Phase.ASLEEP_1),
    ]
    assert chat.steps == {"idle sleeps": 2, "idle stops": 1}
    assert [(d.at_us, d.action, d.kind, d.reason) for d in chat.decisions] == [
        (
            at("20:00:00"),
            ScheduleAction.SLEEP,
            ResultKind.SKIPPED,
            "it is sleeping, so it is not put to sleep",
        ),
        (at("07:30:00", day=2), ScheduleAction.WAKE, ResultKind.DONE, None),
    ]


def test_a_request_late_in_the_awake_window_is_followed_by_the_whole_ladder_after_it() -> None:
    machine = lab_fleet(replace(CHAT, idle=FULL_LADDER, schedules=(WAKE_0730, SLEEP_2000)))
    chat = replay(
        [at("08:00:20"), at("19:50:00")],
        machine,
        LADDER,
        start=at("08:00:00"),
        end=at("08:00:00", day=2),
    )["chat"]
    assert chat.timeline.phases() == [
        (at("08:00:00"), Phase.AWAKE),
        (at("08:05:20"), Phase.GOING_DOWN),
        (at("08:05:22"), Phase.ASLEEP_1),
        (at("19:50:00"), Phase.WAKING),
        (at("19:50:04"), Phase.AWAKE),
        (at("19:55:04"), Phase.GOING_DOWN),  # 5 minutes after it came up, held back or not
        (at("19:55:06"), Phase.ASLEEP_1),
        (at("20:20:05"), Phase.ASLEEP_2),  # past 20:00, deepened 30 minutes after (20:20:04)
        (at("20:50:07"), Phase.STOPPED),  # and stopped an hour after (20:50:04)
        (at("07:30:00", day=2), Phase.STARTING),
        (at("07:30:50", day=2), Phase.AWAKE),
        (at("07:35:50", day=2), Phase.GOING_DOWN),
        (at("07:35:52", day=2), Phase.ASLEEP_1),
    ]
    assert chat.waits_us.tolist() == [0, 4 * S]
    assert chat.steps == {"idle sleeps": 3, "idle deepens": 1, "idle stops": 1}


def test_a_request_while_an_idle_sleep_is_under_way_waits_for_it_then_for_the_wake() -> None:
    slow = replace(
        CHAT, idle=SLEEP_AFTER_5_MIN, durations=replace(DURATIONS, sleep_1=Fixed(value_us=90 * S))
    )
    chat = replay(
        [at("00:00:10"), at("00:06:10"), at("00:06:20")],
        lab_fleet(slow),
        LADDER,
        start=at("00:00:00"),
        end=at("01:00:00"),
    )["chat"]
    # The sleep begins at 00:05:10 and ends at 00:06:40; one wake of 4 s for both requests.
    assert chat.waits_us.tolist() == [0, 30 * S + 4 * S, 20 * S + 4 * S]
    assert chat.timeline.phases() == [
        (at("00:00:00"), Phase.AWAKE),
        (at("00:05:10"), Phase.GOING_DOWN),
        (at("00:06:40"), Phase.WAKING),  # asleep for no time
        (at("00:06:44"), Phase.AWAKE),
        (at("00:11:44"), Phase.GOING_DOWN),  # 5 minutes after 00:06:44, at that very tick
        (at("00:13:14"), Phase.ASLEEP_1),
    ]
    assert chat.steps == {"idle sleeps": 2}


TWO_ON_ONE_GPU = (
    lab_deployment("a", memory_gib_awake=60.0, idle=SLEEP_AFTER_5_MIN, durations=DURATIONS),
    lab_deployment(
        "b", memory_gib_awake=60.0, idle=IdleLadder(sleep_after_us=1800 * S), durations=DURATIONS
    ),
)


def test_a_wake_that_does_not_fit_is_refused_and_evicts_nothing() -> None:
    requests = [
        (at("00:00:10"), "a"),  # a sleeps at 00:05:10
        (at("00:20:00"), "b"),  # b stays awake until 00:50
        (at("00:30:00"), "a"),  # 2 + 60 GiB asleep and awake, 60 more do not fit in 80
        (at("01:00:00"), "a"),  # b asleep: 2 + 60 fit
    ]
    replayed = replay(
        requests, lab_fleet(*TWO_ON_ONE_GPU), LADDER, start=at("00:00:00"), end=at("02:00:00")
    )
    a, b = replayed["a"], replayed["b"]
    assert a.waits_us.tolist() == [0, -1, 4 * S]
    assert a.refused == {"does_not_fit": 1}
    assert b.timeline.phases()[:3] == [
        (at("00:00:00"), Phase.AWAKE),  # not evicted at 00:30
        (at("00:50:00"), Phase.GOING_DOWN),
        (at("00:50:02"), Phase.ASLEEP_1),
    ]
    assert a.timeline.phases()[:5] == [
        (at("00:00:00"), Phase.AWAKE),
        (at("00:05:10"), Phase.GOING_DOWN),
        (at("00:05:12"), Phase.ASLEEP_1),
        (at("01:00:00"), Phase.WAKING),  # nothing at 00:30
        (at("01:00:04"), Phase.AWAKE),
    ]
    ledger = a.ledger("a", lab_fleet(*TWO_ON_ONE_GPU).footprint("a"))
    assert (ledger.cold, ledger.refused) == (2, {"does_not_fit": 1})


def test_one_going_down_holds_its_memory_until_down_and_one_coming_up_holds_it_already() -> None:
    a, b = TWO_ON_ONE_GPU
    slow_b = replace(
        b,
        durations=replace(
            DURATIONS, sleep_1=Fixed(value_us=120 * S), wake_1=Fixed(value_us=30 * S)
        ),
    )
    requests = [
        (at("00:00:10"), "a"),  # a sleeps at 00:05:10
        (at("00:20:00"), "b"),  # b goes down from 00:50:00 to 00:52:00
        (at("00:51:00"), "a"),  # b still holds 60 GiB: refused
        (at("00:52:00"), "a"),  # b is down that instant (its end comes first): a wakes
        (at("01:10:00"), "b"),  # b wakes until 01:10:30, holding its 60 GiB from the start
        (at("01:10:10"), "a"),  # a slept again at 00:57:04 (5 minutes after 00:52:04); refused
    ]
    replayed = replay(
        requests, lab_fleet(a, slow_b), LADDER, start=at("00:00:00"), end=at("02:00:00")
    )
    assert replayed["a"].waits_us.tolist() == [0, -1, 4 * S, -1]
    assert replayed["b"].waits_us.tolist() == [0, 30 * S]
    assert (at("00:57:04"), Phase.GOING_DOWN) in replayed["a"].timeline.phases()


def test_a_scheduled_wake_that_does_not_fit_is_skipped_and_says_why() -> None:
    a, b = TWO_ON_ONE_GPU
    machine = lab_fleet(replace(a, schedules=(replace(WAKE_0730, time="00:40"),)), b)
    replayed = replay(
        [(at("00:00:10"), "a"), (at("00:20:00"), "b")],
        machine,
        LADDER,
        start=at("00:00:00"),
        end=at("01:00:00"),
    )
    (decision,) = replayed["a"].decisions
    assert (decision.at_us, decision.action, decision.kind) == (
        at("00:40:00"),
        ScheduleAction.WAKE,
        ResultKind.SKIPPED,
    )
    assert (decision.reason or "").startswith("it does not fit")
    assert (at("00:40:00"), Phase.WAKING) not in replayed["a"].timeline.phases()
    assert replayed["b"].timeline.phases()[1] == (at("00:50:00"), Phase.GOING_DOWN)


NIGHTLY = replace(
    CHAT,
    schedules=(SLEEP_2000, WAKE_0730),
    durations=replace(DURATIONS, wake_1=Fixed(value_us=42 * S)),
)
DAYS = 22  # 21 mornings: the first wake with no measured one, then 20 measured


def mornings() -> list[int]:
    return [at("07:30:00", day=day) for day in range(2, DAYS + 1)]


def test_a_measured_lead_begins_the_wake_a_pass_early_and_the_07_30_request_is_warm() -> None:
    chat = replay(
        mornings(),
        lab_fleet(NIGHTLY),
        Rules(wake_lead=MEASURED),
        start=at("00:00:00"),
        end=at("12:00:00", day=DAYS),
    )["chat"]
    phases = chat.timeline.phases()
    for day in range(2, DAYS + 1):  # the default 6 s, then the p95 of 42 s: both a minute
        assert (at("07:29:00", day=day), Phase.WAKING) in phases
        assert (at("07:29:42", day=day), Phase.AWAKE) in phases
    assert chat.waits_us.tolist() == [0] * (DAYS - 1)
    assert chat.steps == {"wakes begun early": DAYS - 1}
    first, *later = [d for d in chat.decisions if d.action is ScheduleAction.WAKE]
    assert (first.kind, first.reason) == (ResultKind.SKIPPED, "it is already awake and running")
    assert [(d.at_us, d.kind) for d in later] == [
        (at("07:29:00", day=day), ResultKind.DONE) for day in range(2, DAYS + 1)
    ]


def test_with_the_lead_off_the_07_30_request_meets_the_wake() -> None:
    chat = replay(
        mornings()[:2], lab_fleet(NIGHTLY), Rules(), start=at("00:00:00"), end=at("12:00:00", day=3)
    )["chat"]
    assert chat.waits_us.tolist() == [42 * S, 42 * S]
    assert (at("07:30:00", day=2), Phase.WAKING) in chat.timeline.phases()
    assert chat.steps == {}


def test_a_measured_wake_longer_than_a_minute_moves_the_lead_to_two_passes_before() -> None:
    slow = replace(NIGHTLY, durations=replace(DURATIONS, wake_1=Fixed(value_us=70 * S)))
    chat = replay(
        mornings()[:2],
        lab_fleet(slow),
        Rules(wake_lead=MEASURED),
        start=at("00:00:00"),
        end=at("12:00:00", day=3),
    )["chat"]
    phases = chat.timeline.phases()
    # No wake measured yet: the default 6 s, the 07:29 pass; ready at 07:30:10.
    assert (at("07:29:00", day=2), Phase.WAKING) in phases
    # Then the measured 70 s: the 07:28 pass, ready at 07:29:10.
    assert (at("07:28:00", day=3), Phase.WAKING) in phases
    assert chat.waits_us.tolist() == [10 * S, 0]


HALF_HOURLY_DAYS = 3


def half_hourly() -> list[int]:
    every = 30 * MINUTE_US
    return list(range(at("00:00:00"), at("00:00:00", day=1 + HALF_HOURLY_DAYS), every))


def test_the_histogram_sleeps_after_each_request_and_wakes_ahead_of_the_next() -> None:
    requests = half_hourly()
    chat = replay(
        requests,
        lab_fleet(CHAT),
        Rules(histogram=True),
        start=at("00:00:00"),
        end=at("00:00:00", day=1 + HALF_HOURLY_DAYS),
    )["chat"]
    # 20 gaps of 30 minutes are representative: keep-alive 34.1 min, pre-wake at 27 min
    # (the 30-minute bin less 10 %), less the wake time: the default 6 s after 10:00 (every
    # wake so far was from level 2), the 10:26:54 tick; then the measured 4 s, 26:56 after.
    representative = requests.index(at("10:00:00"))
    phases = chat.timeline.phases()
    # Until then the default ladder: 5 minutes after the first request, at that very tick.
    assert phases[:3] == [
        (at("00:00:00"), Phase.AWAKE),
        (at("00:05:00"), Phase.GOING_DOWN),
        (at("00:05:02"), Phase.ASLEEP_1),
    ]
    assert (at("10:26:54"), Phase.WAKING) in phases
    for request in requests[representative + 1 :]:
        assert (request, Phase.AWAKE) not in phases  # it is awake already
        assert (request + MINUTE_US, Phase.GOING_DOWN) in phases  # its sleep, a minute after
        assert (request + MINUTE_US + 2 * S, Phase.ASLEEP_1) in phases
        assert (request + 27 * MINUTE_US - 4 * S, Phase.WAKING) in phases
        assert (request + 27 * MINUTE_US, Phase.AWAKE) in phases  # awake at the 27 minutes
    waits = chat.waits_us.tolist()
    assert waits[representative + 1 :] == [0] * (len(requests) - representative - 1)
    # Before, the default ladder slept 5 minutes after each one and deepened 15 minutes after
    # it: each came cold, to a 6 s wake from level 2.
    assert waits[1 : representative + 1] == [6 * S] * representative
    # One pre-wake after each request from the 20th gap on (the last one's is for a request
    # after the span).
    assert chat.steps["pre-wakes"] == len(requests) - representative


def test_the_histogram_of_uniformly_spread_gaps_falls_back_to_the_ladder() -> None:
    rng = np.random.default_rng(11)
    # Every minute from 1 to 239 once, in a random order, each with random seconds.
    gaps = [(minutes * 60 + int(rng.integers(0, 60))) * S for minutes in rng.permutation(239) + 1]
    requests = list(at("00:00:00") + np.cumsum([0, *gaps]))
    end = at("00:00:00", day=20)
    requests = [int(r) for r in requests if r < end]
    # The gaps are spread over the histogram's 4 hours: from a week on, too evenly (CV < 2).
    histogram = GapHistogram()
    learned_from = at("00:00:00", day=8)
    for previous, request in itertools.pairwise(requests):
        histogram.add(request - previous, request)
        if request >= learned_from:
            assert histogram.windows(request) is None
    chat = replay(
        requests,
        lab_fleet(replace(CHAT, idle=SLEEP_AFTER_5_MIN)),
        Rules(histogram=True),
        start=at("00:00:00"),
        end=end,
    )["chat"]
    phases = chat.timeline.phases()
    waits = chat.waits_us.tolist()
    late = [i for i, request in enumerate(requests) if request >= learned_from]
    assert len(late) > 40
    for i in late[:-1]:
        served = requests[i] + waits[i]
        # The ladder's sleep: the first tick at or after 5 minutes without a request.
        sleep = -(-(served + 300 * S) // S) * S
        inside = [p for p in phases if served < p[0] < requests[i + 1]]
        if sleep < requests[i + 1]:
            assert inside[:2] == [(sleep, Phase.GOING_DOWN), (sleep + 2 * S, Phase.ASLEEP_1)]
            assert waits[i + 1] == 4 * S  # and no pre-wake: the next request is cold
        else:
            assert inside == []
            assert waits[i + 1] == 0


def test_a_seed_replays_the_same_and_a_second_deployment_changes_nothing_of_the_first() -> None:
    drawn = ServerTimes(wake_1=LogNormal.of_p90(S, 5 * S), sleep_1=Uniform(low_us=S, high_us=9 * S))
    chat = lab_deployment(idle=SLEEP_AFTER_5_MIN, durations=drawn)
    code = lab_deployment(
        "code", gpus=(1,), idle=IdleLadder(sleep_after_us=60 * S), durations=drawn
    )
    requests = [at(f"{hour:02d}:00:00") for hour in range(1, 23)]
    others = [(at(f"{hour:02d}:30:00"), "code") for hour in range(0, 23)]

    def chat_of(machine: LabFleet, seed: int) -> tuple[object, ...]:
        span = {"start": at("00:00:00"), "end": at("00:00:00", day=2), "seed": seed}
        replayed = replay([*requests, *others], machine, LADDER, **span)["chat"]
        return (replayed.timeline.phases(), replayed.waits_us.tolist(), replayed.steps)

    alone = chat_of(lab_fleet(chat, gpus=2), seed=3)
    assert chat_of(lab_fleet(chat, gpus=2), seed=3) == alone
    assert chat_of(lab_fleet(chat, code, gpus=2), seed=3) == alone
    assert chat_of(lab_fleet(code, chat, gpus=2), seed=3) == alone
    assert chat_of(lab_fleet(chat, gpus=2), seed=4) != alone


@pytest.mark.parametrize(
    "ladder", [IdleLadder(), FULL_LADDER], ids=["no-ladder", "a-ladder-not-played"]
)
def test_replay_schedules_is_replay_fleet_with_no_idle_rule(ladder: IdleLadder) -> None:
    machine = lab_fleet(
        replace(CHAT, idle=ladder, schedules=(SLEEP_2000, WAKE_0730)),
        lab_deployment(  # the published durations: the draws must be the same too
            "code", memory_gib_awake=9.0, schedules=(replace(SLEEP_2000, time="18:00"),)
        ),
    )
    requests = [(at("09:00:00"), "chat"), (at("23:00:00"), "chat"), (at("23:30:00"), "code")]
    rows = trace(requests)
    span = {"start_us": at("00:00:00"), "end_us": at("00:00:00", day=3), "seed": 5}
    given = replay_schedules(rows, machine, **span)
    ruled = replay_fleet(rows, machine, Rules(), **span)
    assert given.keys() == ruled.keys() == {"chat", "code"}
    for name, replayed in given.items():
        other = ruled[name]
        assert replayed.timeline.phases() == other.timeline.phases()
        assert replayed.waits_us.tolist() == other.waits_us.tolist()
        assert replayed.arrivals_us.tolist() == other.arrivals_us.tolist()
        assert (replayed.refused, replayed.decisions, replayed.steps) == (
            other.refused,
            other.decisions,
            other.steps,
        )
    assert given["chat"].waits_us.tolist() == [0, 4 * S]  # and the schedules did act


def test_a_histogram_whose_pre_wake_could_not_follow_a_sleep_keeps_the_model_warm() -> None:
    # A steady request every 90 s: every gap in the 1-2 minute bin, so a pre-wake window of
    # 54 s and a keep-alive of 132 s. 54 s less the wake leaves no room to sleep and be
    # woken again: it stays awake through the keep-alive (the reviewer's case: before, it
    # slept a minute after each request, planned no pre-wake, and 128 of 149 met it asleep).
    requests = [at("00:00:00") + k * 90 * S for k in range(1, 150)]
    chat = replay(
        requests,
        lab_fleet(replace(CHAT, idle=SLEEP_AFTER_5_MIN)),
        Rules(idle=True, histogram=True, wake_lead=MEASURED),
        start=at("00:00:00"),
        end=at("04:00:00"),
    )["chat"]
    ledger = chat.ledger("chat", lab_fleet(CHAT).footprint("chat"))
    assert ledger.cold == 0
