"""``/api/docs`` works with no network: rendered here from the OpenAPI document, nothing fetched."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from dgxmm.server import Host, Services, Tokens, create_app
from dgxmm.server.pages.api_docs import operations


def test_it_lists_every_operation_of_the_openapi_document(host: Host, tokens: Tokens) -> None:
    with TestClient(create_app(Services(host=host, tokens=tokens))) as anyone:
        document = anyone.get("/openapi.json").json()
        page = anyone.get("/api/docs")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    listed = {(op["method"], op["path"]) for op in operations(document)}
    assert ("POST", "/api/jobs/define") in listed
    assert ("GET", "/api/jobs/history") in listed
    for method, path in listed:
        assert f"{method} {path}" in page.text
    # The define form's fields, with which are required.
    define = next(op for op in operations(document) if op["path"] == "/api/jobs/define")
    assert define["body"] is not None
    fields = {f["name"]: f["required"] for f in define["body"]["fields"]}
    assert fields["schedule"] is True
    assert fields["timeout_ms"] is False


def test_it_loads_nothing_from_another_host(host: Host, tokens: Tokens) -> None:
    with TestClient(create_app(Services(host=host, tokens=tokens))) as anyone:
        page = anyone.get("/api/docs").text
    sources = re.findall(r'(?:src|href)="([^"#]+)"', page)
    assert sources  # the page has its stylesheet and script: our own
    assert [s for s in sources if "://" in s or s.startswith("//")] == []
    assert "swagger" not in page.lower()
