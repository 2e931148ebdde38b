"""Where dgxmm keeps its data by default, and which time zone the machine is in.

A leaf module like ``errors.py`` and ``clock.py``: it imports nothing heavy, so the command
line can use it without loading the server.
"""

from __future__ import annotations

import os
from pathlib import Path

from dgxmm.errors import ZoneError
from dgxmm.jobs.cron.zones import resolve_zone

__all__ = ["ADMIN_TOKEN_FILE", "DEFAULT_DATA_DIR", "SERVER_FILE", "machine_zone"]

DEFAULT_DATA_DIR = Path("dgxmm-data")
# In the data directory: the admin token the server's first start writes (mode 0600), and
# where a running ``dgxmm serve`` listens ({"url", "pid"}), for the command line to find it.
ADMIN_TOKEN_FILE = "admin-token"
SERVER_FILE = "server.json"


def machine_zone() -> str:
    """Return the machine's IANA zone: ``TZ``, else ``/etc/localtime``, else UTC."""
    candidates = [os.environ.get("TZ", "").removeprefix(":")]
    localtime = Path("/etc/localtime")
    if localtime.is_symlink():
        target = str(localtime.resolve())
        if "zoneinfo/" in target:
            candidates.append(target.split("zoneinfo/", 1)[1])
    timezone_file = Path("/etc/timezone")
    if timezone_file.is_file():
        candidates.append(timezone_file.read_text().strip())
    for name in candidates:
        if not name:
            continue
        try:
            return resolve_zone(name).key
        except ZoneError:
            continue
    return "UTC"
