"""The savings report against a hand-made day: Berlin's 25-hour 2026-10-25, where the clocks
go back, in the deployment's zone, on both databases (issue 26, point 1)."""

from __future__ import annotations

import math
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import at

from dgxmm.clock import ManualClock
from dgxmm.decider.savings import Actor, SavingsReport, actor_of, parse_day
from dgxmm.decider.waits import Waits
from dgxmm.errors import InvalidInput
from dgxmm.fleet import DeploymentState, EventAction, EventOutcome, Fleet
from dgxmm.fleet.activity import Minute
from dgxmm.time_units import SECOND_US

NOW = at("2026-10-27T12:00:00+01:00")


def made_day(fleet: Fleet, clock: ManualClock) -> int:
    """A deployment with a hand-made history; return its id."""
    clock.set(at("2026-10-24T12:00:00+02:00"))
    deployment = fleet.deployments.create(
        actor="user:alice", name="berlin", model="m", backend="external",
        base_url="http://127.0.0.1:9", gpus=[0], memory_gib_awake=40.0, memory_gib_asleep=4.0,
        time_zone="Europe/Berlin",
    ).id  # fmt: skip

    def event(iso: str, action: EventAction, actor: str, state: DeploymentState,
              ready_s: float | None = None) -> None:  # fmt: skip
        clock.set(at(iso))
        ready = None if ready_s is None else (round(ready_s * SECOND_US), 0)
        fleet.events.record(
            deployment, action, actor=actor, outcome=EventOutcome.DONE, took=ready,
            state=state.value,
        )  # fmt: skip

    event("2026-10-24T20:00:00+02:00", EventAction.START, "user:alice", DeploymentState.RUNNING,
          ready_s=60)  # fmt: skip
    # The first 02:30 (summer time), then the second (winter time), an hour later.
    event("2026-10-25T02:30:00+02:00", EventAction.SLEEP, "schedule:1", DeploymentState.SLEEPING)
    event("2026-10-25T02:30:00+01:00", EventAction.WAKE, "request", DeploymentState.RUNNING,
          ready_s=30)  # fmt: skip
    event("2026-10-25T22:00:00+01:00", EventAction.STOP, "schedule:2", DeploymentState.STOPPED)
    # An event that changed nothing does not count; nor does one of another deployment.
    clock.set(at("2026-10-25T23:00:00+01:00"))
    fleet.events.record(deployment, EventAction.WAKE, actor="schedule:3",
                        outcome=EventOutcome.SKIPPED, detail="it is stopped")  # fmt: skip
    fleet.request_minutes.add(
        {
            (deployment, at("2026-10-25T02:29:00+01:00")): Minute(
                requests=3, held=2, waits_ms=[30_000, 12_000], refused={"hold_full": 1}
            ),
            (deployment, at("2026-10-25T10:00:00+01:00")): Minute(requests=5),
            # 23:30 UTC on the 25th is already the 26th in Berlin.
            (deployment, at("2026-10-25T23:30:00+00:00")): Minute(requests=7),
        }
    )
    # Added to the same minute's row, as a second flush within one minute does.
    fleet.request_minutes.add(
        {(deployment, at("2026-10-25T10:00:00+01:00")): Minute(requests=1, held=1, waits_ms=[500])}
    )
    return deployment


def test_the_report_sums_a_hand_made_day_across_the_change_of_clocks(
    profile_fleet: Fleet, profile_clock: ManualClock
) -> None:
    deployment = made_day(profile_fleet, profile_clock)
    report = SavingsReport(profile_fleet)
    ((found, days),) = report.days(
        since=date(2026, 10, 24), until=date(2026, 10, 26), now_us=NOW, deployment_id=deployment
    )
    assert found.name == "berlin"
    first, changed, after = days
    # The 24th: created at 12:00, stopped until the start began at 19:59 (60 s to ready).
    assert first.hours == pytest.approx(12.0)
    assert first.held_awake_gib_h == pytest.approx(40.0 * (4 + 1 / 60))
    assert first.freed_gib_h == pytest.approx(40.0 * (8 - 1 / 60))
    assert first.starts == {"person": 1}
    # The 25th has 25 hours: awake 00:00-02:30 (summer), asleep until the wake began at
    # 02:29:30 (winter), awake until 22:00, stopped until midnight.
    assert changed.hours == pytest.approx(25.0)
    awake_h = 2.5 + (19 + 30.5 / 60)
    asleep_h = 59.5 / 60
    assert changed.held_awake_gib_h == pytest.approx(40.0 * awake_h)
    assert changed.held_asleep_gib_h == pytest.approx(4.0 * asleep_h)
    assert changed.freed_gib_h == pytest.approx(40.0 * 25 - 40.0 * awake_h - 4.0 * asleep_h)
    assert (changed.requests, changed.held, changed.cold) == (9, 3, 4)
    assert (changed.wait_p50_s, changed.wait_p99_s) == (12.0, 30.0)
    assert changed.refused == {"hold_full": 1}
    assert changed.wakes == {"request": 1}
    assert changed.starts == {}
    # Every request's wait (issue 42): 8 served (the refused one left out), 5 of them warm.
    shown = changed.to_json(price=0.1)
    assert shown["wait_total_s"] == pytest.approx(42.5)
    assert shown["wait_mean_s"] == pytest.approx(42.5 / 8)
    assert shown["wait_p99_all_s"] == 30.0  # the 8th of 8: the longest
    held = changed.held_awake_gib_h + changed.held_asleep_gib_h
    assert shown["cost"] == pytest.approx(held + 0.1 * 42.5, abs=1e-5)
    # Who put it down, and what each freed (issue 45): the schedule's sleep and its stop.
    assert (changed.sleeps, changed.stops) == ({"schedule": 1}, {"schedule": 1})
    assert changed.freed_by == {"schedule": pytest.approx(36.0 * asleep_h + 40.0 * 2)}
    assert sum(changed.freed_by.values()) == pytest.approx(changed.freed_gib_h)
    # Stopped as created until the first start: the system's, not a person's choice.
    assert first.freed_by == {"system": pytest.approx(first.freed_gib_h)}
    # The 26th: stopped all day, the 7 requests of 00:30 Berlin time, nothing held.
    assert after.hours == pytest.approx(24.0)
    assert (after.held_awake_gib_h, after.held_asleep_gib_h) == (0.0, 0.0)
    assert after.freed_gib_h == pytest.approx(40.0 * 24)
    assert (after.requests, after.held, after.wait_p50_s) == (7, 0, None)
    assert after.to_json()["day"] == "2026-10-26"
    assert after.freed_by == {"schedule": pytest.approx(40.0 * 24)}  # the stop of the 25th
    assert after.to_json()["wait_p99_all_s"] == 0.0


def test_a_day_not_over_counts_up_to_now(profile_fleet: Fleet, profile_clock: ManualClock) -> None:
    deployment = made_day(profile_fleet, profile_clock)
    ((_, (today,)),) = SavingsReport(profile_fleet).days(
        since=date(2026, 10, 25),
        until=date(2026, 10, 25),
        now_us=at("2026-10-25T03:00:00+01:00"),  # the 5th hour of the 25-hour day
        deployment_id=deployment,
    )
    assert today.hours == pytest.approx(4.0)
    assert today.held_awake_gib_h == pytest.approx(40.0 * (2.5 + 0.5 + 0.5 / 60))


@pytest.mark.parametrize(
    ("actor", "group"),
    [
        pytest.param("schedule:7", Actor.SCHEDULE, id="schedule"),
        pytest.param("request", Actor.REQUEST, id="request"),
        pytest.param("idle", Actor.IDLE, id="idle"),
        pytest.param("user:alice", Actor.PERSON, id="person"),
        pytest.param("system", Actor.SYSTEM, id="system"),
        pytest.param(None, Actor.SYSTEM, id="unknown"),
    ],
)
def test_it_groups_actors(actor: str | None, group: Actor) -> None:
    assert actor_of(actor) is group


@pytest.mark.parametrize(
    "value", ["", "2026-13-01", "yesterday", "2026-1-1", None, 20261025, "2026-10-25T00:00"]
)
def test_it_refuses_a_day_that_is_not_a_date_naming_the_field(value: object) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_day(value, "from")
    assert refused.value.field == "from"


def test_it_refuses_a_span_backwards_or_past_a_year(profile_fleet: Fleet) -> None:
    report = SavingsReport(profile_fleet)
    with pytest.raises(InvalidInput, match="before from") as backwards:
        report.days(since=date(2026, 10, 25), until=date(2026, 10, 24), now_us=NOW)
    assert backwards.value.field == "to"
    with pytest.raises(InvalidInput, match="at most 366 days"):
        report.days(since=date(2025, 1, 1), until=date(2026, 10, 24), now_us=NOW)


def test_waits_past_the_kept_ones_stand_for_the_minute() -> None:
    """A minute that held more than it kept (``MAX_WAITS``): the kept waits stand for all."""
    waits = Waits.of_minutes([(3000, 0, 2500, [1000] * 1000 + [3000] * 1000)])
    assert (waits.served, waits.held) == (3000, 2500)
    assert waits.total_s == pytest.approx(2500 * 2.0)  # 2 s on average, 2,500 times
    assert waits.mean_s == pytest.approx(2500 * 2.0 / 3000)
    assert waits.all_rank_s(0.10) == 0.0  # a warm one: 500 of 3,000
    assert waits.all_rank_s(0.99) == 3.0
    assert waits.held_rank_s(0.5) == 1.0
    together = Waits.merged([waits, Waits.of_minutes([(10, 2, 0, [])])])
    assert (together.served, together.held) == (3008, 2500)
    assert together.cost(100.0, 1.0) == pytest.approx(100.0 + 5000.0)


@settings(max_examples=200, deadline=None)
@given(
    minutes=st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=30),  # warm requests served
            st.integers(min_value=0, max_value=3),  # refused
            st.lists(st.integers(min_value=0, max_value=120_000), max_size=20),  # held waits
        ),
        max_size=8,
    ),
    share=st.sampled_from([0.5, 0.9, 0.99, 1.0]),
)
def test_waits_below_the_kept_bound_are_exact_over_every_request(
    minutes: list[tuple[int, int, list[int]]], share: float
) -> None:
    """The waits of every request served, a warm one as 0, by nearest rank, as if listed."""
    waits = Waits.of_minutes(
        (warm + refused + len(held), refused, len(held), held) for warm, refused, held in minutes
    )
    every = sorted([0] * sum(warm for warm, _, _ in minutes) + [w for *_, h in minutes for w in h])
    assert waits.served == len(every)
    assert waits.total_s == pytest.approx(sum(every) / 1000)
    assert waits.mean_s == pytest.approx(sum(every) / 1000 / len(every) if every else 0.0)
    expected = every[max(0, math.ceil(share * len(every)) - 1)] / 1000 if every else 0.0
    assert waits.all_rank_s(share) == expected
