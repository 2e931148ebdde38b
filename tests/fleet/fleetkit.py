"""Helpers for the fleet tests: free ports, stand-in processes, polling without timing.

Import as `from fleetkit import ...` (pytest puts this folder on sys.path)."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import httpx
from support import STANDIN, free_port  # noqa: F401  (re-exported for the fleet tests)

from dgxmm.fleet import HttpTimeouts
from dgxmm.fleet.prometheus import parse_exposition

T = TypeVar("T")

# Generous: the machine is shared and noisy. Nothing here asserts how long anything took.
PATIENCE_S = 60.0
# Short enough that a test about failures does not sit for minutes; long for loopback.
TEST_TIMEOUTS = HttpTimeouts(connect_s=5.0, probe_s=10.0, metrics_s=20.0, action_s=120.0)


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


def pid_exists(pid: int) -> bool:
    """Return whether a process (not a zombie) with this pid exists."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def ensure_gone(pid: int) -> None:
    """Kill a leftover process group after a failed test; never our own."""
    if pid != os.getpid() and pid_exists(pid):
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
