"""The Insights page 100 a page, newest first, with an Older link (the API's cursor)."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient
from fleet.deploy.deploykit import standin

from dgxmm.fleet import Fleet, InsightKind, Severity


def ids_on(page: str) -> list[int]:
    return [int(found) for found in re.findall(r'<tr data-insight="(\d+)"', page)]


def older_href(page: str) -> str | None:
    found = re.search(r'<a href="([^"]+)" id="older-page">', page)
    return None if found is None else html.unescape(found.group(1))


def raise_one(fleet: Fleet, deployment_id: int, text: str) -> int:
    raised = fleet.insights.raise_insight(
        InsightKind.DEPLOYMENT_FAILED, deployment_id=deployment_id,
        severity=Severity.WARNING, message=text,
    )  # fmt: skip
    assert raised is not None
    return raised.id


def test_it_pages_back_each_insight_once_while_new_ones_come(
    client: TestClient, fleet: Fleet
) -> None:
    ids = []
    for name in "abcde":
        made = fleet.deployments.create(actor="user:a", **standin(name))
        ids.append(raise_one(fleet, made.id, f"{name} failed"))
    first = client.get("/insights", params={"limit": 2}).text
    assert ids_on(first) == ids[:-3:-1]
    assert 'id="newest-page"' not in first
    late = fleet.deployments.create(actor="user:a", **standin("f"))
    raise_one(fleet, late.id, "f failed")  # newer than the cursor: not on the older pages
    seen = ids_on(first)
    href = older_href(first)
    while href is not None:
        page = client.get(href).text
        assert 'id="newest-page"' in page
        assert "limit=2" in page
        seen += ids_on(page)
        href = older_href(page)
    assert seen == ids[::-1]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        pytest.param({"limit": "0"}, "limit", id="limit-zero"),
        pytest.param({"cursor": "nope"}, "cursor", id="cursor-junk"),
    ],
)
def test_it_refuses_a_bad_parameter_naming_it(
    client: TestClient, params: dict[str, str], field: str
) -> None:
    answer = client.get("/insights", params=params)
    assert answer.status_code == 400
    assert field in answer.text
