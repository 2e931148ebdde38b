"""The CPU a target's process spends: every thread's, from the kernel's scheduler statistics."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path


def cpu_seconds(pid: int) -> float:
    """Return the CPU time of every thread of ``pid`` so far (seconds, the scheduler's count)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError, IndexError, ValueError):  # a thread that ended
            total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9


def idle_rates(pids: dict[str, int], seconds: float) -> dict[str, float]:
    """Return each process's CPU seconds per second with no load (dgxmm's fleet's own work)."""
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    time.sleep(seconds)
    return {name: (cpu_seconds(pid) - before[name]) / seconds for name, pid in pids.items()}
