"""The priced idle policy replayed (issue 42, point 3): its rungs at the replay's price, the
price's direction, a timed-out sleep tried again, and ``compare`` at each price.

Fixed durations (``FIXED_TIMES``, level 2's too) and a span shorter than a week, so that no
profile stretches the rungs: each expected instant is the decider's own rung, taken at the
first tick at or after it.
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import datetime

from lab.labkit import FIXED_TIMES, lab_deployment, lab_fleet

from dgxmm.decider.idle import IDLE_TICK_US
from dgxmm.decider.idle.priced import priced_ladder
from dgxmm.fleet import IdlePolicy
from dgxmm.lab import Fixed, LogNormal, Phase, Trace
from dgxmm.lab.compare import Policy, compare, priced_rules
from dgxmm.lab.replay.fleet import Rules, replay_fleet
from dgxmm.lab.replay.priced import PricedPlan
from dgxmm.lab.replay.server import PRODUCT_BOUNDS
from dgxmm.time_units import SECOND_US

S = SECOND_US
DURATIONS = replace(FIXED_TIMES, sleep_2=Fixed(value_us=1 * S), wake_2=Fixed(value_us=6 * S))
CHAT = lab_deployment(durations=DURATIONS)


def at(clock: str, day: int = 1) -> int:
    """Return the instant of a Berlin ``HH:MM:SS`` on 2026-06-``day`` (a Monday for day 1)."""
    return int(datetime.fromisoformat(f"2026-06-{day:02d}T{clock}+02:00").timestamp()) * S


def tick(instant: int) -> int:
    return math.ceil(instant / IDLE_TICK_US) * IDLE_TICK_US


def test_it_goes_down_at_the_deciders_rungs_at_the_replays_price() -> None:
    start, request = at("00:00:00"), at("00:10:00")
    plan = PricedPlan(CHAT, Trace.of([]).arrivals_of("chat"), price=0.1, start_us=start)
    rungs = priced_ladder(plan.costs, price=0.1)
    assert rungs.sleep_after_us is not None
    assert rungs.stop_after_us is not None
    chat = replay_fleet(
        Trace.of([(request, "chat")]), lab_fleet(CHAT), priced_rules(0.1),
        start_us=start, end_us=at("06:00:00"), seed=7,
    )["chat"]  # fmt: skip
    phases = chat.timeline.phases()
    assert phases[0] == (start, Phase.AWAKE)
    # Idle from the start, until the request: the first rung after the start, then again.
    assert phases[1] == (tick(start + rungs.sleep_after_us), Phase.GOING_DOWN)
    # After the request, none in the ten minutes before it: the rate before idling is 0,
    # and the rungs come down to a quarter.
    alone = priced_ladder(plan.costs, price=0.1, recent_per_hour=0.0)
    assert alone.sleep_after_us is not None
    assert alone.sleep_after_us < rungs.sleep_after_us
    down_again = [when for when, phase in phases if phase is Phase.GOING_DOWN and when > request]
    assert down_again[0] == tick(request + 4 * S + alone.sleep_after_us)  # after its 4 s wake
    assert phases[-1][1] is Phase.STOPPED
    assert chat.waits_us.tolist() == [4 * S]  # the request met level 1 and its wake


def test_a_dearer_wait_holds_the_model_up_longer_and_makes_fewer_people_wait() -> None:
    requests = [(at("09:00:00") + k * 97 * S, "chat") for k in range(300)]
    trace = Trace.of(requests)
    cheap, dear = (
        replay_fleet(trace, lab_fleet(CHAT), priced_rules(price), start_us=at("08:00:00"),
                     end_us=at("20:00:00"), seed=7)["chat"].ledger("chat", CHAT.footprint)
        for price in (0.001, 10.0)
    )  # fmt: skip
    assert dear.held_awake_gib_h > cheap.held_awake_gib_h
    assert dear.wait_total_s < cheap.wait_total_s


def test_a_timed_out_sleep_is_tried_again_and_does_not_pause_the_policy() -> None:
    # Every sleep takes longer than a sleep timeout of half a second: each one times out.
    rules = replace(priced_rules(0.1), bounds=replace(PRODUCT_BOUNDS, sleep_timeout_us=S // 2))
    chat = replay_fleet(
        Trace.of([]), lab_fleet(CHAT), rules, start_us=at("00:00:00"), end_us=at("06:00:00"),
        seed=7,
    )["chat"]  # fmt: skip
    # Tried again 15 minutes after each; the third in a row pauses the idle policy.
    assert chat.steps["sleeps timed out"] == 3
    downs = [when for when, phase in chat.timeline.phases() if phase is Phase.GOING_DOWN]
    assert downs[1] - downs[0] == 901 * S  # its end, 15 minutes on, at the next tick
    assert downs[-1] < at("01:00:00")  # paused after the third: nothing more


def test_compare_replays_priced_at_its_price_and_again_when_repriced() -> None:
    machine = lab_fleet(
        replace(CHAT, durations=replace(DURATIONS, wake_1=LogNormal.of_p90(S, 4 * S)))
    )
    requests = [(at("09:00:00") + k * 131 * S, "chat") for k in range(200)]
    trace = Trace.of(requests)
    start, end = at("08:00:00"), at("20:00:00")
    found = compare(trace, machine, start_us=start, end_us=end, seed=3, price=0.01)
    assert Policy.PRICED in found.ledgers
    dear = found.repriced(machine, 10.0, trace)
    assert dear.total(Policy.PRICED).wait_total_s < found.total(Policy.PRICED).wait_total_s
    kept = found.repriced(machine, 10.0)  # without the trace, priced keeps its choices
    assert kept.total(Policy.PRICED) == found.total(Policy.PRICED)


def test_a_deployment_whose_file_names_priced_plays_it_under_the_idle_rules() -> None:
    requests = [(at("09:00:00") + k * 131 * S, "chat") for k in range(50)]
    own = lab_fleet(replace(CHAT, idle_policy=IdlePolicy.PRICED))
    span = {"start_us": at("08:00:00"), "end_us": at("12:00:00"), "seed": 7}
    mine = replay_fleet(Trace.of(requests), own, Rules(idle=True), **span)["chat"]
    priced = replay_fleet(Trace.of(requests), lab_fleet(CHAT), priced_rules(0.1), **span)["chat"]
    assert mine.timeline.phases() == priced.timeline.phases()
    schedules_only = replay_fleet(Trace.of(requests), own, Rules(), **span)["chat"]
    assert schedules_only.timeline.phases() == [(at("08:00:00"), Phase.AWAKE)]


def test_after_a_week_it_wakes_ahead_of_the_days_regular_start() -> None:
    # Every day, 30 requests a minute apart from 13:00:30, nothing else; a small model whose
    # 4 s wake, at 1 GiB-h a request-second, is worth far more than half a GiB held a minute.
    small = replace(CHAT, memory_gib_awake=1.0, memory_gib_asleep=0.5, memory_gib_asleep_2=0.25)
    requests = [
        (at("13:00:30", day) + k * 60 * S, "chat") for day in range(1, 15) for k in range(30)
    ]
    chat = replay_fleet(
        Trace.of(requests), lab_fleet(small), priced_rules(1.0), start_us=at("00:00:00"),
        end_us=at("00:00:00", 15), seed=7,
    )["chat"]  # fmt: skip
    firsts = chat.waits_us[::30].tolist()  # each day's first request
    assert all(wait > 0 for wait in firsts[:7])  # the first week: no profile, woken by it
    assert firsts[7:] == [0] * 7  # then up 4 s before 13:00, every day
    assert chat.steps["pre-wakes"] == 7
