"""The OpenAPI document lists every status each operation answers, with the error shape."""

from __future__ import annotations

import enum
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel
from server.apikit import Operation, api_operations
from support import free_port

from dgxmm.server.edge.body_limit import MAX_BODY_BYTES
from dgxmm.server.edge.deps import require_admin, require_viewer

WRITES = ("POST", "PUT", "PATCH", "DELETE")
# A body no parser takes (past Python's 4300 digits of an integer): a documented 422.
HUGE_NUMBER = b'{"name": ' + b"9" * 5_000 + b"}"


def _documented(document: dict[str, Any], operation: Operation) -> dict[str, Any]:
    responses: dict[str, Any] = document["paths"][operation.path][operation.method.lower()][
        "responses"
    ]
    return responses


def _calls(dependant: Any) -> set[Any]:
    found = set()
    for dependency in dependant.dependencies:
        found.add(dependency.call)
        found |= _calls(dependency)
    return found


def _has_enum_field(model: Any) -> bool:
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return False
    for field in model.model_fields.values():
        kinds = [field.annotation, *getattr(field.annotation, "__args__", ())]
        if any(isinstance(kind, type) and issubclass(kind, enum.Enum) for kind in kinds):
            return True
    return False


def _expected(operation: Operation) -> set[int]:
    """What the route's construction says it answers, read here apart from the app's code."""
    route = operation.route
    calls = _calls(route.dependant)
    expected: set[int] = set()
    if require_viewer in calls:
        expected.add(401)
    if require_admin in calls:
        expected |= {401, 403}
    if "{" in operation.path:
        expected |= {404, 422}  # an id of nothing; an id that is not one
    if operation.method in WRITES:
        expected.add(413)  # body_limit.py refuses a large body before any route is chosen
    if route.body_field is not None:
        expected |= {413, 422}
        body = route.body_field.field_info.annotation
        if any(_has_enum_field(kind) for kind in (body, *getattr(body, "__args__", ()))):
            expected.add(400)  # a text outside an enum names the field (responses.py)
    return expected


def test_every_operation_documents_what_its_construction_answers(full_app: FastAPI) -> None:
    document = full_app.openapi()
    operations = api_operations(full_app)
    assert len(operations) >= 60
    missing = {
        f"{o.method} {o.path}": sorted(_expected(o) - {int(s) for s in _documented(document, o)})
        for o in operations
    }
    assert {name: statuses for name, statuses in missing.items() if statuses} == {}


def test_every_refusal_is_documented_with_the_error_shape(full_app: FastAPI) -> None:
    document = full_app.openapi()
    refusals = 0
    for operation in api_operations(full_app):
        for status, response in _documented(document, operation).items():
            if int(status) >= 400:
                refusals += 1
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (operation, status)
    assert refusals > 200
    shape = document["components"]["schemas"]["ErrorBody"]
    assert set(shape["required"]) == {"error", "field", "message"}


def _some_rows(admin: TestClient) -> None:
    """Give the ids 1 something to name: a deployment, a schedule of it, a job, a query."""
    made = admin.post(
        "/api/deployments",
        json={
            "name": "remote",
            "model": "remote-model",
            "backend": "external",
            "base_url": f"http://127.0.0.1:{free_port()}/v1",  # nothing answers
            "startup_timeout_s": 2.0,
        },
    )
    assert made.status_code == 201, made.text
    schedule = {"action": "sleep", "days": 31, "time": "22:00"}
    assert admin.post("/api/deployments/1/schedules", json=schedule).status_code == 201
    job = {"name": "tidy", "schedule": "0 3 * * *", "action": "checkpoint"}
    assert admin.post("/api/jobs/define", json=job).status_code == 200


def test_every_status_a_request_gets_is_documented(
    full_app: FastAPI, full_admin: TestClient, full_viewer: TestClient
) -> None:
    _some_rows(full_admin)
    document = full_app.openapi()
    anonymous = TestClient(full_app)
    undocumented: list[tuple[str, str, int, str]] = []
    seen: set[int] = set()
    # Writes that remove a row last, so that the other requests find it.
    operations = sorted(api_operations(full_app), key=lambda o: o.method == "DELETE")
    for operation in operations:
        documented = {int(s) for s in _documented(document, operation)}
        has_body = operation.route.body_field is not None
        tries: list[tuple[TestClient, str, dict[str, Any] | bytes | None]] = [
            (anonymous, operation.filled(), None),
            (full_viewer, operation.filled(), {} if has_body else None),
            (full_admin, operation.filled("9000000"), {} if has_body else None),
            (full_admin, operation.filled("1"), {} if has_body else None),
            (full_admin, operation.filled("x"), None),
            (full_admin, operation.filled(), HUGE_NUMBER if has_body else None),
        ]
        for client, path, body in tries:
            if isinstance(body, bytes):
                headers = {"Content-Type": "application/json"}
                answer = client.request(operation.method, path, content=body, headers=headers)
            else:
                answer = client.request(operation.method, path, json=body)
            seen.add(answer.status_code)
            if answer.status_code not in documented:
                undocumented.append((operation.method, path, answer.status_code, answer.text[:80]))
    assert undocumented == []
    assert {401, 403, 404, 422} <= seen  # the requests reached the refusals they aim at


def test_every_write_answers_a_large_body_with_a_documented_413(
    full_app: FastAPI, full_admin: TestClient
) -> None:
    document = full_app.openapi()
    writes = [o for o in api_operations(full_app) if o.method in WRITES]
    assert len(writes) >= 35  # the walk found the writes, those without a body included
    assert any(o.route.body_field is None for o in writes)
    large = b"[" + b"0," * (MAX_BODY_BYTES // 2) + b"0]"
    wrong: list[tuple[str, str, int]] = []
    for operation in writes:
        answer = full_admin.request(
            operation.method,
            operation.filled(),
            content=large,
            headers={"Content-Type": "application/json"},
        )
        documented = {int(s) for s in _documented(document, operation)}
        if answer.status_code != 413 or 413 not in documented:
            wrong.append((operation.method, operation.path, answer.status_code))
    assert wrong == []


def test_a_query_text_outside_its_enum_answers_a_documented_400(
    full_app: FastAPI, full_admin: TestClient
) -> None:
    # Found by schemathesis (issue 44): ?status=x of a deployment's proposals answered 400,
    # which its document did not list. Every operation with an enum in its query lists it.
    _some_rows(full_admin)
    answer = full_admin.get("/api/deployments/1/proposals?status=maybe")
    assert answer.status_code == 400
    assert answer.json()["field"] == "status"
    document = full_app.openapi()
    with_enum_query = [
        o
        for o in api_operations(full_app)
        if any(
            _has_enum(q.field_info.annotation)
            for d in (o.route.dependant, *_dependants(o.route.dependant))
            for q in d.query_params
        )
    ]
    assert any(o.path == "/api/deployments/{deployment_id}/proposals" for o in with_enum_query)
    assert [o.path for o in with_enum_query if "400" not in _documented(document, o)] == []


def _dependants(dependant: Any) -> list[Any]:
    found = []
    for dependency in dependant.dependencies:
        found += [dependency, *_dependants(dependency)]
    return found


def _has_enum(annotation: Any) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return True
    return any(_has_enum(inner) for inner in getattr(annotation, "__args__", ()))
