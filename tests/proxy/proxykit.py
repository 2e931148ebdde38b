"""The proxy's tests: the schedule runner's kit (a store, a fleet of real stand-in servers,
the schedule service, a manual clock) with a ``ProxyApp`` served by uvicorn on loopback.

Import the fixture with ``from proxy.proxykit import ...`` (tests/ is on pytest's
pythonpath)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from decider.schedulekit import Kit
from sqlalchemy import select
from support import PATIENCE_S, serving

from dgxmm.fleet.deployments.tables import deployment_events
from dgxmm.proxy import ProxyApp
from dgxmm.store import reading

__all__ = ["JSON", "ProxyKit", "chat_body", "chat_bytes", "one_reply", "proxied"]

JSON = {"Content-Type": "application/json"}


def chat_body(model: str, **more: Any) -> dict[str, Any]:
    """Return a chat completion's body for ``model``."""
    return {"model": model, "messages": [{"role": "user", "content": "hello there"}], **more}


def chat_bytes(model: str, size: int) -> bytes:
    """Return a chat completion's body for ``model``, encoded, of exactly ``size`` bytes."""
    empty = json.dumps(chat_body(model, padding="")).encode()
    assert size >= len(empty), f"{size} bytes is too few for a chat body"
    return json.dumps(chat_body(model, padding="x" * (size - len(empty)))).encode()


def one_reply(sock: socket.socket) -> bytes:
    """Read one whole answer (its head and its Content-Length of body) from ``sock``."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        assert chunk, f"closed before a whole answer: {received!r}"
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


class ProxyKit(Kit):
    """A kit whose fleet is fronted by a proxy at ``url``."""

    def __init__(self, tmp_path: Path, db: Path | None = None) -> None:
        super().__init__(tmp_path, db)
        self.proxy = ProxyApp(self.fleet, refresh_s=0.2)
        self.proxy_url = ""

    def model(self, deployment_id: int) -> str:
        return self.fleet.deployments.get(deployment_id).model

    def post(self, path: str, body: dict[str, Any], **options: Any) -> httpx.Response:
        """Send one request through the proxy and wait for its answer."""
        return httpx.post(f"{self.proxy_url}{path}", json=body, timeout=PATIENCE_S, trust_env=False,
                          **options)  # fmt: skip

    def chat(self, deployment_id: int) -> None:  # the kit's own chat, through the proxy
        response = self.post("/v1/chat/completions", chat_body(self.model(deployment_id)))
        assert response.status_code == 200, response.text

    def send(self, path: str, content: bytes, headers: dict[str, str]) -> httpx.Response:
        """Send a body as it is, with exactly these headers (httpx adds only its own)."""
        return httpx.post(f"{self.proxy_url}{path}", content=content, headers=headers,
                          timeout=PATIENCE_S, trust_env=False)  # fmt: skip

    def post_in_background(
        self, path: str, body: dict[str, Any]
    ) -> tuple[threading.Thread, list[httpx.Response]]:
        """Send a request through the proxy on another thread; its answer lands in the list."""
        return self.in_background(lambda: self.post(path, body))

    def in_background(
        self, call: Callable[[], httpx.Response]
    ) -> tuple[threading.Thread, list[httpx.Response]]:
        """Make a call on another thread; its answer lands in the list."""
        answers: list[httpx.Response] = []
        thread = threading.Thread(target=lambda: answers.append(call()), daemon=True)
        thread.start()
        return thread, answers

    def many(self, count: int, path: str, body: dict[str, Any]) -> list[httpx.Response]:
        """Send ``count`` requests through the proxy at once; return their answers."""

        async def send_all() -> list[httpx.Response]:
            limits = httpx.Limits(max_connections=count)
            async with httpx.AsyncClient(
                timeout=PATIENCE_S, limits=limits, trust_env=False
            ) as client:
                return await asyncio.gather(
                    *(client.post(f"{self.proxy_url}{path}", json=body) for _ in range(count))
                )

        # A thread of its own: Playwright's sync API (the browser tests' session fixture) keeps
        # an event loop running in the main thread, where asyncio.run refuses to start one.
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, send_all()).result()

    def events(self, deployment_id: int) -> list[tuple[str, str | None, str, str | None]]:
        """(action, actor, outcome, detail) of a deployment's events, oldest first."""
        c = deployment_events.c
        with reading(self.store.engine) as connection:
            rows = connection.execute(
                select(c.action, c.actor, c.outcome, c.detail)
                .where(c.deployment_id == deployment_id)
                .order_by(c.id)
            )
            return [(row.action, row.actor, row.outcome, row.detail) for row in rows]


@pytest.fixture
def proxied(tmp_path: Path, fresh_db: Path) -> Iterator[ProxyKit]:
    made = ProxyKit(tmp_path, fresh_db)
    try:
        # As ProxyServer serves it: the peer's address is the socket's (forwarded headers are
        # the proxy's to pass on, not uvicorn's to believe).
        with serving(made.proxy, proxy_headers=False) as url:
            made.proxy_url = url
            yield made
    finally:
        made.close()
