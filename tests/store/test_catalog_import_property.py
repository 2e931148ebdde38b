"""Any document given to import either imports, or is refused naming a field and changes nothing.

And whatever imports exports again, and that export imports back to the same catalog: the
catalog never holds what its own file cannot carry.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from store.catalogkit import attic_entry, catalog_document, comparable, nested
from store.storekit import make_items
from support import at

from dgxmm.errors import DefinitionError
from dgxmm.store import Store

# Values a hostile file puts where the catalog expects something else: the edges of every
# range the catalog checks, text the databases cannot store, deep and odd JSON.
_EDGES = st.sampled_from(
    [
        -(10**18),
        2**63 - 1,
        2**63,
        2**64,
        -(2**63) - 1,
        at("0001-01-02T00:00:00+00:00"),
        at("0001-01-02T00:00:00+00:00") - 1,
        at("9999-12-30T23:59:59.999999+00:00"),
        at("9999-12-30T23:59:59.999999+00:00") + 1,
        "a\x00b",
        "\ud800",
        "x/../y\nz",
        "u" * 201,
        1.5,
    ]
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)
_HOSTILE = _EDGES | _JSON | st.integers(min_value=0, max_value=40).map(nested)
_NAMES = st.sampled_from(["a", "b", "live1", "other"])


def _maybe(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly a value the catalog takes (so that documents import too), sometimes a hostile one."""
    return st.sampled_from(range(8)).flatmap(lambda n: _HOSTILE if n == 7 else good)


def _with_extra(parts: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    extra = st.dictionaries(
        st.sampled_from(["x", "future", "enabled", "args"]), _HOSTILE, max_size=2
    )
    return st.builds(lambda base, more: {**base, **more}, parts, st.just({}) | extra)


_QUERIES = st.fixed_dictionaries(
    {
        "name": _maybe(_NAMES),
        "params": _maybe(st.sampled_from([{}, {"label": "string"}])),
        "body": _maybe(
            st.sampled_from(
                ["SELECT 1", "SELECT :label", "INSERT INTO items (label) VALUES (:label)"]
            )
        ),
        "description": _maybe(st.none() | st.text(max_size=5)),
    }
)
_JOBS = _with_extra(
    st.fixed_dictionaries(
        {
            "name": _maybe(_NAMES),
            "schedule": _maybe(st.sampled_from(["0 3 * * *", "@every 1h"])),
            "action": _maybe(st.sampled_from(["checkpoint", "replicate"])),
        }
    )
)
_ITEMS = st.one_of(
    st.builds(lambda d: {"definition": d, "effects": []}, _JOBS),
    st.builds(lambda q: {k: v for k, v in q.items() if k != "name"}, _QUERIES),
    _HOSTILE,
)
_ATTIC = st.builds(
    lambda base, changes: base | changes,
    st.builds(attic_entry),
    st.fixed_dictionaries(
        {},
        optional={
            "kind": _maybe(st.sampled_from(["job", "query"])),
            "name": _maybe(_NAMES),
            "item": _ITEMS,
            "defined_version": _maybe(st.integers(min_value=0, max_value=9)),
            "defined_by": _maybe(st.none() | st.text(max_size=5)),
            "defined_at": _maybe(st.integers(min_value=-(10**15), max_value=10**15)),
            "dropped_version": _maybe(st.integers(min_value=0, max_value=9)),
            "dropped_by": _maybe(st.none() | st.text(max_size=5)),
            "dropped_at": _maybe(st.integers(min_value=-(10**15), max_value=10**15)),
            "why": _maybe(st.text(max_size=5)),
        },
    ),
)
_DOCUMENTS = st.builds(
    lambda base, changes: base | changes,
    st.builds(
        catalog_document,
        queries=st.lists(_QUERIES, max_size=2),
        jobs=st.lists(_JOBS, max_size=2),
        attic=st.lists(_ATTIC, max_size=2),
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "format": _maybe(st.sampled_from([1, 2])),
            "queries": _maybe(st.just([])),
            "jobs": _maybe(st.just([])),
            "attic": _maybe(st.just([])),
        },
    ),
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(document=_DOCUMENTS, replace=st.booleans())
def test_an_import_imports_or_is_refused_naming_a_field_and_what_imports_round_trips(
    store: Store, document: dict[str, Any], replace: bool
) -> None:
    if not sa.inspect(store.engine).has_table("items"):  # a table the queries can write
        make_items(store)
    before = comparable(store.export_catalog())
    version = store.catalog_version()
    refused: DefinitionError | None = None
    try:
        store.import_catalog(document, replace=replace)
    except DefinitionError as error:
        refused = error
    event("imported" if refused is None else f"refused: {refused.field}")
    if refused is not None:
        assert refused.field, refused
        assert store.catalog_version() == version
        assert comparable(store.export_catalog()) == before
        return
    exported = store.export_catalog()
    store.import_catalog(exported, replace=True)
    assert comparable(store.export_catalog()) == comparable(exported)
