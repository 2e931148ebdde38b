"""Bodies no JSON parser should take: every route that takes a body answers 422 naming it."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from server.apikit import api_operations

ODD_BODIES = [
    pytest.param(b'{"name": "caf\xe9"}', "not UTF-8", id="latin-1"),
    pytest.param(b'["\x80\x81"]', "not UTF-8", id="stray-bytes"),
    pytest.param(b"[" * 100_000 + b"]" * 100_000, "nested", id="100k-deep"),
    pytest.param(b'{"a": ' * 50_000 + b"1" + b"}" * 50_000, "nested", id="50k-deep-objects"),
    # Past Python's limit on an integer's digits (4300), which fails the parse itself.
    pytest.param(b'{"name": ' + b"9" * 5_000 + b"}", "digits", id="5000-digit-number"),
]


@pytest.mark.parametrize(("content", "reason"), ODD_BODIES)
def test_it_answers_an_odd_body_with_422_naming_the_body_on_every_route(
    full_app: FastAPI, full_admin: TestClient, content: bytes, reason: str
) -> None:
    operations = [o for o in api_operations(full_app) if o.route.body_field is not None]
    assert len(operations) >= 26  # the walk found the API's routes, not none
    for operation in operations:
        method, path = operation.method, operation.filled()
        response = full_admin.request(
            method, path, content=content, headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 422, (method, path, response.text)
        body = response.json()
        assert (body["error"], body["field"]) == ("invalid_request", "body"), (method, path)
        assert reason in body["message"], (method, path, body)
