"""Shared test helpers: skip-or-fail for missing services, literal instants.

Import as `from support import need, at` (tests/ is on pytest's pythonpath)."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import pytest

from dgxmm.clock import to_us

IN_CI = os.environ.get("CI") == "true"


def need(condition: bool, reason: str) -> None:
    """Skip when a service or binary is missing on a developer's machine; under CI, fail."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"CI=true, and this test needs something missing: {reason}")
    pytest.skip(reason)


def at(iso: str) -> int:
    """Return an ISO 8601 time with an offset as microseconds since the epoch."""
    return to_us(datetime.fromisoformat(iso))


def free_port() -> int:
    """Return a loopback port nothing listens on now (bound once to port 0, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Serve an ASGI app with uvicorn on a thread, on a free loopback port; yield its URL."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, port=free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline and thread.is_alive():
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


STANDIN = (sys.executable, "-m", "dgxmm.fleet.standin")


def standin_keys(
    name: str,
    *args: str,
    gpus: tuple[int, ...] = (0,),
    awake: float = 40.0,
    asleep: float = 4.0,
    priority: int = 50,
    timeout: float = 60.0,
    **more: Any,
) -> dict[str, Any]:
    """Return the keys of a process deployment that runs dgxmm's stand-in on a free port."""
    return {
        "name": name,
        "model": f"{name}-model",
        "backend": "process",
        "command": [*STANDIN, "--port", "{port}", "--model", f"{name}-model", *args],
        "port": free_port(),
        "gpus": list(gpus),
        "memory_gib_awake": awake,
        "memory_gib_asleep": asleep,
        "priority": priority,
        "startup_timeout_s": timeout,
        **more,
    }
