"""The attic: what is dropped is kept, restored identical, or removed for good."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from store.catalogkit import attic_entry, catalog_document, comparable
from store.storekit import make_items
from support import at

from dgxmm.clock import ManualClock
from dgxmm.errors import Conflict, DefinitionError, InvalidInput, NotFound
from dgxmm.store import Change, Request, Store, Subject, Write


def fill(store: Store) -> None:
    make_items(store)
    store.define_query(
        "add", {"label": "string"}, "INSERT INTO items (label) VALUES (:label)", "adds", actor="al"
    )
    store.define_job(
        name="adder",
        schedule="0 3 * * *",
        action="query",
        query="add",
        args={"label": "x"},
        timeout_ms=30000,
        actor="al",
    )


def test_it_keeps_a_dropped_job_and_query_and_restores_them_identical(
    store: Store, clock: ManualClock
) -> None:
    fill(store)
    job, query = store.job("adder"), store.query("add")
    clock.set(at("2026-03-02T11:00:00+00:00"))
    store.drop_job("adder", actor="bob")
    store.drop_query("add", actor="bob")
    assert store.jobs() == []
    assert store.queries() == []
    listed = [(e.kind, e.name, e.dropped_by, e.dropped_version, e.why) for e in store.attic()]
    assert listed == [
        (Subject.QUERY, "add", "bob", 4, "dropped"),
        (Subject.JOB, "adder", "bob", 3, "dropped"),
    ]
    entry = store.attic()[1]
    assert entry.item == {
        "definition": job.definition,
        "effects": [{"execute": "add"}, {"write": "items"}],
    }
    assert (entry.defined_by, entry.defined_version) == ("al", 2)
    assert entry.dropped_at == at("2026-03-02T11:00:00+00:00")

    store.restore_from_attic(Subject.QUERY, "add", actor="carol")
    restored = store.restore_from_attic(Subject.JOB, "adder", actor="carol")
    assert (restored.version, restored.switched_off) == (6, None)
    assert store.query("add").to_json() | {"version": 0, "defined_by": None, "defined_at": 0} == (
        query.to_json() | {"version": 0, "defined_by": None, "defined_at": 0}
    )
    again = store.job("adder")
    assert (again.definition, again.effects, again.served) == (job.definition, job.effects, True)
    assert store.attic() == []
    assert [
        (e.version, e.actor, e.subject, e.name, e.change) for e in store.journal(after_version=4)
    ] == [
        (5, "carol", Subject.QUERY, "add", Change.RESTORE),
        (6, "carol", Subject.JOB, "adder", Change.RESTORE),
    ]


def test_it_refuses_a_restore_over_a_live_name_naming_it_and_changes_nothing(
    store: Store,
) -> None:
    fill(store)
    store.drop_job("adder")
    store.define_job(name="adder", schedule="0 4 * * *", action="checkpoint")
    version = store.catalog_version()
    with pytest.raises(Conflict) as refused:
        store.restore_from_attic(Subject.JOB, "adder")
    assert refused.value.field == "name"
    assert "job named adder is in the catalog" in refused.value.message
    assert store.catalog_version() == version
    assert store.job("adder").definition["action"] == "checkpoint"
    assert [e.name for e in store.attic()] == ["adder"]


def test_it_restores_a_job_whose_query_is_gone_switched_off_with_the_reason(
    store: Store,
) -> None:
    fill(store)
    store.drop_job("adder")
    store.drop_query("add")
    restored = store.restore_from_attic(Subject.JOB, "adder", actor="carol")
    assert restored.switched_off is not None
    assert "add" in restored.switched_off
    job = store.job("adder")
    assert job.enabled is False
    assert job.effects == ()
    assert {k: v for k, v in job.definition.items() if k != "enabled"} == store.journal()[1].after[
        "definition"
    ]
    assert store.journal()[-1].after["switched_off"] == restored.switched_off
    assert [e.name for e in store.attic()] == ["add"]  # the query waits in the attic


def test_it_restores_a_job_switched_off_when_the_restorers_rights_are_refused(
    store: Store,
) -> None:
    fill(store)
    store.drop_job("adder")

    class NoWrites:
        def allows(self, actor: str | None, request: Request) -> bool:
            return not isinstance(request, Write)

    restored = store.restore_from_attic(Subject.JOB, "adder", actor="eve", authorizer=NoWrites())
    assert restored.switched_off is not None
    assert "eve may not Write(items)" in restored.switched_off
    assert (store.job("adder").enabled, store.job("adder").effects) == (False, ())


def test_it_removes_an_entry_for_good(store: Store) -> None:
    fill(store)
    store.drop_job("adder")
    store.define_job(name="adder", schedule="0 4 * * *", action="checkpoint")
    store.drop_job("adder")
    older, newer = store.attic()[1], store.attic()[0]
    removed = store.remove_from_attic(Subject.JOB, "adder", actor="dan")
    assert removed == newer
    assert store.attic() == [older]
    last = store.journal()[-1]
    assert (last.actor, last.subject, last.name, last.change, last.after) == (
        "dan",
        Subject.JOB,
        "adder",
        Change.REMOVE,
        None,
    )
    store.remove_from_attic(Subject.JOB, "adder", entry_id=older.id)
    assert store.attic() == []
    with pytest.raises(NotFound):
        store.remove_from_attic(Subject.JOB, "adder")
    with pytest.raises(InvalidInput) as refused:
        store.remove_from_attic(Subject.SETTING, "adder")
    assert refused.value.field == "kind"


def test_it_restores_an_older_entry_by_its_id(store: Store) -> None:
    fill(store)
    store.drop_job("adder")
    store.define_job(name="adder", schedule="0 4 * * *", action="checkpoint")
    store.drop_job("adder")
    older = store.attic()[1]
    store.restore_from_attic(Subject.JOB, "adder", entry_id=older.id)
    assert store.job("adder").definition["action"] == "query"
    assert [e.item["definition"]["action"] for e in store.attic()] == ["checkpoint"]


def test_an_import_that_replaces_keeps_what_it_drops_in_the_attic(store: Store) -> None:
    fill(store)
    store.import_catalog(
        {"format": 2, "kind": "dgxmm-catalog", "queries": [], "jobs": []}, replace=True
    )
    assert [(e.kind, e.name) for e in store.attic()] == [
        (Subject.QUERY, "add"),
        (Subject.JOB, "adder"),
    ]


def test_the_catalog_file_carries_the_attic(
    store: Store, open_store: Callable[..., Store], tmp_path: Path
) -> None:
    fill(store)
    store.drop_job("adder", actor="bob")
    path = tmp_path / "catalog.json"
    document = store.export_catalog(path)
    assert document["format"] == 2
    assert [(e["kind"], e["name"], e["dropped_by"]) for e in document["attic"]] == [
        ("job", "adder", "bob")
    ]
    other = Store.open(tmp_path / "other.db")
    try:
        make_items(other)
        result = other.import_catalog(path)
        assert result.attic == 1
        assert other.import_catalog(path).attic == 0  # the same entry is not added twice

        def comparable(entries: list[Any]) -> list[dict[str, Any]]:
            return [{k: v for k, v in e.to_json().items() if k != "id"} for e in entries]

        assert comparable(other.attic()) == comparable(store.attic())
        other.restore_from_attic(Subject.JOB, "adder")
        assert other.job("adder").definition == store.journal()[1].after["definition"]
    finally:
        other.close()


def test_a_catalog_file_of_format_1_still_imports(store: Store) -> None:
    result = store.import_catalog(
        {"format": 1, "kind": "dgxmm-catalog", "queries": [], "jobs": [
            {"name": "cp", "schedule": "0 3 * * *", "action": "checkpoint"}
        ]}
    )  # fmt: skip
    assert (result.jobs, result.attic) == (1, 0)


def test_it_refuses_a_bad_attic_entry_naming_it_and_changes_nothing(store: Store) -> None:
    fill(store)
    store.drop_job("adder")
    document = store.export_catalog()
    document["attic"].append(document["attic"][0] | {"dropped_at": "yesterday"})
    version = store.catalog_version()
    with pytest.raises(DefinitionError) as refused:
        store.import_catalog(document)
    assert refused.value.field == "attic[1].dropped_at"
    assert store.catalog_version() == version
    assert len(store.attic()) == 1


def test_a_restore_refuses_a_definition_that_names_another_job_and_changes_nothing(
    store: Store,
) -> None:
    store.define_job(name="live1", schedule="0 4 * * *", action="checkpoint")
    live = store.job("live1")
    definition = {"name": "live1", "schedule": "0 3 * * *", "action": "checkpoint"}
    store.import_catalog(
        catalog_document(attic=[attic_entry(item={"definition": definition, "effects": []})])
    )
    version = store.catalog_version()
    with pytest.raises(DefinitionError) as refused:
        store.restore_from_attic(Subject.JOB, "other")
    assert refused.value.field == "name"
    assert "live1" in refused.value.message
    assert store.catalog_version() == version
    assert store.jobs() == [live]
    assert [e.name for e in store.attic()] == ["other"]


def test_a_restore_refuses_a_system_jobs_name_and_the_export_still_imports(
    store: Store,
) -> None:
    # Restored "switched off", it listed a second job named compact, and the catalog's own
    # export no longer imported (found by a review of this round's fixes).
    definition = {"name": "compact", "schedule": "* * * * *", "action": "checkpoint"}
    store.import_catalog(
        catalog_document(
            attic=[attic_entry(name="compact", item={"definition": definition, "effects": []})]
        )
    )
    version = store.catalog_version()
    with pytest.raises(DefinitionError) as refused:
        store.restore_from_attic(Subject.JOB, "compact")
    assert refused.value.field == "name"
    assert store.catalog_version() == version
    assert store.jobs() == []
    store.import_catalog(store.export_catalog(), replace=True)  # its own export imports


@pytest.mark.parametrize(
    ("definition", "field"),
    [
        pytest.param(
            {"name": "x/../y\nz", "schedule": "0 3 * * *", "action": "checkpoint"},
            "name",
            id="name-the-checks-refuse",
        ),
        pytest.param(
            {"name": "other", "schedule": "0 3 * * *", "action": "checkpoint", "timeout_ms": -5},
            "timeout_ms",
            id="negative-timeout",
        ),
        pytest.param(
            {"name": "other", "schedule": "0 3 * * *", "action": "checkpoint", "enabled": 3},
            "enabled",
            id="enabled-not-a-bool",
        ),
        pytest.param({"schedule": "0 3 * * *", "action": "checkpoint"}, "name", id="no-name"),
    ],
)
def test_a_restore_refuses_a_definition_the_checks_refuse_and_changes_nothing(
    store: Store, open_store: Callable[..., Store], definition: dict[str, Any], field: str
) -> None:
    entry = attic_entry(item={"definition": definition, "effects": []})
    store.import_catalog(catalog_document(attic=[entry]))
    version = store.catalog_version()
    with pytest.raises(DefinitionError) as refused:
        store.restore_from_attic(Subject.JOB, "other")
    assert refused.value.field == field
    assert store.catalog_version() == version
    assert store.jobs() == []
    assert len(store.attic()) == 1
    exported = store.export_catalog()
    store.import_catalog(exported, replace=True)  # the catalog's own export imports again
    assert comparable(store.export_catalog()) == comparable(exported)


def test_a_restore_keeps_a_job_of_a_newer_version_as_written_not_served(store: Store) -> None:
    definition = {"name": "other", "schedule": "0 3 * * *", "action": "replicate", "to": "far"}
    store.import_catalog(
        catalog_document(attic=[attic_entry(item={"definition": definition, "effects": []})])
    )
    store.restore_from_attic(Subject.JOB, "other")
    job = store.job("other")
    assert (job.definition, job.served) == (definition, False)


def test_it_keeps_what_a_redefinition_replaced_and_restores_it(store: Store) -> None:
    fill(store)
    store.define_query(
        "add", {"label": "string"}, "INSERT INTO items (label) VALUES (upper(:label))", actor="bo"
    )
    store.define_job(name="adder", schedule="0 4 * * *", action="query", query="add",
                     args={"label": "x"}, actor="bo")  # fmt: skip
    listed = {(e.kind.value, e.name, e.dropped_by, e.why) for e in store.attic()}
    assert listed == {("job", "adder", "bo", "replaced"), ("query", "add", "bo", "replaced")}
    # A description left out is kept; the same definition again keeps nothing more.
    assert store.query("add").description == "adds"
    store.define_query(
        "add", {"label": "string"}, "INSERT INTO items (label) VALUES (upper(:label))", actor="bo"
    )
    assert len(store.attic()) == 2
    replaced = next(e for e in store.attic() if e.kind is Subject.QUERY)
    assert replaced.item["body"] == "INSERT INTO items (label) VALUES (:label)"
