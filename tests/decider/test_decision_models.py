"""The decision models: the feedback classifier, and the openai model over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from decider.chatkit import ChatServer, Standin
from decider.traffickit import add_deployment, hours
from sqlalchemy import insert, update
from support import wait_for

from dgxmm.decider.proposals.candidates import (
    Candidate,
    DeploymentFacts,
    idle_windows,
    make_candidates,
)
from dgxmm.decider.proposals.chat_model import ChatModel, parse_verdict
from dgxmm.decider.proposals.decision_models import Decision, Endpoint
from dgxmm.decider.proposals.feedback_model import FeedbackModel
from dgxmm.decider.proposals.service import ProposalService
from dgxmm.decider.tables import schedule_proposals
from dgxmm.errors import CannotDecide
from dgxmm.fleet import Fleet, Gpu, GpuInventory, InventorySource
from dgxmm.fleet.deployments.tables import deployments
from dgxmm.store import Store, writing

FACTS = DeploymentFacts(
    id=1, name="llama", priority=50, time_zone="Europe/Berlin", gpus=1,
    memory_gib_awake=40.0, memory_gib_asleep=4.0,
)  # fmt: skip


def _candidate(length: int) -> Candidate:
    """A candidate: Monday to Friday from 22:00 for ``length`` hours."""

    def idle(hour: int) -> bool:
        return any(start <= hour < start + length for start in (22, 46, 70, 94, 118))

    profile = hours(idle)
    (candidate,) = make_candidates(
        idle_windows(profile), deployment=FACTS, hours=profile, requests_by_hour=[0] * 168
    )
    return candidate


def _decided(store: Store, deployment: int, *, accepted: int, dismissed: int) -> None:
    """Past proposals: long windows accepted, short ones dismissed."""
    rows = []
    for index in range(accepted + dismissed):
        accept = index < accepted
        candidate = _candidate(10 if accept else 4)
        rows.append(
            {
                "deployment_id": deployment,
                "sleep_days": 31, "sleep_time": "22:00", "wake_days": 62, "wake_time": "06:45",
                "time_zone": "Europe/Berlin", "source": "rules", "confidence": 1.0,
                "evidence": "{}", "features": json.dumps(candidate.features),
                "status": "accepted" if accept else "dismissed",
                "created_at": index, "decided_at": index, "decided_by": "user:alice",
            }
        )  # fmt: skip
    with writing(store.engine) as connection:
        connection.execute(insert(schedule_proposals), rows)


def test_feedback_is_not_ready_until_it_has_20_of_each(profile_store: Store) -> None:
    deployment = add_deployment(profile_store)
    model = FeedbackModel(profile_store.engine)
    _decided(profile_store, deployment, accepted=19, dismissed=20)
    readiness = model.ready()
    assert not readiness
    assert "there are 19 accepted and 20 dismissed so far" in readiness.reason
    with pytest.raises(CannotDecide):
        model.decide(_candidate(10))
    _decided(profile_store, deployment, accepted=1, dismissed=0)
    readiness = model.ready()
    assert readiness
    assert readiness.reason == "trained on 20 accepted and 20 dismissed proposals"


def test_feedback_learns_what_the_admins_accept(profile_store: Store) -> None:
    deployment = add_deployment(profile_store)
    _decided(profile_store, deployment, accepted=20, dismissed=20)
    model = FeedbackModel(profile_store.engine)
    assert model.ready()
    long, short = model.decide(_candidate(10)), model.decide(_candidate(4))
    assert long.propose is True
    assert short.propose is False
    assert 0.5 <= long.confidence <= 1.0
    assert 0.5 <= short.confidence <= 1.0


def test_the_feedback_models_verdict_meets_the_threshold(
    profile_store: Store, proposals: ProposalService, profile_clock: object
) -> None:
    from decider.traffickit import idle_days, store_profile

    deployment = add_deployment(profile_store, priority=95)  # the rules would not propose
    _decided(profile_store, deployment, accepted=20, dismissed=20)
    now = profile_clock.now_us()  # type: ignore[attr-defined]

    def idle(hour: int) -> bool:
        return any(start <= hour < start + 10 for start in (22, 46, 70, 94, 118))

    store_profile(profile_store, deployment, hours(idle), now)
    idle_days(profile_store, deployment, "Europe/Berlin", now, 7)
    model = FeedbackModel(profile_store.engine)
    assert model.ready()
    confidence = model.decide(_candidate(10)).confidence

    proposals.set_settings({"threshold": confidence}, actor="user:alice")
    run = proposals.propose(deployment)
    assert run.model == "feedback"
    (made,) = [p for p in proposals.list(deployment) if p.status.value == "open"]
    assert made.source == "feedback"
    assert made.confidence == pytest.approx(confidence)

    proposals.set_settings({"threshold": min(1.0, confidence + 1e-6)}, actor="user:alice")
    (run_again,) = proposals.propose(deployment).deployments
    assert [p for p in proposals.list(deployment) if p.status.value == "open"] == []
    assert run_again.considered[0].outcome.value == "not proposed"


# -- the openai model -------------------------------------------------------------------------


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    store = Store.open(tmp_path / "models.db")
    yield store
    store.close()


@pytest.fixture
def fleet(sqlite_store: Store) -> Iterator[Fleet]:
    """The fleet whose deployments the chat model may name (it drives none of them)."""
    inventory = GpuInventory(
        gpus=(Gpu(index=0, name="H100", memory_gib=80.0),), source=InventorySource.CONFIGURATION
    )
    made = Fleet(sqlite_store, inventory=inventory)
    yield made
    made.close()


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    server = ChatServer()
    yield server
    server.close()


def test_it_asks_a_chat_endpoint_for_a_json_verdict(
    sqlite_store: Store, fleet: Fleet, chat: ChatServer
) -> None:
    chat.verdict(True, 0.9, "nobody works at night")
    model = ChatModel(Endpoint(base_url=chat.base_url), deployments=fleet.deployments)
    try:
        readiness = model.ready()
        assert readiness
        assert readiness.reason == f"the chat endpoint at {chat.base_url} answers and is awake"
        assert model.decide(_candidate(9)) == Decision(
            propose=True, confidence=0.9, reason="nobody works at night"
        )
    finally:
        model.close()
    (asked,) = chat.requests
    assert asked["model"] == "judge-1"  # the first model /v1/models lists
    assert asked["temperature"] == 0
    assert [m["role"] for m in asked["messages"]] == ["system", "user"]
    question = json.loads(asked["messages"][1]["content"])
    assert question["deployment"] == "llama"
    assert (
        question["proposal"] == "sleep Monday to Friday at 22:00, wake Tuesday to Saturday at 06:45"
    )
    assert question["evidence"]["hours"] == 9


def test_it_uses_the_model_name_it_was_given(
    sqlite_store: Store, fleet: Fleet, chat: ChatServer
) -> None:
    chat.content = '```json\n{"propose": false, "confidence": 0.6, "reason": "busy"}\n```'
    model = ChatModel(
        Endpoint(base_url=chat.base_url, model="other"), deployments=fleet.deployments
    )
    try:
        assert model.decide(_candidate(9)) == Decision(propose=False, confidence=0.6, reason="busy")
    finally:
        model.close()
    assert chat.requests[0]["model"] == "other"


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param("Sleep it, definitely.", id="prose"),
        pytest.param('{"propose": true, "confidence": 0.9', id="cut short"),
        pytest.param('{"propose": "yes", "confidence": 0.9}', id="propose not a boolean"),
        pytest.param('{"propose": true}', id="no confidence"),
        pytest.param('{"propose": true, "confidence": 1.5}', id="confidence above 1"),
        pytest.param('{"propose": true, "confidence": -0.1}', id="confidence below 0"),
        pytest.param('{"propose": true, "confidence": "high"}', id="confidence a word"),
        pytest.param('{"propose": true, "confidence": NaN}', id="confidence NaN"),
        pytest.param('[true, 0.9, "quiet"]', id="a list"),
        pytest.param('{"verdict": {"propose": true}} {"confidence": 1}', id="two objects"),
        pytest.param("", id="empty"),
    ],
)
def test_an_unusable_answer_is_cannot_decide(answer: str) -> None:
    with pytest.raises(CannotDecide):
        parse_verdict(answer)


def test_an_answer_around_the_json_is_read() -> None:
    assert parse_verdict('Verdict: {"propose": true, "confidence": 1, "reason": "ok"} Thanks.') == (
        Decision(propose=True, confidence=1.0, reason="ok")
    )


def test_it_is_not_ready_while_the_endpoint_is_down(sqlite_store: Store, fleet: Fleet) -> None:
    closed = ChatServer()
    url = closed.base_url
    closed.close()
    model = ChatModel(Endpoint(base_url=url), deployments=fleet.deployments)
    try:
        readiness = model.ready()
        assert not readiness
        assert readiness.reason.startswith(f"the chat endpoint is down: {url}/health")
        with pytest.raises(CannotDecide):
            model.decide(_candidate(9))
    finally:
        model.close()


def test_it_is_not_ready_while_a_real_standin_sleeps(sqlite_store: Store, fleet: Fleet) -> None:
    standin = Standin()
    model = ChatModel(Endpoint(base_url=standin.base_url), deployments=fleet.deployments)
    try:
        standin.sleep()
        readiness = model.ready()
        assert not readiness
        assert readiness.reason == f"the chat endpoint at {standin.base_url} is asleep"
        standin.wake()
        assert model.ready()
        # The stand-in answers every chat with one fixed sentence: no verdict in it.
        with pytest.raises(CannotDecide, match="holds no JSON object"):
            model.decide(_candidate(9))
    finally:
        model.close()
        standin.stop()


def test_a_managed_deployment_is_asked_only_while_it_runs(
    sqlite_store: Store, fleet: Fleet, chat: ChatServer
) -> None:
    chat.verdict(True, 0.75)
    judge = add_deployment(sqlite_store, "judge")
    with writing(sqlite_store.engine) as connection:
        connection.execute(
            update(deployments)
            .where(deployments.c.id == judge)
            .values(base_url=chat.base_url, state="sleeping")
        )
    model = ChatModel(Endpoint(deployment="judge"), deployments=fleet.deployments)
    try:
        assert model.ready().reason == "the chat endpoint's deployment 'judge' is sleeping"
        with writing(sqlite_store.engine) as connection:
            connection.execute(
                update(deployments).where(deployments.c.id == judge).values(state="running")
            )
        assert model.ready()
        assert model.decide(_candidate(9)).confidence == 0.75
        missing = ChatModel(Endpoint(deployment="nobody"), deployments=fleet.deployments)
        assert missing.ready().reason == "the chat endpoint's deployment 'nobody' does not exist"
        missing.close()
    finally:
        model.close()


def test_a_huge_answer_from_the_chat_endpoint_is_read_only_to_the_bound(
    sqlite_store: Store, fleet: Fleet
) -> None:
    # A model server's answer is read with a byte bound (issue 44): one that answered the
    # verdict's question with 500 and 256 MiB would have been read whole.
    huge = 256 * 1024 * 1024
    standin = Standin()
    model = ChatModel(Endpoint(base_url=standin.base_url), deployments=fleet.deployments)
    try:
        standin.client.post("/dgxmm/faults", json={"error_bytes": huge})
        with pytest.raises(CannotDecide, match="answered 500"):
            model.decide(_candidate(9))
        [sent] = wait_for(lambda: standin.client.get("/dgxmm/seen").json()["sent"], "its end")
        assert sent < huge // 4  # the rest never left the stand-in: dgxmm hung up
    finally:
        model.close()
        standin.stop()
