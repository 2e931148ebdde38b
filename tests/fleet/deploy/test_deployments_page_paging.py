"""The Deployments page 100 at a time (``limit`` to change it), by name, with filters."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient
from fleet.deploy.deploykit import standin

from dgxmm.fleet import Fleet


def names_on(page: str) -> list[str]:
    return re.findall(r'<tr data-deployment="([^"]+)"', page)


def next_href(page: str) -> str | None:
    found = re.search(r'<a href="([^"]+)" id="next-page">', page)
    return None if found is None else html.unescape(found.group(1))


def test_it_pages_by_name_each_deployment_once_while_some_are_added_and_dropped(
    client: TestClient, fleet: Fleet
) -> None:
    made = {n: fleet.deployments.create(actor="user:a", **standin(n)).id for n in "bdfhjl"}
    first = client.get("/deployments", params={"limit": 2}).text
    assert names_on(first) == ["b", "d"]
    assert "6 deployments, by name, 2 on this page" in first
    assert 'id="first-page"' not in first
    fleet.deployments.create(actor="user:a", **standin("a"))  # behind the cursor: not seen
    fleet.deployments.create(actor="user:a", **standin("k"))  # ahead: seen once
    fleet.remove(made["h"], actor="user:a")  # ahead, dropped: not seen
    seen = names_on(first)
    href = next_href(first)
    while href is not None:
        page = client.get(href).text
        assert 'id="first-page"' in page
        seen += names_on(page)
        href = next_href(page)
    assert seen == ["b", "d", "f", "j", "k", "l"]
    assert names_on(client.get("/deployments").text) == ["a", "b", "d", "f", "j", "k", "l"]


def test_it_filters_by_state_and_node_and_keeps_them_on_the_next_page(
    client: TestClient, fleet: Fleet
) -> None:
    for name in "abc":
        fleet.deployments.create(actor="user:a", **standin(name))
    page = client.get("/deployments", params={"state": "stopped", "node": "local", "limit": 1})
    assert names_on(page.text) == ["a"]
    assert next_href(page.text) is not None
    assert "state=stopped" in (next_href(page.text) or "")
    assert "node=local" in (next_href(page.text) or "")
    assert names_on(client.get("/deployments", params={"state": "running"}).text) == []
    assert names_on(client.get("/deployments", params={"node": "abc"}).text) == []
    # The filter form sends empty fields for "any".
    assert names_on(client.get("/deployments?state=&node=").text) == ["a", "b", "c"]
    assert "3 deployments" in client.get("/deployments").text


@pytest.mark.parametrize(
    ("params", "field"),
    [
        pytest.param({"limit": "0"}, "limit", id="limit-zero"),
        pytest.param({"limit": "1001"}, "limit", id="limit-too-many"),
        pytest.param({"cursor": "nope"}, "cursor", id="cursor-junk"),
        pytest.param({"state": "napping"}, "state", id="state-unknown"),
    ],
)
def test_it_refuses_a_bad_parameter_naming_it(
    client: TestClient, params: dict[str, str], field: str
) -> None:
    answer = client.get("/deployments", params=params)
    assert answer.status_code == 400
    assert field in answer.text


def test_it_reads_the_deployments_once_for_the_table_and_the_gpu_bars(
    client: TestClient, fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each read of 1,000 deployments cost a third of the page (benchmarks/server.py).
    for name in "ab":
        fleet.deployments.create(actor="user:a", **standin(name))
    reads: list[int] = []
    real = fleet.deployments.list

    def counted(*args: object, **keys: object) -> object:
        reads.append(1)
        return real(*args, **keys)

    monkeypatch.setattr(fleet.deployments, "list", counted)
    assert names_on(client.get("/deployments").text) == ["a", "b"]
    assert len(reads) == 1
