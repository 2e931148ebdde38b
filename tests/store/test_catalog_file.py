"""The catalog file: export and import of saved queries and jobs, all or nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from store.catalogkit import attic_entry, catalog_document, comparable, nested
from store.storekit import make_items
from support import at

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
        {"name": "extra", "schedule": "* * * * *", "action": "checkpoint", "priority": 5},
    ]
    store.import_catalog({"format": 1, "kind": "dgxmm-catalog", "queries": [], "jobs": newer})
    listed = {j.name: j for j in store.jobs()}
    assert [listed[d["name"]].definition for d in newer] == newer
    assert {name: job.served for name, job in listed.items()} == dict.fromkeys(listed, False)
    assert "replicate" in (listed["sync"].reason or "")
    assert "edge" in (listed["rep"].reason or "")
    assert "schedule" in (listed["odd"].reason or "")
    assert "priority" in (listed["extra"].reason or "")
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


_EARLIEST = "0001-01-02T00:00:00+00:00"  # a day inside the dates a datetime holds, so that
_LATEST = "9999-12-30T23:59:59.999999+00:00"  # every zone can show it


def _job(**keys: Any) -> dict[str, Any]:
    return {"name": "j", "schedule": "0 3 * * *", "action": "checkpoint", **keys}


@pytest.mark.parametrize(
    ("document", "field"),
    [
        pytest.param(
            catalog_document(attic=[attic_entry(dropped_at=-(10**18))]),
            "attic[0].dropped_at",
            id="dropped-at-before-year-1",
        ),
        pytest.param(
            catalog_document(attic=[attic_entry(dropped_at=at(_EARLIEST) - 1)]),
            "attic[0].dropped_at",
            id="dropped-at-just-before-the-earliest",
        ),
        pytest.param(
            catalog_document(attic=[attic_entry(defined_at=at(_LATEST) + 1)]),
            "attic[0].defined_at",
            id="defined-at-just-after-the-latest",
        ),
        pytest.param(
            catalog_document(attic=[attic_entry(dropped_at=-(2**63) - 1)]),
            "attic[0].dropped_at",
            id="dropped-at-below-64-bits",
        ),
        pytest.param(
            catalog_document(attic=[attic_entry(defined_version=2**64)]),
            "attic[0].defined_version",
            id="defined-version-2-to-the-64",
        ),
        pytest.param(
            catalog_document(attic=[attic_entry(dropped_version=-1)]),
            "attic[0].dropped_version",
            id="dropped-version-negative",
        ),
        pytest.param(
            catalog_document(attic=[attic_entry(item={"definition": {}, "x": nested(900)})]),
            "attic[0].item",
            id="item-nesting-900-lists",
        ),
        pytest.param(
            catalog_document(attic=[attic_entry(item={"x": "a" * 2**20})]),
            "attic[0].item",
            id="item-past-a-mebibyte",
        ),
        pytest.param(
            catalog_document(attic=[attic_entry(name="x/../y\nz")]),
            "attic[0].name",
            id="attic-name-not-a-name",
        ),
        pytest.param(
            catalog_document(attic=[attic_entry(dropped_by="u" * 201)]),
            "attic[0].dropped_by",
            id="dropped-by-past-200-chars",
        ),
        pytest.param(
            catalog_document(attic=[attic_entry(why="a\x00b")]),
            "attic[0].why",
            id="why-with-a-nul",
        ),
        pytest.param(
            catalog_document(jobs=[_job(x=nested(900))]),
            "jobs[0].x",
            id="job-key-nesting-900-lists",
        ),
        pytest.param(
            catalog_document(jobs=[_job(x=nested(33))]),
            "jobs[0].x",
            id="job-key-nesting-33-lists",
        ),
        pytest.param(
            catalog_document(jobs=[_job(x="a" * 2**20)]),
            "jobs[0].x",
            id="job-key-past-a-mebibyte",
        ),
        pytest.param(
            catalog_document(jobs=[_job(x="a" * 2**19, y="b" * 2**19)]),
            "jobs[0].definition",
            id="job-past-a-mebibyte",
        ),
        pytest.param(
            catalog_document(jobs=[_job(description="\ud800")]),
            "jobs[0].description",
            id="job-with-a-lone-surrogate",
        ),
        pytest.param(
            catalog_document(queries=[{"name": ["a"], "params": {}, "body": "SELECT 1"}]),
            "queries[0].name",
            id="query-named-by-a-list",
        ),
        pytest.param(
            catalog_document(jobs=[_job(name={"a": 1})]),
            "jobs[0].name",
            id="job-named-by-an-object",
        ),
        pytest.param(
            catalog_document(queries=[{"name": "q", "params": {}, "body": "SELECT 1 -- \x00"}]),
            "queries[0].body",
            id="query-body-with-a-nul",
        ),
        pytest.param(
            catalog_document(
                queries=[{"name": "q", "params": {}, "body": "SELECT 1", "description": "\udfff"}]
            ),
            "queries[0].description",
            id="query-description-with-a-lone-surrogate",
        ),
    ],
)
def test_it_refuses_an_import_that_would_poison_the_catalog_naming_the_field(
    store: Store, document: dict[str, Any], field: str
) -> None:
    fill(store)
    before = comparable(store.export_catalog())
    version = store.catalog_version()
    with pytest.raises(DefinitionError) as refused:
        store.import_catalog(document)
    assert refused.value.field == field
    assert store.catalog_version() == version
    assert comparable(store.export_catalog()) == before


def test_it_imports_what_is_just_within_its_bounds_and_exports_it_again(
    store: Store, open_store: Callable[..., Store]
) -> None:
    deep = nested(32)
    document = catalog_document(
        jobs=[_job(name="deep", future=deep)],
        attic=[
            attic_entry(name="first", defined_at=at(_EARLIEST), dropped_at=at(_EARLIEST)),
            attic_entry(
                name="last",
                defined_at=at(_LATEST),
                dropped_at=at(_LATEST),
                defined_version=2**63 - 1,
                dropped_version=2**63 - 1,
                dropped_by="u" * 200,
            ),
        ],
    )
    store.import_catalog(document)
    exported = store.export_catalog()
    assert exported["jobs"] == document["jobs"]
    assert exported["attic"] == document["attic"]
    store.drop_job("deep")  # its attic entry holds the deepest definition the catalog keeps
    again = store.export_catalog()
    store.import_catalog(again, replace=True)
    assert comparable(store.export_catalog()) == comparable(again)


def test_it_keeps_a_newer_job_whose_query_is_no_name_a_query_can_have(store: Store) -> None:
    newer = {"name": "sync", "schedule": "* * * * *", "action": "replicate", "query": "q" * 200}
    store.import_catalog(catalog_document(jobs=[newer]))
    assert (store.job("sync").definition, store.job("sync").served) == (newer, False)
    store.define_query("q", None, "SELECT 1")
    store.drop_query("q")  # no job holds it: the odd text is no query's name
    assert store.queries() == []


def test_it_imports_more_jobs_than_one_query_reads_replacing_those_there(store: Store) -> None:
    # 1,200 names cross the chunks the import reads the existing jobs in (500 names a query).
    for i in range(0, 1200, 100):
        store.define_job(name=f"j{i:04d}", schedule="0 1 * * *", action="checkpoint")
    document = store.export_catalog()
    document["jobs"] = [
        {"name": f"j{i:04d}", "schedule": "0 2 * * *", "action": "checkpoint"} for i in range(1200)
    ]
    since = store.journal()[-1].version
    result = store.import_catalog(document)
    assert result.jobs == 1200
    jobs = store.jobs()
    assert len(jobs) == 1200
    assert {job.definition["schedule"] for job in jobs} == {"0 2 * * *"}
    changes = [(e.name, e.change.value) for e in store.journal(after_version=since)]
    assert len(changes) == 1200
    assert changes[0] == ("j0000", "replace")
    assert changes[1] == ("j0001", "define")


def test_it_keeps_the_last_of_two_entries_of_one_name_as_a_replacement(store: Store) -> None:
    document = store.export_catalog()
    document["jobs"] = [
        {"name": "twice", "schedule": "0 1 * * *", "action": "checkpoint"},
        {"name": "twice", "schedule": "0 2 * * *", "action": "checkpoint"},
    ]
    store.import_catalog(document)
    [job] = store.jobs()
    assert job.definition["schedule"] == "0 2 * * *"
    entries = [e for e in store.journal() if e.name == "twice"]
    assert [e.change.value for e in entries] == ["define", "replace"]
    assert entries[1].before["definition"]["schedule"] == "0 1 * * *"
