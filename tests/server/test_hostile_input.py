"""What a client can send to the definition endpoints: never a 500, nothing changed on a refusal."""

from __future__ import annotations

import threading
import time
from typing import Any

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dgxmm.store import Store

_SETTINGS = settings(
    max_examples=150,
    deadline=None,  # a shared machine: no timing in tests
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

_SQL_WORDS = st.sampled_from(
    [
        "SELECT", "INSERT INTO", "UPDATE", "DELETE FROM", "WITH", "AS", "FROM", "WHERE",
        "notes", "audit_log", "api_tokens", "deployments", "catalog_jobs", "label", "id",
        "(", ")", ",", ";", "=", "*", "1", "'x'", ":n", "?", "$1", "--", "/*", "*/",
        "VALUES", "SET", "RETURNING", "PRAGMA", "ATTACH", "UNION", "ORDER BY", "LIMIT",
    ]
)  # fmt: skip


@st.composite
def sql_bodies(draw: st.DrawFn) -> str:
    """Draw SQL-ish text: fragments, and now and then deep nesting."""
    words = draw(st.lists(_SQL_WORDS, min_size=1, max_size=20))
    depth = draw(st.sampled_from([0, 0, 0, 5, 45, 300]))
    text = " ".join(words)
    return "(" * depth + text + ")" * depth if depth else text


_JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.sampled_from([0, 1, 86_400_000_000_000_000, 86_399_999_999_999_999, 2**63, 2**64]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
)
_JSON = st.recursive(
    _JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)
_JOB_KEYS = [
    "name", "schedule", "action", "query", "args", "path", "enabled",
    "timeout_ms", "memory_limit", "run_on", "description", "extra",
]  # fmt: skip


@st.composite
def job_bodies(draw: st.DrawFn) -> dict[str, Any]:
    """Draw a job definition: mostly plausible keys, each with a plausible or hostile value."""
    body: dict[str, Any] = {
        "name": draw(st.sampled_from(["j", "nightly", "", "x" * 300, "stats_flush"])),
        "schedule": draw(st.sampled_from(["* * * * *", "0 3 * * *", "61 * * * *", ""])),
        "action": draw(st.sampled_from(["query", "checkpoint", "backup", "nope"])),
    }
    for key in draw(st.lists(st.sampled_from(_JOB_KEYS), max_size=5, unique=True)):
        if key in ("timeout_ms", "memory_limit"):
            body[key] = draw(
                st.one_of(st.integers(min_value=-(2**90), max_value=2**90), _JSON_SCALARS)
            )
        elif key == "query":
            body[key] = draw(st.sampled_from(["recent", "missing", 3]))
        else:
            body[key] = draw(_JSON)
    return body


def _assert_answered(response: Any) -> None:
    assert response.status_code < 500, response.text
    if response.status_code == 400:
        assert response.json().get("field"), response.text  # the field is named


@_SETTINGS
@given(
    body=sql_bodies(), params=st.dictionaries(st.sampled_from(["n", "on", "x"]), _JSON, max_size=2)
)
def test_no_query_body_gives_a_500(
    client: TestClient, store: Store, body: str, params: Any
) -> None:
    before = store.catalog_version()
    response = client.post(
        "/api/queries/define", json={"name": "q", "params": params, "body": body}
    )
    _assert_answered(response)
    if response.status_code != 200:
        assert store.catalog_version() == before  # a refusal changes nothing


@_SETTINGS
@given(body=job_bodies())
def test_no_job_definition_gives_a_500(
    client: TestClient, store: Store, body: dict[str, Any]
) -> None:
    if not any(q.name == "recent" for q in store.queries()):
        store.define_query("recent", {"n": "int"}, "SELECT * FROM notes LIMIT :n")
    before = store.catalog_version()
    response = client.post("/api/jobs/define", json=body)
    _assert_answered(response)
    if response.status_code != 200:
        assert store.catalog_version() == before


def test_a_huge_timeout_names_its_field(client: TestClient, store: Store) -> None:
    store.define_query("recent", {"n": "int"}, "SELECT * FROM notes LIMIT :n")
    response = client.post(
        "/api/jobs/define",
        json={"name": "j", "schedule": "* * * * *", "action": "query", "query": "recent",
              "args": {"n": 1}, "timeout_ms": 86_400_000_000_000_000},
    )  # fmt: skip
    assert response.status_code == 400
    assert response.json()["field"] == "timeout_ms"
    assert store.jobs() == []


def test_sql_nested_50_deep_names_the_body(client: TestClient, store: Store) -> None:
    body = "SELECT " + "(" * 50 + "1" + ")" * 50
    response = client.post("/api/queries/define", json={"name": "q", "body": body})
    assert response.status_code == 400
    assert response.json()["field"] == "body"
    assert store.queries() == []


def test_a_definition_while_a_job_writes_is_busy_not_a_500(
    client: TestClient, store: Store
) -> None:
    # A writing job holds SQLite's write lock for its whole run; this stands in for one.
    held = threading.Event()
    release = threading.Event()

    def write() -> None:
        with store.engine.connect() as connection:
            connection.execution_options(dgxmm_write=True)
            with connection.begin():
                connection.exec_driver_sql("INSERT INTO notes (label) VALUES ('held')")
                held.set()
                release.wait(30)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert held.wait(10)
        started = time.monotonic()
        response = client.post("/api/queries/define", json={"name": "q", "body": "SELECT 1"})
        waited = time.monotonic() - started
    finally:
        release.set()
        writer.join()
    assert response.status_code == 409, response.text
    assert response.json()["message"] == "busy: a job is writing; try again"
    assert waited < 30  # bounded: it did not wait for the writer to finish
    assert store.queries() == []
