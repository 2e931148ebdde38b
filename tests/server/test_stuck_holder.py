"""A holder that is stuck but still connected (SIGSTOP) loses the lease, and stands down.

Two `dgxmm serve` on a throwaway PostgreSQL, on a fast clock (10x: a cron minute passes in 6
real seconds), with an every-minute query job. The holder is stopped with SIGSTOP: its
socket stays open, so PostgreSQL keeps its session and its advisory locks. The standby sees
that its heartbeat has not moved for the liveness limit (``--tick 0.5``: 10 real seconds),
ends its sessions and takes the lease. Then the old holder is resumed with SIGCONT: it must
notice that it lost the lease and stand by, never claiming a run beside the new holder.
"""

from __future__ import annotations

import os
import signal
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from server.test_serve import start
from support import free_port, wait_for

from dgxmm.server.host.lease import stuck_after

RATE = 10
MINUTE_US = 60_000_000
TICK_SECONDS = 0.5


class Server:
    """One `dgxmm serve` on the fast clock, and a client with the admin token."""

    def __init__(self, tmp_path: Path, name: str, db: str, env: dict[str, str]) -> None:
        port = free_port()
        self.process = start(
            tmp_path / name, port, "--db", db, "--tick", str(TICK_SECONDS), env=env
        )
        token = (tmp_path / "a" / "admin-token").read_text().strip()
        self.http = httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        )
        self.id = str(self.get("/api/instances")["this"])

    def get(self, path: str, **params: Any) -> Any:
        response = self.http.get(path, params=params)
        assert response.status_code == 200, response.text
        return response.json()

    def role(self) -> str:
        return str(self.get("/api/instances")["role"])

    def signal(self, sig: signal.Signals) -> None:
        os.kill(self.process.pid, sig)

    def kill(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGCONT)  # a stopped process dies only awake
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.communicate(timeout=60)
        self.http.close()


def _scheduled(server: Server) -> list[dict[str, Any]]:
    runs = server.get("/api/jobs/runs", name="tick", limit=500)["runs"]
    return [r for r in runs if r["trigger"] == "schedule"]


def _clock_now(anchor_us: int) -> int:
    return anchor_us + round((time.time_ns() // 1000 - anchor_us) * RATE)


@pytest.mark.postgres
@pytest.mark.slow
def test_a_stopped_holder_loses_the_lease_and_stands_down_when_it_resumes(
    tmp_path: Path, pg_url: str
) -> None:
    assert stuck_after(TICK_SECONDS) == 10.0  # what the docstring and docs/scale-out.md say
    anchor_us = time.time_ns() // 1000 // 1_000_000 * 1_000_000
    anchor = datetime.fromtimestamp(anchor_us / 1e6, UTC).isoformat()
    env = {"DGXMM_FAST_CLOCK": f"{RATE}@{anchor}"}
    servers: list[Server] = []
    try:
        servers.append(old := Server(tmp_path, "a", pg_url, env))
        servers.append(new := Server(tmp_path, "b", pg_url, env))
        assert (old.role(), new.role()) == ("holder", "standby")
        query = {"name": "one", "params": {}, "body": "SELECT 1"}
        assert old.http.post("/api/queries/define", json=query).status_code == 200
        assert old.http.post("/api/jobs/define", json={
            "name": "tick", "schedule": "* * * * *", "action": "query", "query": "one"},
        ).status_code == 200  # fmt: skip
        wait_for(lambda: _scheduled(new) or None, "the first scheduled run of tick", 60)

        old.signal(signal.SIGSTOP)
        stopped_at = time.monotonic()
        wait_for(lambda: new.role() == "holder" or None, "the standby to take the lease", 60)
        took = time.monotonic() - stopped_at
        assert took >= stuck_after(TICK_SECONDS) - 1.0  # not before the limit: a live one keeps it
        taken_at = _clock_now(anchor_us)
        # The new holder runs the minutes while the old one sleeps.
        wait_for(
            lambda: any(r["instance"] == new.id for r in _scheduled(new)) or None,
            "a scheduled run by the new holder",
            60,
        )

        old.signal(signal.SIGCONT)
        wait_for(lambda: old.role() == "standby" or None, "the old holder to stand down", 30)
        resumed_at = _clock_now(anchor_us)
        # Two more minutes pass with both awake; one holder ticks them.
        until = resumed_at // MINUTE_US * MINUTE_US + 3 * MINUTE_US
        wait_for(
            lambda: any(r["scheduled_at_us"] >= until for r in _scheduled(new)) or None,
            "two more minutes of runs",
            60,
        )
        rows = _scheduled(new)
        assert new.role() == "holder"
        listed = new.get("/api/instances")["instances"]
        holders = [i["id"] for i in listed if i["alive"] and i["role"] == "holder"]
        assert holders == [new.id]
    finally:
        for server in servers:
            server.kill()

    late = [r for r in rows if r["scheduled_at_us"] >= taken_at]
    assert late, "no run after the takeover"
    by_old = [r for r in late if r["instance"] == old.id and r["started_at_us"] >= resumed_at]
    assert by_old == [], f"the resumed old holder claimed runs beside the new one: {by_old}"
    minutes = [r["scheduled_at_us"] for r in rows]
    assert len(minutes) == len(set(minutes))  # one row per minute, whoever ran it
