"""Creating and changing deployments: every refused field named, conflicts, the records."""

from __future__ import annotations

from typing import Any

import pytest
from fleet.deploy.deploykit import standin

from dgxmm.errors import Conflict, DefinitionError, NotFound
from dgxmm.fleet import AuditAction, BackendKind, DeploymentState, EventAction, Fleet
from dgxmm.store import writing


def external(name: str = "remote", **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "model": "m",
        "backend": "external",
        "base_url": "http://10.0.0.7:8000/",
        **extra,
    }


def test_it_creates_a_stopped_deployment_with_the_defaults(fleet: Fleet) -> None:
    created = fleet.deployments.create(actor="user:alice", **external())
    assert created.backend is BackendKind.EXTERNAL
    assert created.base_url == "http://10.0.0.7:8000"
    assert (created.priority, created.time_zone, created.startup_timeout_s) == (50, "UTC", 600.0)
    assert created.wake_on_request is True
    assert (created.sleep_timeout_s, created.sleep_level) == (300.0, 1)
    assert (created.state, created.gpus, created.memory_gib_awake) == (
        DeploymentState.STOPPED,
        (),
        0.0,
    )
    assert fleet.deployments.by_name("remote") == created
    assert fleet.events.list(created.id)[0].action is EventAction.CREATE
    [audit] = fleet.audit.list()
    assert (audit.action, audit.actor, audit.detail["after"]["name"]) == (
        "deployment.create",
        "user:alice",
        "remote",
    )


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"name": "-x"}, "name", "is not a deployment name"),
        ({"model": ""}, "model", "is not a non-empty text"),
        ({"backend": "docker"}, "backend", "is not a backend"),
        ({"command": None}, "command", "needs its command line"),
        ({"command": ["vllm", ""]}, "command[1]", "is not a non-empty argument"),
        ({"port": 70000}, "port", "out of range 1-65535"),
        ({"port": True}, "port", "is not a whole number"),
        ({"environment": {"A=B": "x"}}, "environment", "is not a variable name"),
        ({"base_url": "http://x"}, "base_url", "is for an external server"),
        ({"gpus": [0, 0]}, "gpus[1]", "GPU 0 is listed twice"),
        ({"gpus": [5]}, "gpus[0]", "GPU 5 is not in this machine's inventory (GPUs: 0, 1"),
        ({"memory_gib_awake": -1}, "memory_gib_awake", "must be 0 or more"),
        ({"memory_gib_awake": 81}, "memory_gib_awake", "more than GPU 0 (H100) holds (80 GiB)"),
        ({"memory_gib_asleep": 50}, "memory_gib_asleep", "more than it holds awake"),
        ({"priority": 101}, "priority", "out of range 0-100"),
        ({"time_zone": "Mars/Base"}, "time_zone", "unknown time zone"),
        ({"startup_timeout_s": 0}, "startup_timeout_s", "is not between 0 and"),
        ({"wake_on_request": "yes"}, "wake_on_request", "is not true or false"),
        ({"sleep_timeout_s": -1}, "sleep_timeout_s", "is not between 0 and"),
        ({"sleep_timeout_s": "5"}, "sleep_timeout_s", "is not a number of seconds"),
        # Integers past a float's range raised OverflowError in math.isfinite (a 500).
        ({"memory_gib_awake": 10**400}, "memory_gib_awake", "is too large"),
        ({"startup_timeout_s": 10**400}, "startup_timeout_s", "is too large"),
        ({"sleep_level": 3}, "sleep_level", "is not 1 (weights to CPU memory) or 2"),
        ({"sleep_level": True}, "sleep_level", "is not 1"),
        ({"colour": "red"}, "colour", "is not a deployment field"),
        ({"aliases": "llama-fast"}, "aliases", "give the aliases as a list of names"),
        ({"aliases": [f"a{i}" for i in range(21)]}, "aliases", "21 names are more than 20"),
        ({"aliases": ["ok", ""]}, "aliases[1]", "is not a non-empty text"),
        ({"aliases": ["ok", 7]}, "aliases[1]", "is not a non-empty text"),
        ({"aliases": ["tab\there"]}, "aliases[0]", "must be printable and at most 200"),
        ({"aliases": ["x" * 201]}, "aliases[0]", "must be printable and at most 200"),
        ({"aliases": ["fast", "fast"]}, "aliases[1]", "'fast' is listed twice"),
        ({"model": "m", "aliases": ["m"]}, "aliases[0]", "'m' is the deployment's model already"),
        ({"max_concurrent_requests": 0}, "max_concurrent_requests", "out of range 1-10000"),
        ({"max_concurrent_requests": 10_001}, "max_concurrent_requests", "out of range 1-10000"),
        ({"max_concurrent_requests": 2.5}, "max_concurrent_requests", "is not a whole number"),
        ({"max_concurrent_requests": True}, "max_concurrent_requests", "is not a whole number"),
        ({"max_queued_requests": -1}, "max_queued_requests", "out of range 0-10000"),
        ({"max_queued_requests": "ten"}, "max_queued_requests", "is not a whole number"),
        ({"loading_progress": "on"}, "loading_progress", "is not true or false"),
    ],
    ids=lambda value: value if isinstance(value, str) and " " not in value else None,
)
def test_it_refuses_a_field_it_cannot_use_naming_it(
    fleet: Fleet, change: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(DefinitionError) as refused:
        fleet.deployments.create(actor="user:alice", **{**standin("llama"), **change})
    assert refused.value.field == field
    assert message in refused.value.message
    assert fleet.deployments.list() == []
    assert fleet.audit.list() == []


def test_the_proxys_limits_default_to_none_and_are_kept(fleet: Fleet) -> None:
    plain = fleet.deployments.create(actor="user:alice", **standin("plain"))
    assert (plain.max_concurrent_requests, plain.max_queued_requests, plain.loading_progress) == (
        None, 100, False,
    )  # fmt: skip
    limited = fleet.deployments.create(
        actor="user:alice", **standin("limited"), max_concurrent_requests=4,
        max_queued_requests=0, loading_progress=True,
    )  # fmt: skip
    read = fleet.deployments.get(limited.id)
    assert (read.max_concurrent_requests, read.max_queued_requests, read.loading_progress) == (
        4, 0, True,
    )  # fmt: skip
    # null lifts the limit; a queue given as null is the default's.
    lifted = fleet.deployments.update(
        limited.id, actor="user:alice", max_concurrent_requests=None, max_queued_requests=None
    )
    assert (lifted.max_concurrent_requests, lifted.max_queued_requests) == (None, 100)


def test_an_external_deployment_takes_no_process_fields(fleet: Fleet) -> None:
    with pytest.raises(DefinitionError) as refused:
        fleet.deployments.create(actor="user:alice", **external(port=8000))
    assert refused.value.field == "port"
    with pytest.raises(DefinitionError) as missing:
        fleet.deployments.create(actor="user:alice", **external(base_url=None))
    assert missing.value.field == "base_url"


def test_names_and_ports_are_not_shared(fleet: Fleet) -> None:
    first = fleet.deployments.create(actor="user:alice", **standin("llama"))
    with pytest.raises(Conflict, match="a deployment named 'llama' exists already"):
        fleet.deployments.create(actor="user:alice", **standin("llama"))
    with pytest.raises(DefinitionError, match="is the port of deployment 'llama'"):
        fleet.deployments.create(actor="user:alice", **{**standin("other"), "port": first.port})


def test_it_keeps_up_to_twenty_aliases_in_order(fleet: Fleet) -> None:
    names = [f"llama-{i}" for i in range(20)]
    created = fleet.deployments.create(actor="user:alice", **standin("llama"), aliases=names)
    assert created.aliases == tuple(names)
    assert created.to_json()["aliases"] == names
    changed = fleet.deployments.update(created.id, "user:bob", aliases=["fast"])
    assert (changed.aliases, fleet.events.list(created.id)[0].detail) == (
        ("fast",),
        "changed aliases",
    )
    assert fleet.deployments.update(created.id, "user:bob", aliases=None).aliases == ()


@pytest.mark.parametrize(
    ("first", "second", "field", "message"),
    [
        ({"model": "m1", "aliases": ["fast"]}, {"model": "m2", "aliases": ["fast"]}, "aliases",
         "'fast' is an alias of deployment 'one'"),
        ({"model": "m1"}, {"model": "m2", "aliases": ["x", "m1"]}, "aliases",
         "'m1' is the model of deployment 'one'"),
        ({"model": "m1", "aliases": ["fast"]}, {"model": "fast"}, "model",
         "'fast' is an alias of deployment 'one'"),
    ],
    ids=["alias-of-another", "model-of-another", "model-is-anothers-alias"],
)  # fmt: skip
def test_a_name_another_deployment_answers_to_is_refused_changing_nothing(
    fleet: Fleet, first: dict[str, Any], second: dict[str, Any], field: str, message: str
) -> None:
    one = fleet.deployments.create(actor="user:alice", **{**standin("one"), **first})
    with pytest.raises(Conflict) as refused:
        fleet.deployments.create(actor="user:alice", **{**standin("two"), **second})
    assert (refused.value.field, refused.value.message) == (field, message)
    assert [d.name for d in fleet.deployments.list()] == ["one"]
    # The same by an edit: the other deployment stays as it was.
    two = fleet.deployments.create(actor="user:alice", **standin("two"))
    with pytest.raises(Conflict) as edited:
        fleet.deployments.update(two.id, "user:bob", **second)
    assert edited.value.message == message
    assert fleet.deployments.get(two.id) == two
    assert fleet.deployments.get(one.id) == one


def test_two_deployments_may_still_serve_one_model(fleet: Fleet) -> None:
    fleet.deployments.create(actor="user:alice", **standin("one", model="shared"))
    two = fleet.deployments.create(actor="user:alice", **standin("two", model="shared"))
    assert two.model == "shared"


def test_it_changes_fields_and_records_what_changed(fleet: Fleet) -> None:
    created = fleet.deployments.create(actor="user:alice", **standin("llama"))
    changed = fleet.deployments.update(created.id, "user:bob", priority=80, name="llama-70b")
    assert (changed.priority, changed.name) == (80, "llama-70b")
    assert fleet.events.list(created.id)[0].detail == "changed name, priority"
    audit = fleet.audit.list(action=AuditAction.DEPLOYMENT_UPDATE)[0]
    assert (audit.actor, audit.detail["changed"]) == ("user:bob", ["name", "priority"])
    assert audit.detail["before"]["priority"] == 50
    # Nothing changed: nothing written.
    assert fleet.deployments.update(created.id, "user:bob", priority=80) == changed
    assert len(fleet.audit.list(action=AuditAction.DEPLOYMENT_UPDATE)) == 1
    with pytest.raises(NotFound):
        fleet.deployments.update(999, "user:bob", priority=1)


def test_what_it_runs_changes_only_while_it_is_at_rest(fleet: Fleet) -> None:
    created = fleet.deployments.create(actor="user:alice", **standin("llama"))
    fleet.deployer.start(created.id, actor="user:alice")
    with pytest.raises(Conflict, match="is running: stop it before changing gpus, port"):
        fleet.deployments.update(created.id, "user:alice", port=1234, gpus=[1])
    # What only counts from the next action changes while it runs.
    assert fleet.deployments.update(created.id, "user:alice", memory_gib_awake=50).state is (
        DeploymentState.RUNNING
    )
    fleet.deployer.stop(created.id, actor="user:alice")
    assert fleet.deployments.update(created.id, "user:alice", gpus=[1]).gpus == (1,)


def test_switching_the_backend_drops_the_other_backends_fields(fleet: Fleet) -> None:
    created = fleet.deployments.create(actor="user:alice", **standin("llama"))
    moved = fleet.deployments.update(
        created.id, "user:alice", backend="external", base_url="https://models.internal/llama"
    )
    assert (moved.backend, moved.command, moved.port, moved.url) == (
        BackendKind.EXTERNAL,
        None,
        None,
        "https://models.internal/llama",
    )


def test_a_list_shows_every_change_since_the_last_list(fleet: Fleet) -> None:
    # The list parses only the rows that changed since the one before: a change made by any
    # write, even one that leaves updated_at as it was, is seen at the next list.
    first = fleet.deployments.create(actor="user:alice", **external("first"))
    fleet.deployments.create(actor="user:alice", **external("second", base_url="http://10.0.0.8"))
    assert [d.last_request_at for d in fleet.deployments.list()] == [None, None]
    with writing(fleet.deployments.engine) as connection:
        fleet.deployments.note_requests(connection, {first.id: 1_000})
    listed = fleet.deployments.list()
    assert [(d.name, d.last_request_at) for d in listed] == [("first", 1_000), ("second", None)]
    fleet.deployments.update(listed[1].id, actor="user:alice", priority=70)
    assert [d.priority for d in fleet.deployments.list()] == [50, 70]
    assert fleet.deployments.list() == [fleet.deployments.get(d.id) for d in listed]
