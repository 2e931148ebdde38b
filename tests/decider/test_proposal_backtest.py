"""A proposal's backtest (issue 26, point 2): made with the proposal from the deployment's own
rollups, held out from the weeks it is tested on, and equal to a direct lab replay."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from decider.traffickit import add_deployment
from sqlalchemy import insert

from dgxmm.clock import ManualClock, to_us
from dgxmm.decider.profiles import ProfileService
from dgxmm.decider.proposals.realized import is_colder
from dgxmm.decider.proposals.service import ProposalService
from dgxmm.decider.schedules import ScheduleAction
from dgxmm.decider.schedules.service import ScheduleService
from dgxmm.fleet import Fleet, Gpu, InsightKind
from dgxmm.fleet.activity import Minute
from dgxmm.fleet.deployments.tables import metric_rollups
from dgxmm.lab.backtest import (
    Backtest,
    arrivals_of_minutes,
    proposal_backtester,
    shown_backtest,
)
from dgxmm.lab.fleetfile import LabDeployment, LabFleet, LabSchedule
from dgxmm.lab.ledger import Ledger
from dgxmm.lab.replay.fleet import Rules, replay_fleet
from dgxmm.lab.traces.trace import Trace
from dgxmm.store import Store, writing
from dgxmm.time_units import DAY_US, MINUTE_US

BERLIN = ZoneInfo("Europe/Berlin")


def office_minutes(start_us: int, end_us: int) -> tuple[np.ndarray, np.ndarray]:
    """Minutes of ``[start, end)``: 3 requests a minute on weekdays 08:00-18:00 Berlin."""
    minutes = np.arange(start_us, end_us, MINUTE_US, dtype=np.int64)
    requests = np.zeros(len(minutes), dtype=np.int64)
    for i, at in enumerate(minutes.tolist()):
        local = datetime.fromtimestamp(at / 1e6, BERLIN)
        if local.weekday() < 5 and 8 <= local.hour < 18:
            requests[i] = 3
    return minutes, requests


def store_rollups(store: Store, deployment: int, minutes: np.ndarray, requests: np.ndarray) -> None:
    rows = [
        {"deployment_id": deployment, "minute_us": int(m), "requests": int(n),
         "mean_running": 0.0, "mean_waiting": 0.0, "mean_latency_s": 0.1 if n else None,
         "samples": 1}
        for m, n in zip(minutes.tolist(), requests.tolist(), strict=True)
    ]  # fmt: skip
    with writing(store.engine) as connection:
        connection.execute(insert(metric_rollups), rows)


NOW = to_us(datetime(2026, 6, 1, tzinfo=BERLIN))  # a Monday, local midnight


def office_proposals(
    store: Store, fleet: Fleet, schedules: ScheduleService, clock: ManualClock
) -> tuple[ProposalService, int]:
    """An office deployment's 30 days of rollups, profiled and proposed on at ``NOW``."""
    clock.set(NOW)
    deployment = add_deployment(store, "office")
    minutes, requests = office_minutes(NOW - 30 * DAY_US, NOW)
    store_rollups(store, deployment, minutes, requests)
    profiles = ProfileService(store, fleet.deployments, clock=clock)
    proposals = ProposalService(
        store, fleet, schedules, profiles=profiles, clock=clock,
        backtest=proposal_backtester(fleet, schedules),
    )  # fmt: skip
    profiles.rebuild(deployment, now_us=NOW)
    proposals.propose(deployment, now_us=NOW)
    return proposals, deployment


def test_a_proposals_backtest_equals_a_direct_lab_replay(
    profile_store: Store,
    profile_fleet: Fleet,
    profile_schedules: ScheduleService,
    profile_clock: ManualClock,
) -> None:
    now = NOW
    proposals, deployment = office_proposals(
        profile_store, profile_fleet, profile_schedules, profile_clock
    )
    minutes, requests = office_minutes(now - 30 * DAY_US, now)
    made = proposals.list(deployment)
    assert made, "the office's nights and weekends are proposed"
    proposal = made[0]
    assert proposal.backtest is not None
    stored = Backtest.from_json(proposal.backtest)
    # 30 days: learned on 21, tested on 9, in two weeks (7 days, then 2).
    assert (stored.learned_from_us, stored.tested_from_us, stored.tested_until_us) == (
        now - 30 * DAY_US, now - 9 * DAY_US, now,
    )  # fmt: skip
    assert [w.end_us - w.start_us for w in stored.weeks] == [7 * DAY_US, 2 * DAY_US]
    # The last week is the span's rest, and says so (issue 45 point 10).
    assert [(w.days, w.is_partial) for w in stored.weeks] == [(7.0, False), (2.0, True)]
    assert [w.to_json()["partial"] for w in stored.weeks] == [False, True]
    assert stored.held_out  # the first 21 days make the same proposal
    assert stored.freed_gib_h > 0
    # The same figures from the lab directly: the same arrivals, the deployment alone with no
    # schedule in force, the proposal's two schedules added, its measured lead on.
    arrivals = arrivals_of_minutes(minutes, requests)
    trace = Trace(
        models=("office-model",), at_us=arrivals, model=np.zeros(len(arrivals), np.int64),
        input_tokens=np.full(len(arrivals), -1), output_tokens=np.full(len(arrivals), -1),
    )  # fmt: skip
    alone = LabDeployment(
        name="office", model="office-model", gpus=(0,), memory_gib_awake=40.0,
        memory_gib_asleep=4.0, memory_gib_asleep_2=4.0, sleep_level=1, priority=50,
        time_zone="Europe/Berlin",
    )  # fmt: skip
    proposed = alone.__class__(
        **{**{f: getattr(alone, f) for f in alone.__dataclass_fields__},
           "schedules": (
               LabSchedule(action=ScheduleAction.SLEEP, days=proposal.sleep_days,
                           time=proposal.sleep_time, time_zone=proposal.time_zone),
               LabSchedule(action=ScheduleAction.WAKE, days=proposal.wake_days,
                           time=proposal.wake_time, time_zone=proposal.time_zone),
           )}
    )  # fmt: skip
    machine = (Gpu(index=0, name="GPU", memory_gib=40.0),)
    span = {"start_us": stored.tested_from_us, "end_us": now, "seed": 1}
    before = replay_fleet(trace, LabFleet(gpus=machine, deployments=(alone,)), Rules(), **span)
    lead = Rules(measured_lead=frozenset({"office"}) if proposal.wake_lead else frozenset())
    after = replay_fleet(trace, LabFleet(gpus=machine, deployments=(proposed,)), lead, **span)
    for week in stored.weeks:
        held = []
        for replay in (before["office"], after["office"]):
            inside = (replay.arrivals_us >= week.start_us) & (replay.arrivals_us < week.end_us)
            held.append(
                Ledger.of(
                    "office", alone.footprint, replay.timeline.clipped(week.start_us, week.end_us),
                    replay.arrivals_us[inside], waits_us=replay.waits_us[inside],
                )
            )  # fmt: skip
        assert week.freed_gib_h == pytest.approx(held[0].held_gib_h - held[1].held_gib_h)
        assert (week.requests, week.cold) == (held[1].requests, held[1].cold)
        waits = held[1].waits_s
        assert week.wait_max_s == (pytest.approx(max(waits)) if waits else None)
        # The waits over every request and the cost at a price, as the lab gives them.
        assert week.held_gib_h == pytest.approx(held[1].held_gib_h)
        assert week.wait_total_s == pytest.approx(held[1].wait_total_s)
        assert week.wait_mean_s == pytest.approx(held[1].wait_mean_s)
        assert week.wait_p99_all_s == pytest.approx(held[1].wait_all_s(0.99))
        assert week.cost(1.0) == pytest.approx(held[1].cost(1.0))
        assert week.saves(1.0) == pytest.approx(held[0].cost(1.0) - held[1].cost(1.0))
    # The API gives it with the proposal.
    assert proposal.to_json()["backtest"]["cold"] == stored.cold
    # As shown (the API, the page): each week priced, the partial one marked.
    shown = shown_backtest(proposal.backtest, 1.0)
    assert shown is not None
    assert [w["saves"] for w in shown["weeks"]] == [
        pytest.approx(w.saves(1.0), abs=1e-5) for w in stored.weeks
    ]
    assert [w["partial"] for w in shown["weeks"]] == [False, True]


def test_minutes_become_arrivals_spread_inside_each_minute() -> None:
    minutes = np.asarray([0, MINUTE_US, 2 * MINUTE_US], dtype=np.int64)
    found = arrivals_of_minutes(minutes, np.asarray([2, 0, 1]))
    assert found.tolist() == [15_000_000, 45_000_000, 2 * MINUTE_US + 30_000_000]
    assert arrivals_of_minutes(minutes, np.zeros(3, dtype=np.int64)).tolist() == []


@pytest.mark.parametrize(
    ("realized", "predicted", "colder"),
    [
        pytest.param(0, 0.0, False, id="none"),
        pytest.param(9, 0.0, False, id="a-few-stray"),
        pytest.param(10, 0.0, True, id="ten-over-none"),
        pytest.param(20, 10.0, False, id="twice-is-not-past"),
        pytest.param(21, 10.0, True, id="past-twice-and-ten-more"),
        pytest.param(210, 100.0, True, id="large"),
        pytest.param(150, 100.0, False, id="within-twice"),
    ],
)
def test_the_margin_of_colder_than_predicted(realized: int, predicted: float, colder: bool) -> None:
    assert is_colder(realized, predicted) is colder


def test_an_accepted_proposals_weeks_stand_beside_its_backtest_and_a_cold_one_is_told(
    profile_store: Store,
    profile_fleet: Fleet,
    profile_schedules: ScheduleService,
    profile_clock: ManualClock,
) -> None:
    now = NOW
    proposals, deployment = office_proposals(
        profile_store, profile_fleet, profile_schedules, profile_clock
    )
    proposal = proposals.list(deployment)[0]
    assert proposal.backtest is not None
    assert proposal.backtest["cold"] == 0
    accepted, _ = proposals.accept(proposal.id, actor="user:alice")
    # The week after: 30 requests held while it woke (the backtest said none would wait).
    profile_fleet.request_minutes.add(
        {(deployment, now + 2 * DAY_US): Minute(requests=30, held=30, waits_ms=[2000] * 30)}
    )
    later = now + 8 * DAY_US
    (first, second) = proposals.realized(accepted, later)
    assert (first.first_day, first.days, first.cold, first.requests) == ("2026-06-01", 7, 30, 30)
    assert first.predicted_cold == 0.0
    # What they waited, beside what the backtest's weeks waited (issue 42): 30 x 2 s.
    assert first.wait_total_s == pytest.approx(60.0)
    assert first.predicted_wait_total_s == 0.0
    assert first.colder_than_predicted
    assert second.days == 2  # the week under way, to today
    assert proposals.check_realized(later) == 1
    (insight,) = [i for i in profile_fleet.insights.list() if i.kind is InsightKind.PROPOSAL_COLDER]
    assert "met 30 cold requests" in insight.message
    assert proposals.check_realized(later) == 0  # one insight per proposal while it is open
