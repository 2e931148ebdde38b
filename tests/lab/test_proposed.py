"""Proposals learned on a trace's first weeks by the product's proposer, accepted, replayed."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest
from decider.traffickit import Minute, add_deployment, add_minutes
from lab.labkit import lab_deployment, lab_fleet
from support import at

from dgxmm.clock import ManualClock
from dgxmm.decider.profiles import ProfileService
from dgxmm.decider.proposals import Decision, Outcome, Readiness
from dgxmm.decider.proposals.candidates import Candidate
from dgxmm.decider.proposals.report import Considered
from dgxmm.decider.proposals.service import ProposalService
from dgxmm.decider.schedules import ScheduleAction, ScheduleService
from dgxmm.fleet import Fleet, Gpu, GpuInventory, InventorySource
from dgxmm.lab import LabFleet, LabSchedule, Trace, office_hours, replay_schedules
from dgxmm.lab.replay.proposed import (
    learn_proposals,
    learned_schedules,
    learning_end_us,
    minute_series,
)
from dgxmm.lab.traces.trace import Ints
from dgxmm.store import Store
from dgxmm.time_units import DAY_US, HOUR_US, MINUTE_US, WEEK_US

ZONE = "Europe/Berlin"
JUNE = at("2026-06-01T00:00:00+02:00")  # a Monday, far from a change of clocks
SLEEP, WAKE = ScheduleAction.SLEEP, ScheduleAction.WAKE
MON_TO_THU, TUE_TO_FRI, FRIDAY, MONDAY, TUESDAY = 0b1111, 0b11110, 0b10000, 0b1, 0b10
# What an admin accepting everything gets for office hours 08:00-18:00 on weekdays: asleep
# from the close, awake 15 minutes before the opening, weekdays and over the weekend.
OFFICE_SCHEDULES = (
    LabSchedule(action=SLEEP, days=MON_TO_THU, time="18:00", time_zone=ZONE),
    LabSchedule(action=WAKE, days=TUE_TO_FRI, time="07:45", time_zone=ZONE),
    LabSchedule(action=SLEEP, days=FRIDAY, time="18:00", time_zone=ZONE),
    LabSchedule(action=WAKE, days=MONDAY, time="07:45", time_zone=ZONE),
)
CHAT = lab_deployment(model="llama", time_zone=ZONE)
# Given by the fleet file: a sleep on Sunday nights, kept first, whatever is learned.
SUNDAY_NIGHT = (
    LabSchedule(action=SLEEP, days=64, time="23:00", time_zone=ZONE),
    LabSchedule(action=WAKE, days=1, time="06:00", time_zone=ZONE),
)


def office(start_us: int = JUNE, weeks: int = 4) -> Trace:
    """Weekdays 08:00 to 18:00 in Berlin, nothing outside: a quiet evening, night, weekend."""
    return office_hours("llama", start_us=start_us, weeks=weeks, seed=7, outside_per_day=0.0)


def with_request(trace: Trace, at_us: int) -> Trace:
    arrivals = sorted([*trace.at_us.tolist(), at_us])
    return Trace.of([(instant, "llama") for instant in arrivals])


def learned(trace: Trace, fleet: LabFleet, weeks: int, start_us: int = JUNE) -> LabFleet:
    return learned_schedules(
        trace, fleet, learn_start_us=start_us, learn_end_us=start_us + weeks * WEEK_US
    )


def test_it_learns_sleep_at_the_close_and_wake_before_the_opening_on_weekdays() -> None:
    fleet = lab_fleet(replace(CHAT, schedules=SUNDAY_NIGHT))

    found = learned(office(), fleet, weeks=3)

    assert found.deployment("chat").schedules == (*SUNDAY_NIGHT, *OFFICE_SCHEDULES)
    assert found.gpus == fleet.gpus


def test_the_held_out_week_under_the_accepted_schedules_frees_memory_and_meets_no_one_cold() -> (
    None
):
    trace, end = office(), JUNE + 4 * WEEK_US
    held_out = learning_end_us(JUNE, end)
    fleet = learned_schedules(trace, lab_fleet(CHAT), learn_start_us=JUNE, learn_end_us=held_out)

    replayed = replay_schedules(trace, fleet, start_us=held_out, end_us=end, seed=1)["chat"]
    ledger = replayed.ledger("chat", CHAT.footprint)

    assert held_out == JUNE + 3 * WEEK_US
    assert ledger.requests > 500
    assert ledger.cold == 0  # awake 15 minutes before the first request of each morning
    assert (ledger.sleeps, ledger.wakes) == (5, 4)  # Friday's sleep lasts past the span
    assert ledger.held_awake_gib_h < 0.4 * ledger.always_on_gib_h


def test_on_two_weeks_the_rules_propose_nothing_and_a_model_that_says_propose_does() -> None:
    trace, fleet = office(), lab_fleet(CHAT)
    two_weeks = JUNE + 2 * WEEK_US

    by_rules = learn_proposals(trace, fleet, learn_start_us=JUNE, learn_end_us=two_weeks)
    by_model = learn_proposals(
        trace, fleet, learn_start_us=JUNE, learn_end_us=two_weeks, model=Yes()
    )

    assert by_rules["chat"].accepted == ()
    considered = by_rules["chat"].decided.considered
    assert [c.outcome for c in considered] == [Outcome.NOT_PROPOSED] * 5
    assert "at least 3 observed weeks" in considered[0].reason
    assert by_model["chat"].accepted == OFFICE_SCHEDULES
    assert {v.source for v in by_model["chat"].decided.verdicts} == {"yes"}
    assert learned(trace, fleet, weeks=2) == fleet  # nothing proposed: the schedules as given


class Yes:
    """A decision model that proposes every candidate, sure of it."""

    name = "yes"

    def ready(self) -> Readiness:
        return Readiness(ready=True, reason="always")

    def decide(self, candidate: Candidate) -> Decision:
        return Decision(propose=True, confidence=1.0, reason=f"{candidate.sleep_time} is fine")


def test_a_trace_with_no_quiet_gap_proposes_nothing() -> None:
    every_ten_minutes = Trace.of(
        [(JUNE + i * 10 * MINUTE_US, "llama") for i in range(4 * WEEK_US // (10 * MINUTE_US))]
    )
    fleet = lab_fleet(replace(CHAT, schedules=SUNDAY_NIGHT))

    found = learn_proposals(
        every_ten_minutes, fleet, learn_start_us=JUNE, learn_end_us=JUNE + 3 * WEEK_US
    )["chat"]

    assert found.decided.verdicts == ()
    assert found.decided.considered == ()  # not one idle window to consider
    assert learned(every_ten_minutes, fleet, weeks=3) == fleet


def test_a_request_in_the_held_out_weeks_changes_nothing_and_one_in_the_learning_weeks_does() -> (
    None
):
    trace, fleet = office(), lab_fleet(CHAT)
    tuesday_2am = at("2026-06-02T02:00:00+02:00")

    later = learned(with_request(trace, tuesday_2am + 3 * WEEK_US), fleet, weeks=3)
    earlier = learned(with_request(trace, tuesday_2am + WEEK_US), fleet, weeks=3)

    assert later == learned(trace, fleet, weeks=3)
    # Tuesday's 02:00 hour was busy in one of three weeks: Monday night splits round it,
    # asleep 18:00 to 01:45 and 03:00 to 07:45; the other nights are as before.
    assert earlier.deployment("chat").schedules == (
        LabSchedule(action=SLEEP, days=TUESDAY, time="03:00", time_zone=ZONE),
        LabSchedule(action=WAKE, days=TUESDAY, time="07:45", time_zone=ZONE),
        LabSchedule(action=SLEEP, days=MONDAY, time="18:00", time_zone=ZONE),
        LabSchedule(action=WAKE, days=TUESDAY, time="01:45", time_zone=ZONE),
        LabSchedule(action=SLEEP, days=0b1110, time="18:00", time_zone=ZONE),
        LabSchedule(action=WAKE, days=0b11100, time="07:45", time_zone=ZONE),
        *OFFICE_SCHEDULES[2:],
    )


def test_only_the_last_30_days_of_the_learning_weeks_are_seen_as_in_the_product() -> None:
    trace, fleet = office(weeks=6), lab_fleet(CHAT)
    tuesday_2am = at("2026-06-02T02:00:00+02:00")  # 34 days before the end of 5 weeks

    assert learned(with_request(trace, tuesday_2am), fleet, weeks=5) == learned(
        trace, fleet, weeks=5
    )


def test_a_proposal_whose_schedules_the_fleet_file_gives_is_not_accepted_again() -> None:
    fleet = lab_fleet(replace(CHAT, schedules=OFFICE_SCHEDULES[:2]))

    found = learn_proposals(office(), fleet, learn_start_us=JUNE, learn_end_us=JUNE + 3 * WEEK_US)

    assert [v.candidate.sleep_days for v in found["chat"].blocked] == [MON_TO_THU]
    assert found["chat"].accepted == OFFICE_SCHEDULES[2:]


def test_the_rules_propose_nothing_for_a_deployment_of_priority_90() -> None:
    fleet = lab_fleet(replace(CHAT, priority=90))

    assert learned(office(), fleet, weeks=3) == fleet


@pytest.mark.parametrize(
    ("days", "learn_days"),
    [
        pytest.param(28, 21, id="4-weeks-learn-3"),
        pytest.param(56, 28, id="8-weeks-learn-half"),
        pytest.param(21, 14, id="3-weeks-keep-a-week"),
        pytest.param(14, 7, id="2-weeks-learn-half"),
        pytest.param(10, 5, id="10-days-learn-half"),
    ],
)
def test_learning_takes_half_the_span_but_three_weeks_when_a_week_is_left(
    days: int, learn_days: int
) -> None:
    assert learning_end_us(JUNE, JUNE + days * DAY_US + HOUR_US) == JUNE + learn_days * DAY_US


def test_the_minutes_are_the_rollups_of_a_running_server_in_the_span() -> None:
    since, until = JUNE + 30 * 1_000_000, JUNE + 3 * MINUTE_US + 1  # mid-minute, past one
    arrivals = np.asarray(
        [JUNE, since, JUNE + MINUTE_US, JUNE + MINUTE_US + 5, until - 1, until], dtype=np.int64
    )

    series = minute_series(arrivals, ZONE, since_us=since, until_us=until)

    # Minutes that start in the span: 00:01, 00:02, 00:03 (the first starts before it).
    assert series.minute_us.tolist() == [JUNE + m * MINUTE_US for m in (1, 2, 3)]
    assert series.requests.tolist() == [2, 0, 1]  # the arrival at until_us is not counted
    assert series.rpm.tolist() == [2.0, 0.0, 1.0]
    assert series.wall_s.tolist()[0] == (JUNE + MINUTE_US) // 1_000_000 + 2 * 3600


@pytest.mark.parametrize(
    "start",
    [
        pytest.param("2026-06-01T00:00:00+02:00", id="summer"),
        pytest.param("2026-03-16T00:00:00+01:00", id="across-the-change-of-clocks"),
    ],
)
def test_it_accepts_what_the_products_proposer_proposes_from_the_same_rollups(
    start: str, tmp_path: Path
) -> None:
    begin = at(start)
    end = begin + 3 * WEEK_US
    trace = office(begin, weeks=4)
    lab = learn_proposals(trace, lab_fleet(CHAT), learn_start_us=begin, learn_end_us=end)["chat"]

    product = product_accepts(trace.arrivals_of("llama"), begin, end, tmp_path)

    assert lab.accepted  # there is something to compare
    assert lab.accepted == product.accepted
    assert [(c.what, c.outcome, c.reason) for c in lab.decided.considered] == [
        (c.what, c.outcome, c.reason)
        for c in product.considered
        if c.outcome is not Outcome.PROPOSED
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProductRun:
    """What the product's run and accept made: its schedules, and what it considered."""

    accepted: tuple[LabSchedule, ...]
    considered: tuple[Considered, ...]


def product_accepts(arrivals: Ints, since: int, until: int, tmp_path: Path) -> ProductRun:
    """Store the minutes as the rollup job would, rebuild, propose and accept every proposal."""
    clock = ManualClock(until)
    store = Store.open(str(tmp_path / "store.db"), clock=clock, data_dir=tmp_path)
    inventory = GpuInventory(
        gpus=(Gpu(index=0, name="H100", memory_gib=80.0),),
        source=InventorySource.CONFIGURATION,
        note="configured for the test",
    )
    fleet = Fleet(store, inventory=inventory, clock=clock)
    try:
        deployment = add_deployment(store, "chat", zone=ZONE, priority=50, awake=70.0, asleep=2.0)
        counts = np.bincount((arrivals[arrivals < until] - since) // MINUTE_US)
        add_minutes(
            store,
            deployment,
            (
                Minute(
                    at_us=since + m * MINUTE_US,
                    requests=int(counts[m]) if m < len(counts) else 0,
                    latency_s=0.5 if m < len(counts) and counts[m] else None,
                )
                for m in range((until - since) // MINUTE_US)
            ),
        )
        schedules = ScheduleService(store, fleet, clock=clock)
        profiles = ProfileService(store, fleet.deployments, clock=clock)
        proposals = ProposalService(store, fleet, schedules, profiles=profiles, clock=clock)
        profiles.rebuild(now_us=until)
        (run,) = proposals.propose(now_us=until).deployments
        made = [
            schedule
            for proposal in sorted(run.open, key=lambda p: p.id)
            for schedule in proposals.accept(proposal.id, actor="admin")[1]
        ]
        return ProductRun(
            accepted=tuple(
                LabSchedule(
                    action=s.action,
                    days=s.days,
                    time=s.time,
                    time_zone=s.time_zone,
                    enabled=s.enabled,
                )
                for s in made
            ),
            considered=run.considered,
        )
    finally:
        fleet.close()
        store.close()
