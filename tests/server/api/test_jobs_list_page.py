"""The Jobs page 100 jobs a page (``limit`` to change it), with Next page and First page."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient

from dgxmm.server import Host


def names_on(page: str) -> list[str]:
    return re.findall(r'<tr[^>]* data-job="([^"]+)"', page)


def next_href(page: str) -> str | None:
    found = re.search(r'<a href="([^"]+)" id="next-page">', page)
    return None if found is None else html.unescape(found.group(1))


def test_it_pages_each_job_once_while_jobs_come_and_go(client: TestClient, host: Host) -> None:
    store = host.store
    for name in ("b", "d", "f", "h", "j", "l"):
        store.define_job(name=name, schedule="0 3 * * *", action="checkpoint")
    whole = names_on(client.get("/jobs").text)
    system = [name for name in whole if name not in "bdfhjl"]
    first = client.get("/jobs", params={"limit": len(system) + 2}).text
    assert names_on(first)[-2:] == ["b", "d"]
    assert 'id="first-page"' not in first
    store.define_job(name="a", schedule="0 3 * * *", action="checkpoint")  # behind: not seen
    store.define_job(name="k", schedule="0 3 * * *", action="checkpoint")  # ahead: seen once
    store.drop_job("h")  # ahead, dropped: not seen
    seen = names_on(first)
    href = next_href(first)
    while href is not None:
        page = client.get(href).text
        assert 'id="first-page"' in page
        assert f"limit={len(system) + 2}" in (next_href(page) or f"limit={len(system) + 2}")
        seen += names_on(page)
        href = next_href(page)
    assert seen[len(system) :] == ["b", "d", "f", "j", "k", "l"]
    assert sorted(seen[: len(system)]) == sorted(system)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        pytest.param({"limit": "0"}, "limit", id="limit-zero"),
        pytest.param({"limit": "many"}, "limit", id="limit-text"),
        pytest.param({"cursor": "nope"}, "cursor", id="cursor-junk"),
    ],
)
def test_it_refuses_a_bad_parameter_naming_it(
    client: TestClient, params: dict[str, str], field: str
) -> None:
    answer = client.get("/jobs", params=params)
    assert answer.status_code == 400
    assert field in answer.text
