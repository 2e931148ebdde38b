"""A throwaway PostgreSQL cluster for the tests: initdb and pg_ctl in a temporary directory.

The cluster listens only on a Unix socket inside its directory (``listen_addresses=''``).
PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` user
(``runuser -u postgres --``) with the directory owned by that user. Each test gets a fresh
database (``create_database``) and drops it after; the cluster stops at the end of the session.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import psycopg

__all__ = ["PgCluster", "find_pg_bin"]


def find_pg_bin() -> Path | None:
    """Return the directory of ``initdb`` and ``pg_ctl``, or None when PostgreSQL is missing."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True)
    for directory in candidates:
        if os.access(Path(directory, "initdb"), os.X_OK):
            return Path(directory)
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return Path(os.path.realpath(initdb)).parent
    return None


def _version_key(directory: str) -> int:
    part = Path(directory).parent.name
    return int(part) if part.isdigit() else 0


class PgCluster:
    """One running PostgreSQL server in a temporary directory."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="dgxmm-pg-"))
        self.data = self.root / "data"
        self.socket_dir = self.root
        self.log = self.root / "server.log"
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            # PostgreSQL refuses to run as root: run it as postgres, in a directory it owns.
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self._as_user = ["runuser", "-u", "postgres", "--"]
        self.user = "postgres" if self._as_user else pwd.getpwuid(os.geteuid()).pw_name

    def start(self) -> None:
        """Initialize the cluster and start the server; raise with its log when it fails."""
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-A",
            "trust",
            "-U",
            self.user,
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C",
        )
        options = " ".join(
            [
                "-c listen_addresses=''",
                f"-c unix_socket_directories='{self.socket_dir}'",
                "-c fsync=off",
                "-c full_page_writes=off",
                "-c synchronous_commit=off",
                "-c max_connections=200",
                # A backend notices a killed client within a second (the crash test).
                "-c client_connection_check_interval=1000",
            ]
        )
        try:
            self._run(
                "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start"
            )
        except subprocess.CalledProcessError as error:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(f"PostgreSQL did not start: {error}\n{log}") from error

    def stop(self) -> None:
        """Stop the server and remove its directory."""
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str) -> str:
        """Return the SQLAlchemy URL of ``database`` on this cluster."""
        return f"postgresql+psycopg://{self.user}@/{database}?host={self.socket_dir}"

    def connect(self, database: str = "postgres") -> psycopg.Connection[tuple[object, ...]]:
        """Open a psycopg connection (autocommit) to ``database``."""
        return psycopg.connect(
            host=str(self.socket_dir), user=self.user, dbname=database, autocommit=True
        )

    def create_database(self, template: str | None = None) -> str:
        """Create a fresh database (empty, or a copy of ``template``) and return its name."""
        name = f"t_{uuid.uuid4().hex[:16]}"
        copied = f' TEMPLATE "{template}"' if template else ""
        with self.connect() as conn:
            conn.execute(f'CREATE DATABASE "{name}"{copied}')
        return name

    def drop_database(self, name: str) -> None:
        """Drop a database, ending any session still connected to it."""
        with self.connect() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def _run(self, program: str, *args: str) -> None:
        subprocess.run(
            [*self._as_user, str(self.bin_dir / program), *args],
            check=True,
            capture_output=True,
            text=True,
            cwd=self.root,
        )
