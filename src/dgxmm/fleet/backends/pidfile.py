"""The pid file of a server process, and what Linux' /proc says about that process.

A pid alone does not name a process: after the server exits, the kernel may hand its pid to
something else. The pid file therefore also records the process' start time (field 22 of
``/proc/<pid>/stat``, in clock ticks since boot) and the boot id; a process counts as ours
only while all three match. A zombie counts as gone.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "PidRecord",
    "boot_id",
    "group_members",
    "is_alive",
    "read_pid_file",
    "remove_pid_file",
    "start_ticks",
    "write_pid_file",
]

_PROC = Path("/proc")


@dataclass(frozen=True, slots=True, kw_only=True)
class PidRecord:
    """Who the server process is: enough to recognize it again after a dgxmm restart."""

    pid: int  # also its process group: it was started in a session of its own
    start_ticks: int
    boot_id: str
    argv: tuple[str, ...]
    port: int
    started_at_us: int


def write_pid_file(path: Path, record: PidRecord) -> None:
    """Write the record atomically, so a crash never leaves half a pid file."""
    text = json.dumps(
        {
            "pid": record.pid,
            "start_ticks": record.start_ticks,
            "boot_id": record.boot_id,
            "argv": list(record.argv),
            "port": record.port,
            "started_at_us": record.started_at_us,
        },
        indent=1,
    )
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text + "\n", encoding="utf-8")
    os.replace(partial, path)


def read_pid_file(path: Path) -> PidRecord | None:
    """Return the record in the pid file, or None when there is none or it is unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        record = PidRecord(
            pid=int(data["pid"]),
            start_ticks=int(data["start_ticks"]),
            boot_id=str(data["boot_id"]),
            argv=tuple(str(arg) for arg in data["argv"]),
            port=int(data["port"]),
            started_at_us=int(data["started_at_us"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return record if record.pid > 0 else None


def remove_pid_file(path: Path) -> None:
    """Remove the pid file if it exists."""
    path.unlink(missing_ok=True)


def is_alive(record: PidRecord) -> bool:
    """Return whether the process the record names still runs (same boot, same start)."""
    return record.boot_id == boot_id() and start_ticks(record.pid) == record.start_ticks


def start_ticks(pid: int) -> int | None:
    """Return when process ``pid`` started, in clock ticks since boot; None if gone or a zombie."""
    fields = _stat_fields(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def group_members(pgid: int) -> list[int]:
    """Return the live (not zombie) processes of process group ``pgid``."""
    members = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is not None and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def boot_id() -> str:
    """Return this boot's id: start ticks restart from zero at every boot."""
    try:
        return (_PROC / "sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def _stat_fields(pid: int) -> list[str] | None:
    """Return /proc/<pid>/stat from field 3 (state) on, or None when the process is gone."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # Field 2 is the command name in parentheses and may itself hold spaces and ")".
    return text[text.rindex(")") + 2 :].split()
