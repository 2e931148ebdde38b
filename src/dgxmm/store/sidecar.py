"""The workload sidecar: the workload statistics, in a JSON file beside the database.

It holds every job's run history and the overrides of the system jobs' schedules and
switches. It belongs to the instance, not to the data: a backup does not carry it. Writes are
atomic (temporary file, fsync, rename). A damaged sidecar is set aside (renamed with
``.damaged-<time>``) and the store starts with empty statistics rather than refuse to open.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

from dgxmm.jobs import WorkloadStats
from dgxmm.store.files import write_atomic

__all__ = ["Sidecar"]

log = logging.getLogger(__name__)


class Sidecar:
    """The statistics of one store and the file they are flushed to."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.stats = _load(path)
        self._written = self.stats.version if path.exists() else None
        self._lock = threading.Lock()

    def flush(self) -> int | None:
        """Write the statistics when they changed since the last write; return the bytes."""
        with self._lock:
            version = self.stats.version
            if version == self._written:
                return None
            data = json.dumps(self.stats.to_json(), separators=(",", ":")).encode()
            write_atomic(self.path, data)
            self._written = version
            return len(data)


def _load(path: Path) -> WorkloadStats:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return WorkloadStats()
    try:
        return WorkloadStats.from_json(json.loads(text))
    except ValueError as error:
        aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}")
        path.rename(aside)
        log.warning("workload sidecar %s is damaged (%s); set aside as %s", path, error, aside)
        return WorkloadStats()
