"""Requests per second and p50 / p99 latency of ``GET /api/jobs`` with 1,000 jobs.

A real ``dgxmm serve`` process on SQLite, and a separate load process on loopback (threads
with keep-alive connections), first with nothing running, then while a long query job runs.

    .venv/bin/python benchmarks/server.py [--jobs 1000] [--requests 2000] [--threads 4]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent

LOAD = r"""
import json, statistics, sys, threading, time
import httpx
url, token, total, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
latencies, errors = [], []
lock = threading.Lock()
def worker(n):
    with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
        for _ in range(n):
            started = time.perf_counter()
            response = client.get(url)
            took = time.perf_counter() - started
            with lock:
                (latencies if response.status_code == 200 else errors).append(took)
began = time.perf_counter()
pool = [threading.Thread(target=worker, args=(total // threads,)) for _ in range(threads)]
for t in pool: t.start()
for t in pool: t.join()
elapsed = time.perf_counter() - began
latencies.sort()
def pct(p): return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000
print(json.dumps({"requests": len(latencies), "errors": len(errors),
                  "rps": len(latencies) / elapsed, "p50_ms": pct(0.50), "p99_ms": pct(0.99),
                  "max_ms": latencies[-1] * 1000}))
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def prepare(data: Path, jobs: int) -> str:
    """Define the jobs and a long query job; return an admin token."""
    sys.path.insert(0, str(ROOT / "src"))
    from dgxmm.server import Role, Tokens
    from dgxmm.store import Store

    store = Store.open(data / "dgxmm.db", data_dir=data)
    try:
        store.define_query(
            "count_up",
            {"n": "int"},
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < :n) "
            "SELECT count(*) FROM c",
        )
        for i in range(jobs):
            store.define_job(
                name=f"job{i:04d}", schedule=f"{i % 60} {i % 24} 1 1 *", action="checkpoint"
            )
        store.define_job(
            name="long_query", schedule="0 0 1 1 *", action="query", query="count_up",
            args={"n": 10**10}, timeout_ms=600_000,
        )  # fmt: skip
        return Tokens(store.engine, store.clock).create(Role.ADMIN, "bench")
    finally:
        store.close()


def load(url: str, token: str, requests: int, threads: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", LOAD, url, token, str(requests), str(threads)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=4)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dgxmm-bench-") as temporary:
        data = Path(temporary)
        token = prepare(data, options.jobs)
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "dgxmm", "serve", "--data", str(data), "--port", str(port),
             "--time-zone", "UTC"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        try:
            assert server.stdout is not None
            while "serving on" not in (line := server.stdout.readline()):
                if not line:
                    raise SystemExit("dgxmm serve did not start")
            base = f"http://127.0.0.1:{port}"
            url = f"{base}/api/jobs"
            headers = {"Authorization": f"Bearer {token}"}
            load(url, token, 100, 1)  # warm up
            idle = load(url, token, options.requests, options.threads)

            def run_long() -> None:
                httpx.post(
                    f"{base}/api/jobs/run",
                    json={"name": "long_query"},
                    headers=headers,
                    timeout=900,
                )

            runner = threading.Thread(target=run_long, daemon=True)
            runner.start()
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                jobs = httpx.get(url, headers=headers, timeout=60).json()["jobs"]
                if next(j for j in jobs if j["name"] == "long_query")["running"]:
                    break
                time.sleep(0.1)
            busy = load(url, token, options.requests, options.threads)
            jobs = httpx.get(url, headers=headers, timeout=60).json()["jobs"]
            still = next(j for j in jobs if j["name"] == "long_query")["running"]
        finally:
            server.send_signal(signal.SIGINT)
            server.communicate(timeout=120)
    print(
        f"GET /api/jobs with {options.jobs + 1} user jobs and the system jobs, "
        f"{options.requests} requests from {options.threads} threads in a separate process"
    )
    print(f"{'':24}{'req/s':>10}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}{'errors':>8}")
    for name, row in (("nothing running", idle), ("a query job running", busy)):
        print(
            f"{name:24}{row['rps']:>10.1f}{row['p50_ms']:>10.1f}{row['p99_ms']:>10.1f}"
            f"{row['max_ms']:>10.1f}{row['errors']:>8.0f}"
        )
    print(
        f"ratio p99 running / idle: {busy['p99_ms'] / idle['p99_ms']:.2f}; "
        f"the job was {'still' if still else 'no longer'} running at the end"
    )


if __name__ == "__main__":
    main()
