"""Helpers of the API tests (import: `from server.apikit import define`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.testclient import TestClient


def define(client: TestClient, **keys: object) -> dict[str, object]:
    """Define a job through the API and return its row (asserting success)."""
    response = client.post("/api/jobs/define", json=keys)
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


@dataclass(frozen=True, slots=True, kw_only=True)
class Operation:
    """One method of one API route, as the app serves it (its router's prefix included)."""

    method: str
    path: str  # with its {parameters}
    route: Any  # the route as served: .dependant, .body_field, .endpoint

    def filled(self, value: str = "1") -> str:
        """Return the path with every parameter replaced by ``value``."""
        return re.sub(r"\{[^}]+\}", value, self.path)


def api_operations(app: FastAPI) -> list[Operation]:
    """Return every operation of the app's API routes (those in its OpenAPI document)."""
    found = []
    for context in iter_route_contexts(app.routes):
        if isinstance(context.original_route, APIRoute) and context.include_in_schema:
            for method in sorted(context.methods or ()):
                path = str(context.path_format)
                found.append(Operation(method=method, path=path, route=context))
    return found
