"""Requests go on while a job runs: a real server over HTTP, 200 requests during a 10 s job.

Timings are printed, never asserted (machines here are shared and noisy): the test asserts
that every request was answered while the job was still under way. `benchmarks/server.py`
measures the latencies.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support import serving

from dgxmm.jobs import CronSchedule, Job, JobKind, RunContext
from dgxmm.server import Host, Role, Services, Tokens, create_app
from dgxmm.store import Store


def ten_seconds(context: RunContext) -> str:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        context.check()
        time.sleep(0.01)
    return "slept 10 s"


@pytest.fixture
def served(fresh_db: Path) -> Iterator[tuple[str, str, Host]]:
    store = Store.open(fresh_db)
    tokens = Tokens(store.engine, store.clock)
    token = tokens.create(Role.ADMIN, "load")
    for i in range(50):
        store.define_job(name=f"job{i:02d}", schedule=f"{i} 3 * * *", action="checkpoint")
    slow = Job("ten_seconds", JobKind.SYSTEM, CronSchedule.parse("0 0 1 1 *"), ten_seconds)
    host = Host(store, time_zone="UTC", system_jobs=[slow])
    host.start()
    with serving(create_app(Services(host=host, tokens=tokens))) as base:
        yield base, token, host
    host.stop()
    store.close()


def test_it_keeps_answering_get_jobs_while_a_ten_second_job_runs(
    served: tuple[str, str, Host],
) -> None:
    base, token, host = served
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
        runner = threading.Thread(
            target=lambda: client.post("/api/jobs/run", json={"name": "ten_seconds"})
        )
        runner.start()
        assert _wait(lambda: any(run.name == "ten_seconds" for run in host.scheduler.running()))
        latencies = []
        for _ in range(200):
            started = time.perf_counter()
            response = client.get("/api/jobs")
            latencies.append(time.perf_counter() - started)
            assert response.status_code == 200
        last = {job["name"]: job for job in response.json()["jobs"]}
        still_running = last["ten_seconds"]["running"]
        runner.join(timeout=60)
    latencies.sort()
    print(
        f"\nGET /api/jobs during a 10 s job: p50 {latencies[99] * 1000:.1f} ms, "
        f"p99 {latencies[197] * 1000:.1f} ms, max {latencies[-1] * 1000:.1f} ms"
    )
    assert len(latencies) == 200
    assert still_running, "the 200 requests did not all fit inside the job's run"


def _wait(condition: object, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False
