"""Saved queries: typed parameters, SQL checked by parsing, drop refused while used."""

from __future__ import annotations

import pytest
from store.storekit import make_items

from dgxmm.errors import Conflict, DefinitionError, NotFound
from dgxmm.store import ParamType, Store


def test_it_defines_and_lists_a_saved_query(store: Store) -> None:
    make_items(store)
    saved = store.define_query(
        "purge",
        {"label": "string", "before": "timestamp"},
        "DELETE FROM items WHERE label = :label AND n < :before",
        "drops old rows",
        actor="alice",
    )
    assert saved.params == {"label": ParamType.STRING, "before": ParamType.TIMESTAMP}
    listed = store.queries()
    assert [(q.name, q.body, q.description, q.defined_by) for q in listed] == [
        ("purge", saved.body, "drops old rows", "alice")
    ]
    assert store.query("purge").to_json()["params"] == {"label": "string", "before": "timestamp"}


def test_it_replaces_a_query_of_the_same_name(store: Store) -> None:
    store.define_query("q", None, "SELECT 1")
    store.define_query("q", {"x": "int"}, "SELECT :x")
    assert [(q.name, q.body) for q in store.queries()] == [("q", "SELECT :x")]
    assert store.catalog_version() == 2


@pytest.mark.parametrize(
    ("params", "body", "field", "words"),
    [
        pytest.param(None, "CREATE TABLE t (a INT)", "body", "CREATE", id="ddl"),
        pytest.param(None, "DROP TABLE items", "body", "DROP", id="drop"),
        pytest.param(None, "SELECT 1; COMMIT", "body", "statement 2 is COMMIT", id="commit"),
        pytest.param(None, "SELECT 1 INTO t2", "body", "INTO", id="select-into"),
        pytest.param(None, "SELECT * FROM items WHERE id = ?", "body", "named", id="qmark"),
        pytest.param(None, "SELECT FROM WHERE", "body", "parse", id="garbage"),
        pytest.param(None, "   ", "body", "needs SQL", id="empty"),
        pytest.param(None, "SELECT :x", "params", ":x", id="undeclared"),
        pytest.param({"x": "int", "y": "int"}, "SELECT :x", "params", "y", id="unused"),
        pytest.param({"x": "decimal"}, "SELECT :x", "params", "decimal", id="unknown-type"),
        pytest.param({"on": "bool"}, "SELECT 1 WHERE :on", "body", "keyword", id="keyword-param"),
        pytest.param({"1x": "int"}, "SELECT 1", "params", "1x", id="bad-param-name"),
        pytest.param(["x"], "SELECT 1", "params", "object", id="params-not-object"),
        pytest.param(
            None, "UPDATE catalog_jobs SET effects = '[]'", "body", "catalog", id="catalog"
        ),
        pytest.param(
            None, "DELETE FROM alembic_version", "body", "never write", id="migrations-table"
        ),
    ],
)
def test_it_refuses_a_query_naming_the_field(
    store: Store, params: object, body: str, field: str, words: str
) -> None:
    make_items(store)
    with pytest.raises(DefinitionError) as refused:
        store.define_query("bad", params, body)  # type: ignore[arg-type]
    assert refused.value.field == field
    assert words in refused.value.message
    assert store.queries() == []
    assert store.catalog_version() == 0


@pytest.mark.parametrize("name", ["", "has space", ".hidden", "x" * 101, "semi;colon"])
def test_it_refuses_a_query_name_that_is_not_a_name(store: Store, name: str) -> None:
    with pytest.raises(DefinitionError) as refused:
        store.define_query(name, None, "SELECT 1")
    assert refused.value.field == "name"


def test_it_refuses_to_drop_a_query_while_jobs_use_it_naming_them(store: Store) -> None:
    store.define_query("q", None, "SELECT 1")
    for name in ("b_job", "a_job"):
        store.define_job(name=name, schedule="* * * * *", action="query", query="q")
    with pytest.raises(Conflict, match="a_job, b_job"):
        store.drop_query("q")
    assert [q.name for q in store.queries()] == ["q"]
    store.drop_job("a_job")
    store.drop_job("b_job")
    store.drop_query("q")
    assert store.queries() == []


def test_it_answers_not_found_for_a_query_it_does_not_hold(store: Store) -> None:
    with pytest.raises(NotFound):
        store.query("nothing")
    with pytest.raises(NotFound):
        store.drop_query("nothing")
