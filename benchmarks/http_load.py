"""A lean HTTP/1.1 load on one event loop: kept-alive connections, httptools' parser.

``server.py`` measures with it, and ``proxy.py`` with its connections. One thread on uvloop
sends every request and reads every answer, so what it times is the server's answer, not the
load's own threads fighting for the GIL: the 50 httpx threads ``server.py`` used before
measured a static answer's p99 at 18 to 261 ms on two cores (benchmarks/README.md).

Two shapes:

- **closed** (``interval`` 0): each of ``connections`` sends its next request once the last is
  answered, ``total`` in all; a latency runs from the send to the answer's last byte;
- **paced** (``interval`` > 0): each connection sends one request every ``interval`` seconds
  for ``seconds``, the connections' first sends spread over the first interval. A latency runs
  from the request's *planned* time: an answer late enough to hold up the connection's next
  request counts against that one too, instead of hiding it (coordinated omission).

Run as a program it prints one JSON object (requests, errors, p50_ms, p99_ms, max_ms):

    python benchmarks/http_load.py URL TOKEN TOTAL CONNECTIONS INTERVAL SECONDS
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httptools
import uvloop

__all__ = ["Connection", "Load", "connect", "get_request", "percentile", "run"]


class Connection(asyncio.Protocol):
    """One kept-alive client connection; one request at a time."""

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.transport: Any = None
        self.done: asyncio.Future[int] | None = None
        self.first_body: float | None = None
        self.on_first_body: Callable[[], None] | None = None
        self.open = True

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as error:
            self._fail(error)

    def connection_lost(self, exc: Exception | None) -> None:
        self.open = False
        self._fail(ConnectionError("closed"))

    def on_body(self, body: bytes) -> None:
        if self.first_body is None:
            self.first_body = time.perf_counter()
            if self.on_first_body is not None:
                self.on_first_body()

    def on_message_complete(self) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_result(self.parser.get_status_code())

    def _fail(self, error: Exception) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_exception(error)

    async def request(self, data: bytes) -> int:
        """Send one request's bytes; return the answer's status once its last byte is in."""
        self.done = asyncio.get_running_loop().create_future()
        self.first_body = None
        self.transport.write(data)
        return await self.done


async def connect(url: str) -> Connection:
    """Open a connection to the host and port of ``url`` (http only)."""
    parts = urlsplit(url)
    assert parts.hostname is not None, url
    assert parts.port is not None, url
    _, connection = await asyncio.get_running_loop().create_connection(
        Connection, parts.hostname, parts.port
    )
    return connection


def get_request(url: str, token: str | None = None) -> bytes:
    """Return the bytes of a ``GET`` of ``url``, with a bearer token when given."""
    parts = urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\n{auth}\r\n".encode()


def percentile(ordered: list[float], p: float) -> float:
    """Return the ``p`` quantile of sorted values (the nearest rank at or above)."""
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] if ordered else float("nan")


@dataclass(slots=True)
class Load:
    """What a load saw: each answered request's latency (seconds), and the failures."""

    latencies: list[float] = field(default_factory=list)
    errors: int = 0

    def summary(self) -> dict[str, float]:
        ordered = sorted(self.latencies)
        return {
            "requests": len(ordered),
            "errors": self.errors,
            "p50_ms": percentile(ordered, 0.50) * 1000,
            "p99_ms": percentile(ordered, 0.99) * 1000,
            "max_ms": (ordered[-1] if ordered else float("nan")) * 1000,
        }


async def _one_connection(
    url: str, request: bytes, seen: Load, plan: Callable[[int], float | None]
) -> None:
    """Send on one connection at the times ``plan`` gives (None: stop), reconnecting if closed."""
    connection = await connect(url)
    sent = 0
    while (planned := plan(sent)) is not None:
        if (delay := planned - time.perf_counter()) > 0:
            await asyncio.sleep(delay)
        began = planned if planned > 0 else time.perf_counter()
        sent += 1
        try:
            status = await connection.request(request)
        except (ConnectionError, OSError, httptools.HttpParserError):
            seen.errors += 1
            connection = await connect(url)
            continue
        if status == 200:
            seen.latencies.append(time.perf_counter() - began)
        else:
            seen.errors += 1
        if not connection.open:
            connection = await connect(url)
    connection.transport.close()


async def _load(
    url: str, token: str | None, total: int, connections: int, interval: float, seconds: float
) -> Load:
    request = get_request(url, token)
    seen = Load()
    start = time.perf_counter() + 0.1  # every connection open before the first planned send

    def plan_for(n: int) -> Callable[[int], float | None]:
        if not interval:
            share = total // connections + (1 if n < total % connections else 0)
            return lambda sent: 0.0 if sent < share else None
        first = start + interval * n / connections
        end = start + seconds
        return lambda sent: t if (t := first + sent * interval) < end else None

    await asyncio.gather(
        *(_one_connection(url, request, seen, plan_for(n)) for n in range(connections))
    )
    return seen


def run(
    url: str,
    token: str | None,
    *,
    total: int = 0,
    connections: int = 1,
    interval: float = 0.0,
    seconds: float = 0.0,
) -> Load:
    """Run one load on a fresh uvloop in this thread; return what it saw."""
    return uvloop.run(_load(url, token, total, connections, interval, seconds))


def main() -> None:
    url, token, total, connections, interval, seconds = sys.argv[1:7]
    seen = run(
        url,
        token or None,
        total=int(total),
        connections=int(connections),
        interval=float(interval),
        seconds=float(seconds),
    )
    print(json.dumps(seen.summary()))


if __name__ == "__main__":
    main()
