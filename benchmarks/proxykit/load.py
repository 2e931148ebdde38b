"""The load: chat completions from a lean HTTP/1.1 client (``http_load.py``'s connections).

An open loop at a rate, streamed first bytes one at a time, and clients that go away.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httptools
import httpx
from http_load import connect

CHAT = {"model": "bench-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
SLOW = {"model": "bench-slow", "messages": [{"role": "user", "content": "hi"}], "stream": True}


def _request(url: str, body: dict[str, Any]) -> bytes:
    encoded = json.dumps(body).encode()
    host = url.removeprefix("http://").encode()
    return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: " + host
            + b"\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(encoded)).encode() + b"\r\n\r\n" + encoded)  # fmt: skip


async def open_loop(url: str, rate: float, seconds: float) -> dict[str, Any]:
    """Send chat completions at ``rate`` per second for ``seconds``; latencies from the plan."""
    request = _request(url, CHAT)
    idle = [await connect(url) for _ in range(16)]
    for connection in idle:  # warm the target's own connections too
        await connection.request(request)
    latencies: list[float] = []
    errors = 0
    last = 0.0

    async def one(planned: float) -> None:
        nonlocal errors, last
        connection = idle.pop() if idle else await connect(url)
        try:
            status = await connection.request(request)
        except (ConnectionError, OSError, httptools.HttpParserError):
            errors += 1
            return
        now = time.perf_counter()
        last = max(last, now)
        if status == 200:
            latencies.append(now - planned)
        else:
            errors += 1
        if connection.open:
            idle.append(connection)

    count = int(rate * seconds)
    start = time.perf_counter() + 0.05
    tasks = []
    for i in range(count):
        planned = start + i / rate
        delay = planned - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.ensure_future(one(planned)))
    _, pending = await asyncio.wait(tasks, timeout=30)
    for task in pending:
        task.cancel()
    for connection in idle:
        connection.transport.close()
    took = max(last - start, seconds)
    return {"latencies": latencies, "errors": errors + len(pending), "count": count,
            "served_rate": len(latencies) / took}  # fmt: skip


async def first_bytes(url: str, count: int) -> list[float]:
    """Time to the first body byte of streamed completions, one at a time, kept alive."""
    body = {**CHAT, "stream": True, "max_tokens": 4}
    request = _request(url, body)
    connection = await connect(url)
    times: list[float] = []
    for i in range(count + 10):
        began = time.perf_counter()
        status = await connection.request(request)
        assert status == 200, status
        assert connection.first_body is not None
        if i >= 10:  # the first ten warm up
            times.append(connection.first_body - began)
    connection.transport.close()
    return times


async def gone_clients(url: str, slow: str, clients: int) -> float:
    """Start ``clients`` slow streams, close each after its first chunk; return the seconds
    until the server runs none (its own gauge)."""
    request = _request(url, SLOW)
    connections = [await connect(url) for _ in range(clients)]
    firsts: list[asyncio.Future[None]] = []
    loop = asyncio.get_running_loop()
    for connection in connections:
        first: asyncio.Future[None] = loop.create_future()
        connection.on_first_body = lambda first=first: first.done() or first.set_result(None)
        firsts.append(first)
        asyncio.ensure_future(connection.request(request)).add_done_callback(
            lambda t: t.exception()
        )
    await asyncio.wait_for(asyncio.gather(*firsts), 30)
    running = await _running(slow)
    assert running == clients, f"the server runs {running} of {clients} streams"
    began = time.perf_counter()
    for connection in connections:
        connection.transport.abort()
    while await _running(slow) > 0:
        if time.perf_counter() - began > 30:
            return float("inf")
        await asyncio.sleep(0.02)
    return time.perf_counter() - began


async def _running(slow: str) -> int:
    async with httpx.AsyncClient(trust_env=False, timeout=10) as client:
        text = (await client.get(f"{slow}/metrics")).text
    for line in text.splitlines():
        if line.startswith("vllm:num_requests_running"):
            return int(float(line.rsplit(" ", 1)[1]))
    raise AssertionError("no vllm:num_requests_running in the stand-in's metrics")
