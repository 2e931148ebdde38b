"""The product's bounds, replayed: an action ends by its timeout, a hold by ``max_hold_s``.

Issue 42, point 6: a replayed request waited 56 minutes behind a level-1 sleep drawn from the
lognormal's tail (3,397 s), where the product gives a sleep up after its ``sleep_timeout_s``
(300 s), a start or wake after its ``startup_timeout_s`` (600 s), kills a stop after the
grace period (30 s), and answers a held request 503 ``hold_timeout`` after ``max_hold_s``
(600 s). Instants as in ``test_replay_policies.py``: Berlin's summer time, fixed durations.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from hypothesis import given, settings
from hypothesis import strategies as st
from lab.labkit import FIXED_TIMES, lab_deployment, lab_fleet

from dgxmm.decider.idle import IdleLadder
from dgxmm.decider.schedules import ResultKind, ScheduleAction
from dgxmm.lab import Fixed, LabSchedule, LogNormal, Phase, ScheduleReplay, ServerTimes, Trace
from dgxmm.lab.replay.fleet import Rules, replay_fleet
from dgxmm.lab.replay.server import ProductBounds
from dgxmm.time_units import SECOND_US

S = SECOND_US
LADDER = Rules(idle=True)
DURATIONS = replace(FIXED_TIMES, sleep_2=Fixed(value_us=1 * S), wake_2=Fixed(value_us=6 * S))
SLEEP_AFTER_5_MIN = IdleLadder(sleep_after_us=300 * S)
# Resting phases last as long as nothing comes; every other one is an action, and bounded.
RESTING = {Phase.AWAKE, Phase.ASLEEP_1, Phase.ASLEEP_2, Phase.STOPPED}


def at(clock: str, day: int = 1) -> int:
    """Return the instant of a Berlin ``HH:MM:SS`` on 2026-06-``day`` (a Monday for day 1)."""
    return int(datetime.fromisoformat(f"2026-06-{day:02d}T{clock}+02:00").timestamp()) * S


def replay_chat(
    requests: list[int], durations: ServerTimes, *, end: int, rules: Rules = LADDER, **kw: object
) -> ScheduleReplay:
    chat = lab_deployment(durations=durations, **kw)  # type: ignore[arg-type]
    return replay_fleet(
        Trace.of([(request, "chat") for request in requests]), lab_fleet(chat), rules,
        start_us=at("00:00:00"), end_us=end, seed=7,
    )["chat"]  # fmt: skip


def test_an_idle_sleep_past_its_timeout_ends_awake_and_the_third_in_a_row_pauses() -> None:
    # The reproduction's draw: a level-1 sleep of 3,397 s, from the lognormal's tail.
    slow = replace(DURATIONS, sleep_1=Fixed(value_us=3397 * S))
    chat = replay_chat(
        [at("00:00:10"), at("00:06:10"), at("01:30:00")], slow, end=at("03:00:00"),
        idle=SLEEP_AFTER_5_MIN,
    )  # fmt: skip
    # The sleep begins at 00:05:10; the deployer gives it up after 300 s, at 00:10:10, and
    # records the deployment running (the server "did not sleep"); the held request is
    # forwarded then. The sleep is tried again 15 minutes after it ended (issue 42), and the
    # third timed out in a row pauses the idle policy until a person changes it.
    assert chat.waits_us.tolist() == [0, 240 * S, 0]
    assert chat.timeline.phases() == [
        (at("00:00:00"), Phase.AWAKE),
        (at("00:05:10"), Phase.GOING_DOWN),
        (at("00:10:10"), Phase.AWAKE),
        (at("00:25:10"), Phase.GOING_DOWN),
        (at("00:30:10"), Phase.AWAKE),
        (at("00:45:10"), Phase.GOING_DOWN),
        (at("00:50:10"), Phase.AWAKE),
    ]
    assert chat.steps == {"idle sleeps": 3, "sleeps timed out": 3}
    assert chat.refused == {}


def test_a_scheduled_sleep_past_its_timeout_fails_and_pauses_the_sleep_and_wake_schedules() -> None:
    sleep = LabSchedule(
        action=ScheduleAction.SLEEP, days=127, time="20:00", time_zone="Europe/Berlin"
    )
    wake = LabSchedule(
        action=ScheduleAction.WAKE, days=127, time="07:30", time_zone="Europe/Berlin"
    )
    slow = replace(DURATIONS, sleep_1=Fixed(value_us=400 * S))
    chat = replay_chat([], slow, end=at("23:00:00", day=2), rules=Rules(), schedules=(wake, sleep))
    assert chat.timeline.phases() == [
        (at("00:00:00"), Phase.AWAKE),
        (at("20:00:00"), Phase.GOING_DOWN),
        (at("20:05:00"), Phase.AWAKE),  # given up after 300 s; nothing sleeps it on day 2
    ]
    assert [(d.at_us, d.schedule, d.kind) for d in chat.decisions] == [
        (at("07:30:00"), 1, ResultKind.SKIPPED),  # running already
        (at("20:00:00"), 2, ResultKind.FAILED),
    ]
    assert "sleep_timeout_s" in (chat.decisions[1].reason or "")


def test_a_wake_past_its_timeout_fails_the_deployment_and_its_held_request_times_out() -> None:
    slow = replace(DURATIONS, wake_1=Fixed(value_us=700 * S))
    chat = replay_chat(
        [at("00:00:10"), at("00:20:00"), at("00:40:00")], slow, end=at("01:00:00"),
        idle=SLEEP_AFTER_5_MIN,
    )  # fmt: skip
    # The wake begins at 00:20:00 and is given up at its 600 s, when the hold's 600 s run out
    # too: the proxy's timer began first, so 503 hold_timeout. The gate failed: the
    # deployment is failed (it holds nothing) and the next request is refused.
    assert chat.timeline.phases() == [
        (at("00:00:00"), Phase.AWAKE),
        (at("00:05:10"), Phase.GOING_DOWN),
        (at("00:05:12"), Phase.ASLEEP_1),
        (at("00:20:00"), Phase.WAKING),
        (at("00:30:00"), Phase.STOPPED),
    ]
    assert chat.waits_us.tolist() == [0, -1, -1]
    assert chat.refused == {"hold_timeout": 1, "deployment_failed": 1}


def test_a_wake_that_fails_within_the_hold_refuses_its_requests_as_wake_failed() -> None:
    slow = replace(DURATIONS, wake_1=Fixed(value_us=700 * S))
    chat = replay_chat(
        [at("00:00:10"), at("00:20:00")], slow, end=at("01:00:00"), idle=SLEEP_AFTER_5_MIN,
        rules=Rules(idle=True, bounds=ProductBounds(startup_timeout_us=120 * S)),
    )  # fmt: skip
    assert chat.timeline.phases()[-1] == (at("00:22:00"), Phase.STOPPED)
    assert chat.waits_us.tolist() == [0, -1]
    assert chat.refused == {"wake_failed": 1}


def test_a_request_held_past_max_hold_s_is_refused_and_the_wake_goes_on() -> None:
    slow = replace(DURATIONS, sleep_1=Fixed(value_us=250 * S), wake_1=Fixed(value_us=500 * S))
    chat = replay_chat(
        [at("00:00:10"), at("00:05:20"), at("00:17:00")], slow, end=at("00:30:00"),
        idle=SLEEP_AFTER_5_MIN,
    )  # fmt: skip
    # Down at 00:09:20, up at 00:17:40: 740 s for the first held request, past the 600 s.
    assert chat.waits_us.tolist() == [0, -1, 40 * S]
    assert chat.refused == {"hold_timeout": 1}
    assert (at("00:17:40"), Phase.AWAKE) in chat.timeline.phases()


def test_a_stop_past_the_grace_period_is_killed_after_it() -> None:
    slow = replace(DURATIONS, stop=Fixed(value_us=100 * S))
    chat = replay_chat(
        [at("00:00:10")], slow, end=at("01:00:00"), idle=IdleLadder(stop_after_us=600 * S)
    )
    assert chat.timeline.phases() == [
        (at("00:00:00"), Phase.AWAKE),
        (at("00:10:10"), Phase.GOING_DOWN),
        (at("00:10:40"), Phase.STOPPED),  # SIGKILL after 30 s
    ]


@settings(max_examples=40, deadline=None)
@given(
    gaps_s=st.lists(st.integers(1, 4 * 3600), min_size=1, max_size=20),
    steps_s=st.lists(st.integers(60, 3 * 3600), min_size=3, max_size=3, unique=True),
    taken=st.tuples(st.booleans(), st.booleans(), st.booleans()),
    medians_s=st.lists(st.integers(1, 120), min_size=6, max_size=6),
    sigma=st.floats(0, 4),
    bounds_s=st.tuples(
        st.integers(1, 600), st.integers(1, 900), st.integers(1, 60), st.integers(1, 900)
    ),
    histogram=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_no_action_outlasts_its_bound_and_no_request_waits_past_the_hold(
    gaps_s: list[int],
    steps_s: list[int],
    taken: tuple[bool, bool, bool],
    medians_s: list[int],
    sigma: float,
    bounds_s: tuple[int, int, int, int],
    histogram: bool,
    seed: int,
) -> None:
    start, end = at("00:00:00"), at("00:00:00", day=3)
    requests, now = [], start
    for gap in gaps_s:
        now += gap * S
        requests.append(now)
    sleep, deepen, stop = (
        s * S if keep else None for s, keep in zip(sorted(steps_s), taken, strict=True)
    )
    ladder = IdleLadder(sleep_after_us=sleep, deepen_after_us=deepen, stop_after_us=stop)
    # Lognormal tails up to a day (sigma 4: a median's 1 in 10,000 draw is 2,900 times it).
    times = ServerTimes(
        **{
            step: LogNormal(median_us=median * S, sigma=sigma)
            for step, median in zip(
                ("start", "stop", "sleep_1", "sleep_2", "wake_1", "wake_2"), medians_s, strict=True
            )
        }
    )
    sleep_s, startup_s, grace_s, hold_s = bounds_s
    bounds = ProductBounds(
        sleep_timeout_us=sleep_s * S, startup_timeout_us=startup_s * S,
        stop_grace_us=grace_s * S, max_hold_us=hold_s * S,
    )  # fmt: skip
    rules = Rules(idle=True, histogram=histogram, bounds=bounds)
    chat = lab_deployment(durations=times, idle=ladder if not ladder.is_off else SLEEP_AFTER_5_MIN)
    found = replay_fleet(
        Trace.of([(request, "chat") for request in requests if request < end]), lab_fleet(chat),
        rules, start_us=start, end_us=end, seed=seed,
    )["chat"]  # fmt: skip
    phases = found.timeline.phases()
    bound = {
        Phase.GOING_DOWN: max(bounds.sleep_timeout_us, bounds.stop_grace_us),
        Phase.WAKING: bounds.startup_timeout_us,
        Phase.STARTING: bounds.startup_timeout_us,
    }
    for (began, phase), (ended, _) in zip(phases, [*phases[1:], (end, Phase.AWAKE)], strict=True):
        if phase not in RESTING:
            assert ended - began <= bound[phase], (phase, began, ended)
    waits = found.waits_us
    assert ((waits == -1) | ((waits >= 0) & (waits <= bounds.max_hold_us))).all(), waits.max()
    assert int((waits == -1).sum()) == sum(found.refused.values())
