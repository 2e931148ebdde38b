"""Several `dgxmm serve` on one database: one ticks, the others stand by and take over.

Real processes on a throwaway PostgreSQL, on the real clock: the holder is killed with
kill -9 in the middle of a run; a standby takes the lease, records the run abandoned, and a
third instance stands by in its turn. On SQLite a second server on the database is refused.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from server.test_serve import start, stop
from support import free_port, wait_for


class Instance:
    """One `dgxmm serve` process and a client with its admin token."""

    def __init__(self, tmp_path: Path, name: str, db: str) -> None:
        self.data = tmp_path / name
        self.port = free_port()
        self.process = start(self.data, self.port, "--db", db)
        # The first server's start wrote the database's admin token; the others find one.
        token = (tmp_path / "a" / "admin-token").read_text().strip()
        self.http = httpx.Client(
            base_url=f"http://127.0.0.1:{self.port}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )

    def get(self, path: str, **params: Any) -> Any:
        response = self.http.get(path, params=params)
        assert response.status_code == 200, response.text
        return response.json()

    def role(self) -> str:
        return str(self.get("/api/instances")["role"])

    def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.communicate(timeout=60)
        self.http.close()

    def stop(self) -> None:
        stop(self.process)
        self.http.close()


@pytest.mark.postgres
@pytest.mark.slow
def test_a_standby_takes_over_from_a_killed_holder_and_records_its_run_lost(
    tmp_path: Path, pg_url: str
) -> None:
    first = Instance(tmp_path, "a", pg_url)
    second: Instance | None = None
    third: Instance | None = None
    try:
        standby = second = Instance(tmp_path, "b", pg_url)
        assert (first.role(), second.role()) == ("holder", "standby")
        listed = {i["id"]: i for i in second.get("/api/instances")["instances"]}
        holder_id = first.get("/api/instances")["this"]
        assert (listed[holder_id]["role"], listed[holder_id]["alive"]) == ("holder", True)
        # A run under way on the holder when it dies: a query that sleeps.
        nap = {"name": "nap", "params": {}, "body": "SELECT pg_sleep(120)"}
        assert first.http.post("/api/queries/define", json=nap).status_code == 200
        assert first.http.post("/api/jobs/define", json={
            "name": "nap", "schedule": "0 3 * * *", "action": "query", "query": "nap"},
        ).status_code == 200  # fmt: skip
        asking = threading.Thread(
            target=lambda: _quietly(lambda: first.http.post("/api/jobs/run", json={"name": "nap"}))
        )
        asking.start()
        wait_for(
            lambda: [r for r in standby.get("/api/jobs/runs", name="nap")["runs"]
                     if r["finished_at"] is None] or None,
            "the holder's run of nap to be under way",
        )  # fmt: skip
        # The standby serves and refuses as the store says: nap runs elsewhere.
        refused = second.http.post("/api/jobs/run", json={"name": "nap"})
        assert refused.status_code == 409
        assert f"instance {holder_id}" in refused.json()["message"]
        first.kill()
        asking.join(timeout=60)
        wait_for(lambda: standby.role() == "holder" or None, "the standby to take over")
        (row,) = second.get("/api/jobs/runs", name="nap")["runs"]
        assert (row["outcome"], row["error"]) == (
            "failed",
            f"abandoned: instance {holder_id} was lost",
        )
        last = third = Instance(tmp_path, "c", pg_url)
        assert third.role() == "standby"
        alive = {i["id"]: i["alive"] for i in third.get("/api/instances")["instances"]}
        assert alive[holder_id] is False
        second.stop()
        second = None
        wait_for(lambda: last.role() == "holder" or None, "the third to take over")
    finally:
        for instance in (first, second, third):
            if instance is not None and instance.process.poll() is None:
                instance.kill()


def _quietly(call: Any) -> None:
    with contextlib.suppress(httpx.HTTPError):  # the server asked was killed: no answer comes
        call()


def test_a_second_server_on_one_sqlite_database_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = start(data, free_port())
    try:
        second = subprocess.run(
            [sys.executable, "-m", "dgxmm", "serve", "--data", str(data), "--port",
             str(free_port())],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert second.returncode == 1
        assert "another dgxmm serve is running on" in second.stderr + second.stdout
        assert "several instances on one database need PostgreSQL" in second.stderr + second.stdout
    finally:
        stop(first)
