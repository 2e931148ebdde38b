"""The workload sidecar: the workload statistics, in a JSON file beside the database.

It holds every job's run history (the overrides of the system jobs' schedules and switches
are the database's, ``overrides.py``; one an older dgxmm left here moves there on open).
Several processes may share it (a server and the CLI beside it on one data
directory): a flush takes the file's lock, reads what the others wrote, adds what this
process recorded since its last flush, writes the sum and keeps it, so no process's runs
overwrite another's. It belongs to the instance, not to the data: a backup does not carry
it. Writes are atomic (temporary file, fsync, rename). A damaged sidecar is set aside (renamed with
``.damaged-<time>``) and the store starts with empty statistics rather than refuse to open.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
import time
from pathlib import Path

from dgxmm.jobs import WorkloadStats
from dgxmm.store.files import FILE_MODE, write_atomic

__all__ = ["Sidecar"]

log = logging.getLogger(__name__)


class Sidecar:
    """The statistics of one store and the file they are flushed to."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.stats = _load(path)
        self._seen = _stamp(path)  # the file as this process last read or wrote it
        self._lock = threading.Lock()

    def flush(self) -> int | None:
        """Merge with the file when either side changed; return the bytes written, or None."""
        with self._lock:
            if not self.stats.has_pending and _stamp(self.path) == self._seen:
                return None
            lock_path = self.path.with_name(self.path.name + ".lock")
            # Private like the store's other files, whatever the umask.
            descriptor = os.open(lock_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
            with os.fdopen(descriptor, "ab") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # another process's flush waits here
                # The file is what this process last wrote plus what others wrote since.
                self.stats.merge_into(_load(self.path))
                data = json.dumps(self.stats.to_json(), separators=(",", ":")).encode()
                write_atomic(self.path, data)
                self._seen = _stamp(self.path)
            return len(data)


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return None
    return (status.st_mtime_ns, status.st_size, status.st_ino)


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
