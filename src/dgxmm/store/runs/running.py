"""The user jobs under way in one store, which the operations on its files wait for.

The spec: while a job of a user runs, checkpoint, backup, rollback, attic restore and
remove, compact and closing answer 409 and change nothing. A run counts from the moment its
action enters ``Store.run_job`` until it returns, whatever the outcome.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from dgxmm.errors import Busy

__all__ = ["RunningJobs"]


class RunningJobs:
    """Counts of the user jobs under way, by name (a job may run twice: ``Run now``)."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    @contextmanager
    def run(self, name: str) -> Iterator[None]:
        """Count ``name`` as running while the block runs."""
        with self._lock:
            self._counts[name] += 1
        try:
            yield
        finally:
            with self._lock:
                self._counts[name] -= 1
                if self._counts[name] <= 0:
                    del self._counts[name]

    def names(self) -> list[str]:
        """Return the names of the jobs under way."""
        with self._lock:
            return sorted(self._counts)

    def refuse(self, what: str) -> None:
        """Raise ``Busy`` naming the jobs under way, if any: ``what`` cannot run now."""
        running = self.names()
        if running:
            raise Busy(
                f"{what}: job {', '.join(running)} is running; try again when it has finished"
            )
