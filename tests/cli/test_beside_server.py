"""`dgxmm jobs run --offline` in its own process beside a server, on SQLite and PostgreSQL.

The found defects: the CLI's run was invisible to the server (its next statistics flush
overwrote it), the server answered 200 to a store operation while the CLI ran a user job, and
ran a second job of its type beside it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from support import wait_for

from dgxmm.errors import Busy
from dgxmm.jobs import JobRun, Outcome
from dgxmm.server import Host, Role, Services, Tokens, create_app
from dgxmm.store import Store, Trigger


@dataclass(frozen=True)
class Beside:
    data: Path
    db: str
    store: Store
    host: Host
    api: TestClient

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run ``dgxmm ARGS --offline`` in a process of its own."""
        return subprocess.run(
            [sys.executable, "-m", "dgxmm", *args, "--offline", "--data", str(self.data),
             "--db", self.db],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
    ]
)
def beside(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Beside]:
    data = tmp_path / "data"
    db = str(data / "dgxmm.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")
    store = Store.open(db, data_dir=data)
    host = Host(store, time_zone="UTC")
    host.tick()
    tokens = Tokens(store.engine, store.clock)
    with TestClient(create_app(Services(host=host, tokens=tokens))) as api:
        api.headers["Authorization"] = f"Bearer {tokens.create(Role.ADMIN, 'alice')}"
        for name in ("cp1", "cp2"):
            store.define_job(name=name, schedule="0 3 * * *", action="checkpoint")
        yield Beside(data=data, db=db, store=store, host=host, api=api)
    host.stop()
    store.close()


def test_the_cli_refuses_while_the_server_runs_a_job_of_its_type(beside: Beside) -> None:
    store = beside.store
    with beside.host.lock:
        beside.host.sync()
        job = beside.host.scheduler.get("cp1")
    run = JobRun(job, scheduled_at=store.clock.now_us(), started_at=store.clock.now_us(),
                 timer=lambda: 0.0)  # fmt: skip
    run_id = store.runs.claim(run, Trigger.MANUAL)  # the server's run, under way
    assert run_id is not None
    refused = beside.cli("jobs", "run", "cp2")
    assert refused.returncode == 1
    assert f"job cp1 of group checkpoint is running on instance {store.instance}" in refused.stderr
    checkpoint = beside.cli("store", "checkpoint")
    assert checkpoint.returncode == 1
    assert "checkpoint: job cp1" in checkpoint.stderr
    store.runs.finish(run_id, run.run())


def test_a_cli_run_shows_in_the_servers_runs_and_history(beside: Beside) -> None:
    before = beside.api.get("/api/jobs/history", params={"name": "cp2", "tier": "days"}).json()
    assert before["buckets"] == []
    beside.host.run_now("cp1")  # the server's own run, recorded in its statistics
    assert beside.cli("jobs", "run", "cp2").returncode == 0
    (row,) = beside.api.get("/api/jobs/runs", params={"name": "cp2"}).json()["runs"]
    assert (row["trigger"], row["outcome"]) == ("cli", "succeeded")
    assert row["instance"] != beside.store.instance
    beside.host.run_now("stats_flush")  # the server's next flush adds, and reads the CLI's
    days = beside.api.get("/api/jobs/history", params={"name": "cp2", "tier": "days"}).json()
    assert [b["count"] for b in days["buckets"]] == [1]
    cp1 = beside.api.get("/api/jobs/history", params={"name": "cp1", "tier": "days"}).json()
    assert [b["count"] for b in cp1["buckets"]] == [1]


LOST_CLI = textwrap.dedent(
    """
    import sys, time
    from dgxmm.jobs import CronSchedule, Job, JobKind, JobRun
    from dgxmm.store import Store, Trigger
    store = Store.open(sys.argv[1], data_dir=sys.argv[2])
    job = Job("cp1", JobKind.USER, CronSchedule.parse("0 3 * * *"), lambda c: None,
              group="checkpoint")
    now = store.clock.now_us()
    store.runs.claim(JobRun(job, scheduled_at=now, started_at=now, timer=time.monotonic),
                     Trigger.CLI)
    print(store.instance, flush=True)
    time.sleep(600)
    """
)


def test_a_killed_cli_holds_nothing_and_its_run_is_recorded_lost(beside: Beside) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", LOST_CLI, beside.db, str(beside.data)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        instance = process.stdout.readline().strip()
        with pytest.raises(Busy, match=f"instance {instance}"):
            beside.store.checkpoint()
        with pytest.raises(Busy):
            beside.host.run_now("cp2")
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        assert process.stdout is not None
        process.stdout.close()
    wait_for(lambda: beside.store.runs.running_elsewhere() == [] or None, "the CLI to be lost")
    beside.store.checkpoint()  # nothing holds it off now
    assert beside.store.runs.reap_lost() == [instance]
    (row,) = [r for r in beside.store.runs.page(job="cp1") if r.instance == instance]
    assert (row.outcome, row.error) == (Outcome.FAILED, f"abandoned: instance {instance} was lost")
    assert beside.host.run_now("cp2").outcome is Outcome.SUCCEEDED
