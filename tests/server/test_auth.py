"""Tokens and roles: no token 401, viewer reads only, admin writes; the first-start token file."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Connection, Engine
from support import wait_for

from dgxmm.clock import ManualClock
from dgxmm.server import Host, Role, Services, Tokens, create_app
from dgxmm.server.access import tokens as token_module
from dgxmm.server.access.tokens import ADMIN_TOKEN_FILE, RECHECK_S
from dgxmm.store import Store, reading


def test_it_refuses_requests_without_a_valid_token(host: Host, tokens: Tokens) -> None:
    with TestClient(create_app(Services(host=host, tokens=tokens))) as anonymous:
        response = anonymous.get("/api/jobs")
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        assert (
            anonymous.get("/api/jobs", headers={"Authorization": "Bearer dgxmm_nope"}).status_code
            == 401
        )
        assert (
            anonymous.get("/api/jobs", headers={"Authorization": "Basic eDp5"}).status_code == 401
        )


def test_it_lets_a_viewer_read_but_not_write(viewer: TestClient) -> None:
    assert viewer.get("/api/jobs").status_code == 200
    for path, body in [
        ("/api/jobs/define", {"name": "x", "schedule": "* * * * *", "action": "checkpoint"}),
        ("/api/jobs/enable", {"name": "compact", "enabled": True}),
        ("/api/jobs/run", {"name": "stats_flush"}),
        ("/api/queries/define", {"name": "q", "params": {}, "body": "SELECT 1"}),
    ]:
        assert viewer.post(path, json=body).status_code == 403, path


def test_it_stops_honouring_a_revoked_token(
    client: TestClient, tokens: Tokens, admin_token: str
) -> None:
    assert client.get("/api/jobs").status_code == 200
    assert tokens.revoke(admin_token)
    assert client.get("/api/jobs").status_code == 401


def test_it_writes_an_admin_token_on_first_start_readable_only_by_its_owner(
    tokens: Tokens, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    path = tokens.ensure_admin_token(data)
    assert path == data / ADMIN_TOKEN_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    identity = tokens.identify(path.read_text().strip())
    assert identity is not None
    assert identity.is_admin
    assert tokens.ensure_admin_token(data) is None  # second start: the token stays


def test_it_accepts_the_login_cookie_for_reads_and_same_origin_writes(
    host: Host, tokens: Tokens, admin_token: str
) -> None:
    with TestClient(
        create_app(Services(host=host, tokens=tokens)), base_url="http://testserver"
    ) as browser:
        login = browser.post(
            "/login", data={"token": admin_token, "next": "/jobs"}, follow_redirects=False
        )
        assert login.status_code == 303
        assert "httponly" in login.headers["set-cookie"].lower()
        assert "samesite=strict" in login.headers["set-cookie"].lower()
        assert browser.get("/api/jobs").status_code == 200
        same = browser.post(
            "/api/jobs/enable",
            json={"name": "compact", "enabled": True},
            headers={"Origin": "http://testserver"},
        )
        assert same.status_code == 200
        cross = browser.post(
            "/api/jobs/enable",
            json={"name": "compact", "enabled": False},
            headers={"Origin": "http://evil.example"},
        )
        assert cross.status_code == 401


def test_it_refuses_a_wrong_login_token(host: Host, tokens: Tokens) -> None:
    with TestClient(create_app(Services(host=host, tokens=tokens))) as browser:
        response = browser.post("/login", data={"token": "dgxmm_wrong"}, follow_redirects=False)
        assert response.status_code == 303
        assert "error=" in response.headers["location"]
        assert "set-cookie" not in response.headers


def test_a_token_revoked_by_another_process_stops_opening_within_the_recheck(
    client: TestClient, store: Store, admin_token: str
) -> None:
    assert client.get("/api/changes").status_code == 200  # found live: remembered
    # Another process on the same database (the CLI, another instance) revokes it.
    assert Tokens(store.engine, store.clock).revoke(admin_token)
    wait_for(
        lambda: client.get("/api/changes").status_code == 401,
        "the revoked token to be refused",
        timeout_s=10 * RECHECK_S,
    )


def test_a_remembered_token_is_refused_the_moment_it_expires(
    host: Host, tokens: Tokens, clock: ManualClock
) -> None:
    expires = clock.now_us() + 60 * 1_000_000
    token = tokens.create(Role.VIEWER, "brief", expires_at=expires)
    with TestClient(create_app(Services(host=host, tokens=tokens))) as made:
        made.headers["Authorization"] = f"Bearer {token}"
        assert made.get("/api/changes").status_code == 200
        assert tokens.known(token) is not None  # remembered...
        clock.set(expires)
        assert tokens.known(token) is None  # ...but not past its expiry
        assert made.get("/api/changes").status_code == 401


def test_a_check_under_way_when_its_token_is_revoked_remembers_nothing(
    tokens: Tokens, admin_token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The revocation lands between the check's read and its remembering: the check's answer
    stands for its own request, but the next one must not find the token remembered."""
    real_reading = reading  # what access/tokens.py reads with

    @contextmanager
    def read_then_revoke(engine: Engine) -> Iterator[Connection]:
        with real_reading(engine) as connection:
            yield connection
        monkeypatch.setattr(token_module, "reading", real_reading)
        assert tokens.revoke(admin_token)  # through this server, after the read

    monkeypatch.setattr(token_module, "reading", read_then_revoke)
    assert tokens.identify(admin_token) is not None  # it read the token live
    assert tokens.known(admin_token) is None
    assert tokens.identify(admin_token) is None
