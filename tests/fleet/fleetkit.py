"""Helpers for the fleet tests: free ports, stand-in processes, polling without timing.

Import as `from fleet.fleetkit import ...` (tests/ is on pytest's pythonpath)."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from dgxmm.fleet import HttpTimeouts

# Short enough that a test about failures does not sit for minutes; long for loopback.
TEST_TIMEOUTS = HttpTimeouts(connect_s=5.0, probe_s=10.0, metrics_s=20.0, action_s=120.0)


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
