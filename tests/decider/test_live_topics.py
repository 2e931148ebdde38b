"""The live topics of the schedules, traffic and audit pages move with their own tables only
(migration 0024 gives them their counters), on both databases."""

from __future__ import annotations

from dgxmm.decider import ProposalService, ScheduleAction, ScheduleService
from dgxmm.fleet import Fleet
from dgxmm.store import Store, Topic


def moved(store: Store, before: dict[Topic, int]) -> set[Topic]:
    after = store.versions.read(list(Topic))
    return {topic for topic in Topic if after[topic] != before[topic]}


def test_each_page_topic_moves_with_its_own_tables(
    profile_store: Store,
    profile_fleet: Fleet,
    profile_schedules: ScheduleService,
    proposals: ProposalService,
) -> None:
    store = profile_store
    before = store.versions.read(list(Topic))
    deployment = profile_fleet.deployments.create(
        name="chat", model="m", backend="external", base_url="http://127.0.0.1:9",
        gpus=[0], memory_gib_awake=40.0, actor="user:alice",
    )  # fmt: skip
    # A deployment is audited in the same transaction.
    assert {Topic.DEPLOYMENTS, Topic.AUDIT} <= moved(store, before)
    assert Topic.SCHEDULES not in moved(store, before)

    before = store.versions.read(list(Topic))
    profile_schedules.create(
        deployment.id, action=ScheduleAction.SLEEP, days=127, time="22:00", actor="user:alice"
    )
    assert Topic.SCHEDULES in moved(store, before)
    assert Topic.TRAFFIC not in moved(store, before)

    before = store.versions.read(list(Topic))
    proposals.profiles.rebuild(deployment.id)
    assert moved(store, before) == {Topic.TRAFFIC}
