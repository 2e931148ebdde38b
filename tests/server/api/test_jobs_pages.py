"""GET /api/jobs?limit=&cursor=: pages giving every job once, filters, 400s naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dgxmm.jobs import Outcome
from dgxmm.server import Host
from dgxmm.server.edge.paging import make_cursor
from dgxmm.server.lists import jobs as job_list

_SETTINGS = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def names(rows: list[dict[str, Any]]) -> list[str]:
    return [row["name"] for row in rows]


def walk(client: TestClient, limit: int, between: Any = None, **params: Any) -> list[str]:
    """Follow next_cursor from the first page to the last; call ``between`` between pages."""
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        query = {"limit": limit, **params} | ({"cursor": cursor} if cursor else {})
        answer = client.get("/api/jobs", params=query)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert len(body["jobs"]) <= limit
        seen.extend(names(body["jobs"]))
        cursor = body["next_cursor"]
        pages += 1
        if cursor is None:
            return seen
        if between is not None:
            between(pages)


@_SETTINGS
@given(
    count=st.integers(min_value=0, max_value=12),
    limit=st.integers(min_value=1, max_value=5),
    changes=st.lists(st.tuples(st.booleans(), st.integers(0, 15)), max_size=6),
)
def test_every_job_kept_throughout_is_given_exactly_once_while_jobs_come_and_go(
    client: TestClient, host: Host, count: int, limit: int, changes: list[tuple[bool, int]]
) -> None:
    store = host.store
    for job in store.jobs():
        store.drop_job(job.name)
    for i in range(count):
        store.define_job(name=f"j{i:02}", schedule="0 3 * * *", action="checkpoint")
    touched: set[str] = set()

    def between(page: int) -> None:
        if page <= len(changes):
            add, n = changes[page - 1]
            name = f"j{n:02}"
            touched.add(name)
            if add:
                store.define_job(name=name, schedule="0 4 * * *", action="checkpoint")
            elif name in {job.name for job in store.jobs()}:
                store.drop_job(name)

    seen = walk(client, limit, between)
    assert len(seen) == len(set(seen))  # never twice
    kept = {f"j{i:02}" for i in range(count)} - touched
    assert kept <= set(seen)  # every job there from start to end, once
    assert set(seen) >= {"stats_flush", "compact", "runs_purge"}


def test_without_a_limit_it_lists_every_job_in_one_answer(client: TestClient, host: Host) -> None:
    for i in range(5):
        host.store.define_job(name=f"cp{i}", schedule="0 3 * * *", action="checkpoint")
    body = client.get("/api/jobs").json()
    assert body["next_cursor"] is None
    assert [name for name in names(body["jobs"]) if name.startswith("cp")] == [
        f"cp{i}" for i in range(5)
    ]
    paged = walk(client, 2)
    assert sorted(paged) == sorted(names(body["jobs"]))  # the same jobs, each once
    assert paged[-5:] == names(body["jobs"])[-5:]  # user jobs by name, after the system's


def test_pages_follow_the_unpaged_order_of_user_jobs(client: TestClient, host: Host) -> None:
    for name in ("delta", "alpha", "charlie", "bravo"):
        host.store.define_job(name=name, schedule="0 3 * * *", action="checkpoint")
    paged = walk(client, 2, kind="user")
    assert paged == ["alpha", "bravo", "charlie", "delta"]


def test_it_filters_by_kind_action_switch_and_failing(client: TestClient, host: Host) -> None:
    store = host.store
    store.define_query("boom", None, "INSERT INTO nowhere (x) VALUES (1)")
    store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    store.define_job(name="off", schedule="0 3 * * *", action="checkpoint", enabled=False)
    store.define_job(name="bad", schedule="0 3 * * *", action="query", query="boom")
    host.sync()
    assert host.run_now("bad").outcome is Outcome.FAILED

    def listed(**params: str) -> list[str]:
        answer = client.get("/api/jobs", params=params)
        assert answer.status_code == 200, answer.text
        return names(answer.json()["jobs"])

    assert listed(kind="user") == ["bad", "cp", "off"]
    assert "cp" not in listed(kind="system")
    assert listed(action="query") == ["bad"]
    assert listed(kind="user", enabled="false") == ["off"]
    assert listed(failing="true") == ["bad"]
    assert "bad" not in listed(failing="false")


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "1001"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"cursor": "not a cursor"}, "cursor"),
        ({"cursor": "eyJsIjoiYXVkaXQiLCJrIjoxfQ"}, "cursor"),  # the audit's
        ({"kind": "robot"}, "kind"),
        ({"action": "dance"}, "action"),
        ({"enabled": "maybe"}, "enabled"),
        ({"failing": "2"}, "failing"),
    ],
    ids=["limit-zero", "limit-big", "limit-text", "cursor-garbage", "cursor-other-list",
         "kind", "action", "enabled", "failing"],
)  # fmt: skip
def test_it_refuses_bad_parameters_naming_them(
    client: TestClient, params: dict[str, str], field: str
) -> None:
    answer = client.get("/api/jobs", params=params)
    assert answer.status_code == 400, answer.text
    assert answer.json()["field"] == field


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/api/jobs", {"limit", "cursor", "kind", "action", "enabled", "failing"}),
        ("/api/jobs/runs", {"limit", "cursor", "name", "before"}),
    ],
    ids=["jobs", "runs"],
)
def test_the_openapi_document_lists_every_parameter(
    client: TestClient, path: str, expected: set[str]
) -> None:
    operation = client.get("/openapi.json").json()["paths"][path]["get"]
    assert expected <= {parameter["name"] for parameter in operation["parameters"]}


def test_a_page_builds_only_its_own_rows(
    client: TestClient, host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(30):
        host.store.define_job(name=f"cp{i:02}", schedule="0 3 * * *", action="checkpoint")
    built: list[str] = []
    real = job_list._user_row

    def counting(host: Host, job: Any, *args: Any) -> dict[str, Any]:
        built.append(job.name)
        return real(host, job, *args)

    monkeypatch.setattr(job_list, "_user_row", counting)
    body = client.get("/api/jobs", params={"limit": 5, "kind": "user"}).json()
    assert names(body["jobs"]) == built == [f"cp{i:02}" for i in range(5)]
    built.clear()
    assert client.post("/api/jobs/enable", json={"name": "cp07", "enabled": False}).is_success
    assert built == ["cp07"]  # the answer's one row, not the whole list


def test_an_unfiltered_page_is_found_without_listing_every_job(
    client: TestClient, host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The console's and the CLI's walk: at 10,000 jobs, listing them all for a page of 100
    # cost most of the answer (benchmarks/server.py).
    for i in range(12):
        host.store.define_job(name=f"cp{i:02}", schedule="0 3 * * *", action="checkpoint")
    whole = names(client.get("/api/jobs").json()["jobs"])
    listed: list[object] = []
    real = job_list.Listed

    def counted(**keys: Any) -> Any:
        listed.append(keys)
        return real(**keys)

    monkeypatch.setattr(job_list, "Listed", counted)
    paged = walk(client, 4)
    assert listed == []
    assert sorted(paged) == sorted(whole)
    assert paged[-12:] == [f"cp{i:02}" for i in range(12)]


@pytest.mark.parametrize(
    "key",
    [[2, "x"], "x", [0], [True, "x"], [1, 5], {"k": 1}],
    ids=["kind-two", "text", "no-name", "kind-bool", "name-number", "object"],
)
def test_it_refuses_a_jobs_cursor_of_another_shape_naming_it(client: TestClient, key: Any) -> None:
    cursor = make_cursor("jobs", key)
    answer = client.get("/api/jobs", params={"cursor": cursor, "limit": 2})
    assert answer.status_code == 400, answer.text
    assert answer.json()["field"] == "cursor"
