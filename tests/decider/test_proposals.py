"""Proposals from stored profiles: the 7-day rule, the model and its threshold, the rules when
it cannot be asked, accepting, dismissing, and not proposing twice. On SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from decider.chatkit import ChatServer
from decider.traffickit import Minute, add_deployment, add_minutes, hours, idle_days, store_profile
from support import at

from dgxmm.clock import ManualClock
from dgxmm.decider.proposals.report import Outcome
from dgxmm.decider.proposals.rows import ProposalStatus
from dgxmm.decider.proposals.service import ProposalService
from dgxmm.decider.schedules.service import ScheduleService
from dgxmm.errors import Conflict, InvalidInput, NotFound
from dgxmm.fleet import Fleet
from dgxmm.store import Store

ALICE = "user:alice"
MONDAY_TO_FRIDAY, TUESDAY_TO_SATURDAY = 31, 62


def _weeknights(hour: int) -> bool:
    """Idle from 22:00 to 07:00 after each of Monday to Friday; busy otherwise."""
    day, at_hour = divmod(hour, 24)
    return (at_hour >= 22 and day <= 4) or (at_hour < 7 and 1 <= day <= 5)


@pytest.fixture
def deployment(profile_store: Store, profile_clock: ManualClock) -> Callable[..., int]:
    """Make a deployment with a stored profile (idle weeknights) and days of idle rollups."""

    def make(
        *,
        idle: Callable[[int], bool] = _weeknights,
        observed: int = 4,
        idle_weeks: int | None = None,
        priority: int = 50,
        days: int = 7,
        name: str = "llama",
    ) -> int:
        made = add_deployment(profile_store, name, priority=priority)
        now = profile_clock.now_us()
        profile = hours(idle, observed=observed, idle_weeks=idle_weeks)
        store_profile(profile_store, made, profile, now)
        idle_days(profile_store, made, "Europe/Berlin", now, days)
        return made

    return make


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    server = ChatServer()
    yield server
    server.close()


def _open(proposals: ProposalService, deployment: int) -> list[tuple[int, str, int, str, str]]:
    return [
        (p.sleep_days, p.sleep_time, p.wake_days, p.wake_time, p.source)
        for p in proposals.list(deployment, status=ProposalStatus.OPEN)
    ]


WEEKNIGHTS_BY_RULES = [(MONDAY_TO_FRIDAY, "22:00", TUESDAY_TO_SATURDAY, "06:45", "rules")]


@pytest.mark.parametrize(
    ("days", "made"), [(6, []), (7, WEEKNIGHTS_BY_RULES)], ids=["6 days", "7 days"]
)
def test_proposals_need_7_local_days_of_data(
    proposals: ProposalService, deployment: Callable[..., int], days: int, made: list[object]
) -> None:
    d = deployment(days=days)
    (run,) = proposals.propose(d).deployments
    assert _open(proposals, d) == made
    if days < 7:
        assert run.note == "proposals need 7 local days of data; it has 6"


def test_the_rules_propose_when_the_model_is_switched_off(
    proposals: ProposalService, deployment: Callable[..., int]
) -> None:
    proposals.set_settings({"enabled": False}, actor=ALICE)
    d = deployment()
    run = proposals.propose(d)
    assert run.model is None
    assert run.model_reason == "the decision model is switched off"
    (proposal,) = proposals.list(d)
    assert (proposal.source, proposal.confidence, proposal.status) == (
        "rules",
        1.0,
        ProposalStatus.OPEN,
    )
    assert (
        proposal.description == "sleep Monday to Friday at 22:00, wake Tuesday to Saturday at 06:45"
    )
    evidence = proposal.evidence
    assert (evidence["source"], evidence["confidence"]) == ("rules", 1.0)
    assert (evidence["weeks_observed"], evidence["weeks_idle"], evidence["hours"]) == (4, 4, 9)
    assert evidence["requests_30d"] == 0
    assert evidence["gpu_memory_gib_hours_per_week"] == pytest.approx(36 * 8.75 * 5)


def test_the_rules_propose_when_the_model_is_not_ready(
    proposals: ProposalService, deployment: Callable[..., int]
) -> None:
    d = deployment()  # the feedback model, with no decisions to learn from
    run = proposals.propose(d)
    assert run.model is None
    assert "20 accepted and 20 dismissed" in run.model_reason
    assert _open(proposals, d) == WEEKNIGHTS_BY_RULES


@pytest.mark.parametrize(
    ("observed", "made"),
    [(3, WEEKNIGHTS_BY_RULES), (2, [])],
    ids=["idle in every one of 3 weeks", "of 2 weeks"],
)
def test_the_rules_alone_need_three_idle_weeks(
    proposals: ProposalService, deployment: Callable[..., int], observed: int, made: list[object]
) -> None:
    d = deployment(observed=observed)
    (run,) = proposals.propose(d).deployments
    assert _open(proposals, d) == made
    if not made:
        assert {c.outcome for c in run.considered} == {Outcome.NOT_PROPOSED}
        assert "at least 3 observed weeks" in run.considered[0].reason


@pytest.mark.parametrize(
    ("priority", "made"), [(89, WEEKNIGHTS_BY_RULES), (90, [])], ids=["priority 89", "priority 90"]
)
def test_the_rules_alone_never_propose_for_priority_90(
    proposals: ProposalService, deployment: Callable[..., int], priority: int, made: list[object]
) -> None:
    d = deployment(priority=priority)
    (run,) = proposals.propose(d).deployments
    assert _open(proposals, d) == made
    if not made:
        (considered,) = run.considered
        assert "priority 90 or above (it has 90)" in considered.reason


def test_the_rules_never_propose_a_window_idle_in_9_of_10_weeks(
    proposals: ProposalService, deployment: Callable[..., int]
) -> None:
    d = deployment(observed=10, idle_weeks=9)
    (run,) = proposals.propose(d).deployments
    assert _open(proposals, d) == []
    assert len([c for c in run.considered if c.outcome is Outcome.NOT_PROPOSED]) == 5


@pytest.mark.parametrize(
    ("threshold", "made"),
    [(0.8, [(MONDAY_TO_FRIDAY, "22:00", TUESDAY_TO_SATURDAY, "06:45", "openai")]), (0.81, [])],
    ids=["confidence 0.8 at threshold 0.8", "below threshold 0.81"],
)
def test_the_model_proposes_at_or_above_its_threshold(
    proposals: ProposalService,
    deployment: Callable[..., int],
    chat: ChatServer,
    threshold: float,
    made: list[object],
) -> None:
    chat.verdict(True, 0.8, "idle every weeknight")
    proposals.set_settings(
        {"model": "openai", "threshold": threshold, "endpoint": {"base_url": chat.base_url}},
        actor=ALICE,
    )
    d = deployment()
    run = proposals.propose(d)
    assert run.model == "openai"
    assert len(chat.requests) == 1  # one candidate: the five weeknights together
    assert chat.requests[0]["model"] == "judge-1"
    assert "Monday to Friday at 22:00" in chat.requests[0]["messages"][1]["content"]
    assert _open(proposals, d) == made
    if made:
        (proposal,) = proposals.list(d)
        assert proposal.confidence == 0.8
        assert proposal.evidence["reason"] == "idle every weeknight"
    else:
        (considered,) = run.deployments[0].considered
        assert considered.outcome is Outcome.NOT_PROPOSED
        assert "confidence 0.80 (threshold 0.81)" in considered.reason


def test_a_model_saying_skip_is_not_overruled_by_the_rules(
    proposals: ProposalService, deployment: Callable[..., int], chat: ChatServer
) -> None:
    chat.verdict(False, 0.95, "people work late")
    proposals.set_settings(
        {"model": "openai", "endpoint": {"base_url": chat.base_url}}, actor=ALICE
    )
    d = deployment()
    proposals.propose(d)
    assert _open(proposals, d) == []


def test_the_rules_decide_a_candidate_the_model_cannot(
    proposals: ProposalService, deployment: Callable[..., int], chat: ChatServer
) -> None:
    chat.content = "I think sleeping at night is a fine idea."
    proposals.set_settings(
        {"model": "openai", "endpoint": {"base_url": chat.base_url}}, actor=ALICE
    )
    d = deployment()
    run = proposals.propose(d)
    assert run.model == "openai"
    assert _open(proposals, d) == WEEKNIGHTS_BY_RULES
    (proposal,) = proposals.list(d)
    assert "the openai model could not decide" in proposal.evidence["reason"]


def test_the_rules_decide_when_the_endpoint_is_asleep(
    proposals: ProposalService, deployment: Callable[..., int], chat: ChatServer
) -> None:
    chat.verdict(True, 0.99)
    chat.asleep = True
    proposals.set_settings(
        {"model": "openai", "endpoint": {"base_url": chat.base_url}}, actor=ALICE
    )
    d = deployment()
    run = proposals.propose(d)
    assert run.model is None
    assert run.model_reason == f"the chat endpoint at {chat.base_url} is asleep"
    assert chat.requests == []
    assert _open(proposals, d) == WEEKNIGHTS_BY_RULES


def test_accepting_creates_exactly_its_two_schedules(
    proposals: ProposalService,
    deployment: Callable[..., int],
    profile_schedules: ScheduleService,
    profile_fleet: Fleet,
) -> None:
    d = deployment()
    proposals.propose(d)
    (proposal,) = proposals.list(d)
    accepted, made = proposals.accept(proposal.id, actor=ALICE)
    schedules = profile_schedules.list(d)
    assert [
        (s.action.value, s.days, s.time, s.time_zone, s.enabled, s.creator) for s in schedules
    ] == [
        ("sleep", MONDAY_TO_FRIDAY, "22:00", "Europe/Berlin", True, ALICE),
        ("wake", TUESDAY_TO_SATURDAY, "06:45", "Europe/Berlin", True, ALICE),
    ]
    assert [s.id for s in made] == [s.id for s in schedules]
    assert accepted.status is ProposalStatus.ACCEPTED
    # Its wake lead was off: the proposal proposed the measured one, and accepting set it.
    assert (proposal.wake_lead, accepted.to_json()["wake_lead"]) == ("measured", "measured")
    assert profile_fleet.deployments.get(d).wake_lead.to_json() == "measured"
    assert (accepted.decided_by, accepted.sleep_schedule_id, accepted.wake_schedule_id) == (
        ALICE, schedules[0].id, schedules[1].id,
    )  # fmt: skip
    audit = profile_fleet.audit.list(actor=ALICE)
    assert [(e.action, e.subject) for e in reversed(audit)][-4:] == [
        ("schedule.create", "schedule"),
        ("schedule.create", "schedule"),
        ("deployment.update", "deployment"),
        ("proposal.accept", "proposal"),
    ]
    with pytest.raises(Conflict, match="is accepted, not open"):
        proposals.accept(proposal.id, actor=ALICE)
    with pytest.raises(Conflict):
        proposals.dismiss(proposal.id, actor=ALICE)
    assert len(profile_schedules.list(d)) == 2


def test_a_proposal_is_not_made_again_while_its_schedules_exist(
    proposals: ProposalService, deployment: Callable[..., int], profile_schedules: ScheduleService
) -> None:
    d = deployment()
    proposals.propose(d)
    (proposal,) = proposals.list(d)
    proposals.accept(proposal.id, actor=ALICE)
    (run,) = proposals.propose(d).deployments
    assert _open(proposals, d) == []
    assert [(c.outcome, c.reason) for c in run.considered] == [
        (Outcome.BLOCKED, "its schedules exist")
    ]
    for schedule in profile_schedules.list(d):
        profile_schedules.delete(schedule.id, actor=ALICE)
    proposals.propose(d)
    assert _open(proposals, d) == WEEKNIGHTS_BY_RULES


def test_a_dismissal_blocks_the_proposal_for_7_days(
    proposals: ProposalService, deployment: Callable[..., int], profile_clock: ManualClock
) -> None:
    d = deployment()
    proposals.propose(d)
    (proposal,) = proposals.list(d)
    dismissed = proposals.dismiss(proposal.id, actor=ALICE)
    assert (dismissed.status, dismissed.decided_by) == (ProposalStatus.DISMISSED, ALICE)
    # The feedback model learns from it.
    assert "there are 0 accepted and 1 dismissed so far" in proposals.model_status().reason
    profile_clock.advance(timedelta(days=7) - timedelta(minutes=1))
    (run,) = proposals.propose(d).deployments
    assert _open(proposals, d) == []
    assert run.considered[-1].reason == "it was dismissed less than 7 days ago"
    profile_clock.advance(timedelta(minutes=1))
    proposals.propose(d)
    assert _open(proposals, d) == WEEKNIGHTS_BY_RULES
    assert [p.status for p in proposals.list(d)] == [ProposalStatus.OPEN, ProposalStatus.DISMISSED]


def test_a_proposal_made_again_keeps_its_id_and_one_not_made_again_is_withdrawn(
    proposals: ProposalService,
    deployment: Callable[..., int],
    profile_store: Store,
    profile_clock: ManualClock,
) -> None:
    d = deployment()
    proposals.propose(d)
    (first,) = proposals.list(d)
    proposals.propose(d)
    (again,) = proposals.list(d)
    assert again.id == first.id
    busy_nights = hours(lambda hour: False)
    with profile_store.engine.begin() as connection:
        connection.exec_driver_sql(f"DELETE FROM traffic_profiles WHERE deployment_id = {d}")
    store_profile(profile_store, d, busy_nights, profile_clock.now_us())
    proposals.propose(d)
    assert proposals.list(d) == []


def test_the_evidence_counts_requests_in_the_window(
    proposals: ProposalService, deployment: Callable[..., int], profile_store: Store
) -> None:
    d = deployment()
    # Two minutes of Tuesday 23:00 local with requests; the profile says the hour is idle (as
    # when they fell in a week with fewer than 30 minutes of that hour observed).
    tuesday_23 = at("2026-05-26T23:40:00+02:00")  # idle_days filled :00 to :29
    add_minutes_with_requests = [
        Minute(at_us=tuesday_23, requests=3, running=1.0, latency_s=2.0),
        Minute(at_us=tuesday_23 + 60_000_000, requests=4, running=1.0, latency_s=2.0),
    ]
    add_minutes(profile_store, d, add_minutes_with_requests)
    proposals.propose(d)
    (proposal,) = proposals.list(d)
    assert proposal.evidence["requests_30d"] == 7
    assert [w["requests_30d"] for w in proposal.evidence["windows"]] == [0, 7, 0, 0, 0]


def test_unknown_things_are_not_found(proposals: ProposalService) -> None:
    with pytest.raises(NotFound):
        proposals.propose(999)
    with pytest.raises(NotFound):
        proposals.list(999)
    with pytest.raises(NotFound):
        proposals.accept(999, actor=ALICE)
    with pytest.raises(NotFound):
        proposals.dismiss(999, actor=ALICE)


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"threshold": 1.5}, "threshold"),
        ({"threshold": True}, "threshold"),
        ({"model": "oracle"}, "model"),
        ({"model": "openai"}, "endpoint"),
        ({"model": "openai", "endpoint": {"base_url": "ftp://x"}}, "endpoint.base_url"),
        ({"endpoint": {"base_url": "http://a", "deployment": "b"}}, "endpoint"),
        ({"endpoint": {"deployment": "b", "timeout_s": 0}}, "endpoint.timeout_s"),
        ({"enabled": "yes"}, "enabled"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_bad_settings_are_refused_naming_the_field(
    proposals: ProposalService, settings: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        proposals.set_settings(settings, actor=ALICE)
    assert refused.value.field == field
    assert proposals.settings().to_json() == {
        "enabled": True, "model": "feedback", "threshold": 0.7, "endpoint": None,
    }  # fmt: skip


def test_the_system_job_runs_daily_after_the_profiles(
    proposals: ProposalService, deployment: Callable[..., int], profile_clock: ManualClock
) -> None:
    from dgxmm.jobs import JobLimits, RunContext

    d = deployment()
    profiles_job, job = proposals.system_jobs()
    assert (profiles_job.name, profiles_job.schedule.text) == ("traffic_profiles", "20 0 * * *")
    assert (job.name, job.schedule.text) == ("schedule_proposals", "40 0 * * *")
    now = profile_clock.now_us()
    context = RunContext(
        name=job.name, scheduled_at=now, started_at=now, limits=JobLimits(), timer=lambda: 0.0
    )
    detail = job.action(context)
    assert isinstance(detail, str)
    assert detail.startswith("1 open proposal for 1 deployment")
    assert _open(proposals, d) == WEEKNIGHTS_BY_RULES


def test_a_run_reads_every_deployment_together(
    proposals: ProposalService, deployment: Callable[..., int]
) -> None:
    first = deployment(name="first")
    second = deployment(name="second", idle=lambda hour: hour >= 166 or hour < 6)
    young = deployment(name="young", days=3)
    run = proposals.propose()
    assert [d.deployment_id for d in run.deployments] == [first, second, young]
    assert _open(proposals, first) == WEEKNIGHTS_BY_RULES
    assert _open(proposals, second) == [(64, "22:00", 1, "05:45", "rules")]  # Sunday to Monday
    assert _open(proposals, young) == []
    assert run.deployments[2].note == "proposals need 7 local days of data; it has 3"


def test_a_wake_lead_a_person_set_is_neither_proposed_nor_changed(
    proposals: ProposalService, deployment: Callable[..., int], profile_fleet: Fleet
) -> None:
    d = deployment()
    profile_fleet.deployments.update(d, ALICE, wake_lead=30)
    proposals.propose(d)
    (proposal,) = proposals.list(d)
    assert proposal.wake_lead is None
    proposals.accept(proposal.id, actor=ALICE)
    assert profile_fleet.deployments.get(d).wake_lead.to_json() == 30.0


def test_forecast_only_records_each_new_proposal_as_an_event(
    proposals: ProposalService,
    deployment: Callable[..., int],
    profile_schedules: ScheduleService,
    profile_fleet: Fleet,
) -> None:
    d = deployment()
    profile_schedules.set_forecast_only(True, actor=ALICE)
    proposals.propose(d)
    (proposal,) = proposals.list(d)
    (event,) = [e for e in profile_fleet.events.list(d) if e.action.value == "propose"]
    assert (event.outcome.value, event.actor) == ("forecast", "system")
    assert f"proposal {proposal.id}: " in (event.detail or "")
    proposals.propose(d)  # the same proposal again: not recorded twice
    assert len([e for e in profile_fleet.events.list(d) if e.action.value == "propose"]) == 1
