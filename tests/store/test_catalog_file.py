"""The catalog file: export and import of saved queries and jobs, all or nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from store.storekit import make_items

from dgxmm.errors import DefinitionError, Forbidden
from dgxmm.store import Request, Store, Write


def fill(store: Store) -> None:
    make_items(store)
    store.define_query("add", {"label": "string"}, "INSERT INTO items (label) VALUES (:label)")
    store.define_query("count", None, "SELECT count(*) FROM items", "how many")
    store.define_job(
        name="adder", schedule="0 3 * * *", action="query", query="add", args={"label": "x"}
    )
    store.define_job(name="cp", schedule="*/10 * * * *", action="checkpoint", enabled=False)


def test_it_exports_a_catalog_that_imports_into_another_store_unchanged(
    store: Store, tmp_path: Path
) -> None:
    fill(store)
    path = tmp_path / "catalog.json"
    document = store.export_catalog(path)
    assert json.loads(path.read_text()) == document
    other = Store.open(tmp_path / "other.db")
    try:
        make_items(other)
        result = other.import_catalog(path, actor="importer")
        assert (result.queries, result.jobs, result.version) == (2, 2, 1)
        assert [
            q.to_json() | {"version": 0, "defined_at": 0, "defined_by": None}
            for q in other.queries()
        ] == [
            q.to_json() | {"version": 0, "defined_at": 0, "defined_by": None}
            for q in store.queries()
        ]
        assert [(j.definition, j.effects) for j in other.jobs()] == [
            (j.definition, j.effects) for j in store.jobs()
        ]
        assert {e.actor for e in other.journal()} == {"importer"}
    finally:
        other.close()


def test_it_refuses_an_import_with_a_bad_entry_naming_it_and_changes_nothing(
    store: Store,
) -> None:
    fill(store)
    document = store.export_catalog()
    document["jobs"].append(
        {"name": "bad", "schedule": "* * * * *", "action": "query", "query": "add", "args": {}}
    )
    version = store.catalog_version()
    before = [j.definition for j in store.jobs()]
    with pytest.raises(DefinitionError) as refused:
        store.import_catalog(document, replace=True)
    assert refused.value.field == "jobs[2].args"
    assert store.catalog_version() == version
    assert [j.definition for j in store.jobs()] == before


def test_it_keeps_a_job_of_a_newer_version_as_written_and_does_not_serve_it(store: Store) -> None:
    newer: list[dict[str, Any]] = [
        {"name": "sync", "schedule": "* * * * *", "action": "replicate", "to": "far-away"},
        {"name": "rep", "schedule": "* * * * *", "action": "checkpoint", "run_on": "edge"},
        {"name": "odd", "schedule": "@every 1h", "action": "checkpoint"},
        {"name": "extra", "schedule": "* * * * *", "action": "checkpoint", "retries": 3},
    ]
    store.import_catalog({"format": 1, "kind": "dgxmm-catalog", "queries": [], "jobs": newer})
    listed = {j.name: j for j in store.jobs()}
    assert [listed[d["name"]].definition for d in newer] == newer
    assert {name: job.served for name, job in listed.items()} == dict.fromkeys(listed, False)
    assert "replicate" in (listed["sync"].reason or "")
    assert "edge" in (listed["rep"].reason or "")
    assert "schedule" in (listed["odd"].reason or "")
    assert "retries" in (listed["extra"].reason or "")
    exported = store.export_catalog()["jobs"]
    assert sorted(exported, key=lambda d: d["name"]) == sorted(newer, key=lambda d: d["name"])


def test_it_makes_the_catalog_exactly_the_file_when_replacing(store: Store) -> None:
    fill(store)
    document = store.export_catalog()
    store.define_query("extra", None, "SELECT 2")
    store.define_job(name="extra_job", schedule="* * * * *", action="checkpoint")
    result = store.import_catalog(document, replace=True)
    assert result.dropped == 2
    assert [q.name for q in store.queries()] == ["add", "count"]
    assert [j.name for j in store.jobs()] == ["adder", "cp"]


def test_it_asks_the_importers_authorizer_for_the_effects(
    store: Store, open_store: Callable[..., Store]
) -> None:
    fill(store)
    document = store.export_catalog()

    class NoWrites:
        def allows(self, actor: str | None, request: Request) -> bool:
            return not isinstance(request, Write)

    store.drop_job("adder")
    with pytest.raises(Forbidden, match="Write"):
        store.import_catalog(document, actor="mallory", authorizer=NoWrites())
    assert [j.name for j in store.jobs()] == ["cp"]


@pytest.mark.parametrize(
    "document",
    [
        pytest.param({"format": 1, "kind": "something-else"}, id="kind"),
        pytest.param({"format": 3, "kind": "dgxmm-catalog"}, id="format"),
        pytest.param({"format": 1, "kind": "dgxmm-catalog", "jobs": {}}, id="jobs-not-list"),
    ],
)
def test_it_refuses_a_document_that_is_not_a_catalog_file(
    store: Store, document: dict[str, Any]
) -> None:
    with pytest.raises(DefinitionError):
        store.import_catalog(document)
