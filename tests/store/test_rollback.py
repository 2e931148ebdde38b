"""Rollback: the catalog's definitions as they were at a version, as one new version."""

from __future__ import annotations

from typing import Any

import pytest
from store.storekit import make_items

from dgxmm.errors import InvalidInput
from dgxmm.store import Change, Request, Store, Subject, Write

ADD_BODY = "INSERT INTO items (label) VALUES (:label)"


def definitions(store: Store) -> dict[str, Any]:
    """What a rollback puts back: every query's text and every job's definition."""
    return {
        "queries": {q.name: (q.params, q.body, q.description) for q in store.queries()},
        "jobs": {j.name: j.definition for j in store.jobs()},
    }


def history(store: Store) -> None:
    """Versions 1-5: a query and a job, then the query changed, the job dropped, another."""
    make_items(store)
    store.define_query("add", {"label": "string"}, ADD_BODY)
    store.define_job(
        name="adder", schedule="0 3 * * *", action="query", query="add", args={"label": "x"}
    )
    store.define_query(
        "add", {"label": "string"}, "INSERT INTO items (label, n) VALUES (:label, 1)"
    )
    store.drop_job("adder")
    store.define_job(name="cp", schedule="*/10 * * * *", action="checkpoint")


def test_it_rolls_back_to_an_older_version_and_back_again(store: Store) -> None:
    history(store)
    store.set_setting("schedules.paused_all", True)  # version 6: settings are not rolled back
    adder = {"name": "adder", "schedule": "0 3 * * *", "action": "query", "query": "add"}
    at_2 = {
        "queries": {"add": (store.query("add").params, ADD_BODY, None)},
        "jobs": {"adder": adder | {"args": {"label": "x"}}},
    }
    at_6 = definitions(store)
    result = store.rollback(2, actor="rita")
    assert (result.from_version, result.to_version, result.version) == (6, 2, 7)
    assert [(s.kind, s.name, s.change) for s in result.steps] == [
        (Subject.JOB, "cp", Change.DROP),
        (Subject.QUERY, "add", Change.REPLACE),
        (Subject.JOB, "adder", Change.DEFINE),
    ]
    assert definitions(store) == at_2
    assert [str(e) for e in store.job("adder").effects] == ["Execute(add)", "Write(items)"]
    assert store.get_setting("schedules.paused_all") is True
    rows = [
        (e.version, e.actor, e.subject, e.name, e.change) for e in store.journal(after_version=6)
    ]
    assert rows == [
        (7, "rita", Subject.CATALOG, "catalog", Change.ROLLBACK),
        (7, "rita", Subject.JOB, "cp", Change.DROP),
        (7, "rita", Subject.QUERY, "add", Change.REPLACE),
        (7, "rita", Subject.JOB, "adder", Change.DEFINE),
    ]
    assert store.journal(after_version=6)[0].after == {"version": 2}
    attic = [(e.kind, e.name, e.why) for e in store.attic()]
    assert attic[:2] == [
        (Subject.QUERY, "add", "taken out by a rollback to version 2"),
        (Subject.JOB, "cp", "taken out by a rollback to version 2"),
    ]

    back = store.rollback(6, actor="rita")
    assert back.version == 8
    assert definitions(store) == at_6
    assert store.rollback(8).version is None  # nothing to change: no new version
    assert store.catalog_version() == 8


def test_a_preview_lists_what_the_rollback_then_does_and_changes_nothing(store: Store) -> None:
    history(store)
    before, version, attic = definitions(store), store.catalog_version(), store.attic()
    preview = store.rollback(2, dry_run=True)
    assert preview.dry_run is True
    assert (definitions(store), store.catalog_version(), store.attic()) == (before, version, attic)
    assert len(store.journal()) == 5
    done = store.rollback(2)
    assert done.steps == preview.steps
    assert done.version == preview.version


def test_it_asks_the_authorizer_again_and_brings_a_refused_job_back_switched_off(
    store: Store,
) -> None:
    history(store)

    class NoWrites:
        def allows(self, actor: str | None, request: Request) -> bool:
            return not isinstance(request, Write)

    preview = store.rollback(2, actor="eve", authorizer=NoWrites(), dry_run=True)
    result = store.rollback(2, actor="eve", authorizer=NoWrites())
    assert result.steps == preview.steps
    (adder,) = [s for s in result.steps if s.name == "adder"]
    assert adder.switched_off is not None
    assert "eve may not Write(items)" in adder.switched_off
    job = store.job("adder")
    assert (job.enabled, job.effects, job.defined_by) == (False, (), "eve")
    assert store.journal()[-1].after["switched_off"] == adder.switched_off


def test_it_refuses_a_version_it_does_not_have(store: Store) -> None:
    history(store)
    for version in (-1, 6, True):
        with pytest.raises(InvalidInput) as refused:
            store.rollback(version)
        assert refused.value.field == "version"
    assert store.catalog_version() == 5


def test_it_rolls_back_to_the_empty_catalog(store: Store) -> None:
    history(store)
    result = store.rollback(0)
    assert definitions(store) == {"queries": {}, "jobs": {}}
    assert [(s.kind, s.name) for s in result.steps] == [(Subject.JOB, "cp"), (Subject.QUERY, "add")]
    store.rollback(5)
    assert set(definitions(store)["jobs"]) == {"cp"}
