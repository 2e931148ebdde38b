"""Shared test helpers: skip-or-fail for missing services, literal instants.

Import as `from support import need, at` (tests/ is on pytest's pythonpath)."""

from __future__ import annotations

import asyncio
import os
import select
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

import httpx
import pytest

from dgxmm.clock import to_us
from dgxmm.fleet.metrics.prometheus import parse_exposition
from dgxmm.store.files import DIR_MODE, FILE_MODE
from dgxmm.store.opening import open_database

IN_CI = os.environ.get("CI") == "true"


class Answer(Protocol):
    """What a test reads of an HTTP answer (the test client's and httpx's alike)."""

    @property
    def status_code(self) -> int: ...

    @property
    def text(self) -> str: ...

    def json(self) -> Any: ...


_R = TypeVar("_R")


def run_coroutine(coroutine: Coroutine[Any, Any, _R]) -> _R:
    """Run ``coroutine`` to its end on a thread of its own, and return what it returned.

    Not ``asyncio.run`` on the test's thread: a browser test before it in the same worker
    leaves Playwright's event loop running there, and ``asyncio.run`` refuses to start then.
    """
    done: list[_R] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            done.append(asyncio.run(coroutine))
        except BaseException as error:  # handed to the test's thread below
            failed.append(error)

    thread = threading.Thread(target=run, name="run-coroutine")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return done[0]


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
    return free_ports(1)[0]


_HANDED_OUT: set[int] = set()  # every port this process was given, bound by now or not
_HANDED_LOCK = threading.Lock()


def free_ports(count: int) -> list[int]:
    """Return `count` distinct loopback ports nothing listens on now, none handed out before.

    A released port may be handed out again by the next bind to port 0: two deployments
    defined before either started were given one port (a rollups test's "port 57041 is the
    port of deployment 'slow'"). So this process never hands one port out twice."""
    found: list[int] = []
    with _HANDED_LOCK:
        while len(found) < count:
            probes = [socket.socket() for _ in range(count - len(found))]
            try:
                for probe in probes:
                    probe.bind(("127.0.0.1", 0))
                ports = [int(probe.getsockname()[1]) for probe in probes]
            finally:
                for probe in probes:
                    probe.close()
            found += [port for port in ports if port not in _HANDED_OUT and port not in found]
        _HANDED_OUT.update(found)
    return found


def start_serve(
    argv: Callable[[list[int]], list[str]],
    ports: int = 1,
    *,
    env: dict[str, str] | None = None,
    attempts: int = 3,
) -> tuple[subprocess.Popen[str], list[int]]:
    """Start `python -m dgxmm <argv(ports)>` and wait for its "serving on" line.

    A port from `free_ports` is released before the server binds it, and another test worker
    may take it in between: a start refused with "address already in use" is tried again on
    fresh ports. Any other failure raises with everything the process printed."""
    output = ""
    for _ in range(attempts):
        chosen = free_ports(ports)
        process = subprocess.Popen(
            [sys.executable, "-m", "dgxmm", *argv(chosen)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        )
        assert process.stdout is not None
        deadline = time.monotonic() + 60
        seen: list[str] = []
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            seen.append(line)
            if "serving on" in line:
                return process, chosen
            if not line and process.poll() is not None:
                break
        process.kill()
        rest, _ = process.communicate()
        output = "".join(seen) + rest
        if "address already in use" not in output:
            break
    raise AssertionError(f"dgxmm did not start serving: {output}")


@contextmanager
def serving(app: Any, **options: Any) -> Iterator[str]:
    """Serve an ASGI app with uvicorn on a thread, on a free loopback port; yield its URL.

    ``options`` go to ``uvicorn.Config`` as they are."""
    import uvicorn

    config = uvicorn.Config(app, port=free_port(), log_level="warning", **options)
    server = uvicorn.Server(config)
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


STANDIN = (sys.executable, "-m", "dgxmm.standin")


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


def migrate_template(target: str | Path, data_dir: Path | None = None) -> None:
    """Migrate a new database (a SQLite path, a PostgreSQL URL) as ``Store.open`` would."""
    open_database(target, data_dir).dispose()


def new_store_id() -> str:
    """Return a store id as the first migration draws one, for a copy of a template."""
    return uuid.uuid4().hex


def copy_migrated(template: Path, path: Path) -> Path:
    """Copy a template of ``migrate_template`` to ``path``, a new database of its own.

    What ``Store.open`` makes of a new file, without running every migration again (a quarter
    of a second each time): the copy gets its own ``store_id``, as a fresh migration draws
    one, and the store's own modes. The template's dirty-page log is not copied: a new file
    has none."""
    path.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    assert not path.exists(), f"{path} exists: a copy is only for a new database"
    shutil.copyfile(template, path)
    path.chmod(FILE_MODE)
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE store_state SET store_id = ?", (new_store_id(),))
    connection.close()
    return path


T = TypeVar("T")

# Generous: the machine is shared and noisy. Nothing here asserts how long anything took.
PATIENCE_S = 60.0


def wait_for(check: Callable[[], T | None], what: str, timeout_s: float = PATIENCE_S) -> T:
    """Poll ``check`` until it returns something truthy; fail naming ``what`` otherwise."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout_s:g} s waiting for {what}")
        time.sleep(0.05)


class StandinProcess:
    """A stand-in started by the test itself (for the external backend and endpoint tests)."""

    def __init__(self, log_dir: Path, *args: str, model: str = "standin-model") -> None:
        self.model = model
        self.log_path = log_dir / f"standin-{time.monotonic_ns()}.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [*STANDIN, "--port", "0", "--model", model, *args],
                stdout=subprocess.PIPE,
                stderr=log,
                stdin=subprocess.DEVNULL,
            )
        self.first_line = self._read_line()
        marker = "listening on "
        if marker not in self.first_line:
            self.kill()
            raise AssertionError(f"the stand-in did not start: {self.first_line!r}")
        self.base_url = self.first_line.split(marker, 1)[1].split()[0]
        self.client = httpx.Client(base_url=self.base_url, timeout=PATIENCE_S, trust_env=False)

    def _read_line(self) -> str:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], PATIENCE_S)
        if not ready:
            return "(nothing printed)"
        return self.process.stdout.readline().decode()

    def metrics(self) -> dict[str, float]:
        """Return the /metrics samples summed by name (plus name{label=value} for labels)."""
        page = parse_exposition(self.client.get("/metrics").text)
        totals: dict[str, float] = {}
        for series in page.series:
            totals[series.name] = totals.get(series.name, 0.0) + series.value
            for key, value in series.labels:
                if key not in ("model_name", "engine"):
                    name = f"{series.name}{{{key}={value}}}"
                    totals[name] = totals.get(name, 0.0) + series.value
        return totals

    def terminate(self) -> int:
        """Send SIGTERM and return the exit code."""
        self.client.close()
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=PATIENCE_S)

    def kill(self) -> None:
        """Kill the process if it still runs."""
        self.client.close()
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=PATIENCE_S)
        if self.process.stdout is not None:
            self.process.stdout.close()
