"""Requests generated from the OpenAPI document (schemathesis): every operation of every layer
answers no server error, and only statuses its document lists.

Every operation in the document is driven, in both of schemathesis's modes (valid bodies and
parameters, and invalid ones), as an admin, against the whole app (``full_app``: a fleet,
schedules, proposals, alerts) on SQLite. ``DGXMM_SCHEMATHESIS_CASES`` is the number of cases
in all (default 400, what CI runs; issue 44 ran 100,000); they are shared evenly between the
operations and the two modes. Failures are gathered, not stopped at: the test fails once, at
the end, listing each operation's first failing request as a curl command and the count.

What a request could do outside the test's own directory is kept inside it: a generated
command (a process deployment's) is ``false``; a URL (an external deployment's, a webhook's)
goes to a closed port on the loopback; a Ray cluster's address too; a path that is absolute,
starts with ``~`` or climbs out with ``..`` is put under the test's directory. So no
generated request starts a program, reaches another machine or writes outside the test.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from dgxmm.server import Role, Tokens

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis.errors import Unsatisfiable  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.core.failures import FailureGroup  # noqa: E402
from schemathesis.specs.openapi.checks import status_code_conformance  # noqa: E402

CASES = int(os.environ.get("DGXMM_SCHEMATHESIS_CASES", "400"))
CLOSED = "http://127.0.0.1:9"  # the discard port: nothing listens there
FALSE = shutil.which("false") or "/bin/false"


def kept_in(value: Any, home: Path) -> Any:
    """Return a generated body with what could reach outside the test put inside it."""
    if isinstance(value, list):
        return [kept_in(item, home) for item in value]
    if not isinstance(value, dict):
        return value
    return {key: _kept(key, item, home) for key, item in value.items()}


def _kept(key: str, item: Any, home: Path) -> Any:
    if key == "command" and isinstance(item, list):
        return [FALSE]
    if key in ("url", "base_url") and isinstance(item, str):
        return item if _is_loopback(item) else CLOSED
    if key == "ray_address" and isinstance(item, str):
        return "127.0.0.1:9"
    if key in ("directory", "target", "path") and isinstance(item, str):
        if item.startswith(("/", "~")) or ".." in item:
            return str(home / "outside" / item.replace("/", "_").replace("~", "_")[:100])
        return item
    return kept_in(item, home)


def _is_loopback(url: str) -> bool:
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return True  # refused as a URL: it reaches nothing
    return host is None or host in ("127.0.0.1", "::1")


@dataclass
class Tally:
    """What was sent and what failed: each operation's first failing request per status."""

    sent: Counter[str] = field(default_factory=Counter)
    statuses: Counter[int] = field(default_factory=Counter)
    failed: dict[str, str] = field(default_factory=dict)
    found: Counter[str] = field(default_factory=Counter)

    def failures(self) -> str:
        return "\n\n".join(f"{key} ({self.found[key]} times)\n{text}"
                           for key, text in self.failed.items())  # fmt: skip


def test_generated_requests_answer_no_server_error_and_only_documented_statuses(
    full_app: FastAPI, admin_token: str, tokens: Tokens, tmp_path: Path
) -> None:
    # A server error is an answer to count here, not an exception to stop at.
    with TestClient(full_app, raise_server_exceptions=False) as client:
        client.headers["Authorization"] = f"Bearer {admin_token}"
        schema = schemathesis.openapi.from_dict(full_app.openapi())
        operations = [result.ok() for result in schema.get_all_operations()]
        assert len(operations) >= 80  # every layer's routes: the jobs', the fleet's, the alerts'
        modes = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
        each = max(1, CASES // (len(operations) * len(modes)))
        tally = Tally()
        for operation in operations:
            for mode in modes:
                try:
                    _drive(operation, mode, each, client, tokens, tmp_path, tally)
                except Unsatisfiable:
                    # Nothing of the operation can be sent wrong (no parameter, no body).
                    assert mode is GenerationMode.NEGATIVE, operation.label
    print(f"schemathesis: {sum(tally.sent.values())} requests over {len(tally.sent)} "
          f"operations; statuses {sorted(tally.statuses.items())}")  # fmt: skip
    assert len(tally.sent) == len(operations)
    assert tally.failed == {}, tally.failures()


def _drive(
    operation: Any,
    mode: GenerationMode,
    each: int,
    client: TestClient,
    tokens: Tokens,
    home: Path,
    tally: Tally,
) -> None:
    """Send ``each`` generated requests of one operation in one mode; tally each answer."""

    @settings(max_examples=each, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(case=operation.as_strategy(generation_mode=mode))
    def send(case: Any) -> None:
        if isinstance(case.body, dict | list):
            case.body = kept_in(case.body, home)
        arguments = case.as_transport_kwargs(base_url="http://testserver")
        if isinstance(arguments.get("data"), bytes | str):  # raw bytes, as httpx wants them
            arguments["content"] = arguments.pop("data")
        generated = arguments.pop("headers", {})
        headers = {k: v for k, v in generated.items() if k.lower() != "authorization"}
        response = client.request(
            arguments.pop("method"), arguments.pop("url"),
            headers={**headers, **client.headers},
            **{k: v for k, v in arguments.items()
               if k in ("params", "json", "content", "files")},
        )  # fmt: skip
        tally.sent[operation.label] += 1
        tally.statuses[response.status_code] += 1
        if response.status_code == 401:  # a generated revoke took the admin's own token
            client.headers["Authorization"] = f"Bearer {tokens.create(Role.ADMIN, 'again')}"
        try:
            case.validate_response(response, checks=[not_a_server_error, status_code_conformance])
        except FailureGroup as error:
            key = f"{operation.label} -> {response.status_code}"
            tally.failed.setdefault(key, str(error)[:1500])
            tally.found[key] += 1

    send()
