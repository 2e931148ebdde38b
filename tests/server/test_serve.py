"""`dgxmm serve` as a real process: first start, the API over HTTP, Ctrl-C, and a restart."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
from support import free_port


def start(
    data: Path, port: int, *more: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dgxmm",
            "serve",
            "--data",
            str(data),
            "--port",
            str(port),
            "--time-zone",
            "Europe/Berlin",
            "--tick",
            "0.5",
            *more,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )
    assert process.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if "serving on" in line:
            return process
        if not line and process.poll() is not None:
            break
    process.kill()
    output, _ = process.communicate()
    raise AssertionError(f"dgxmm serve did not start: {output}")


def stop(process: subprocess.Popen[str], sig: signal.Signals = signal.SIGINT) -> str:
    process.send_signal(sig)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 0, output
    return output


def test_it_serves_stops_on_ctrl_c_and_keeps_everything_across_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    port = free_port()
    process = start(data, port)
    token_file = data / "admin-token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    token = token_file.read_text().strip()
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {token}"}
    try:
        jobs = httpx.get(f"{base}/api/jobs", headers=headers, timeout=30).json()["jobs"]
        names = [job["name"] for job in jobs]
        assert names[:3] == ["stats_flush", "compact", "runs_purge"]
        # The fleet's, the schedules' and the proposals' system jobs are wired in too.
        assert names[3:] == [
            "metrics_rollup", "metrics_purge", "schedule_runner", "traffic_profiles",
            "schedule_proposals",
        ]  # fmt: skip
        defined = httpx.post(
            f"{base}/api/jobs/define",
            headers=headers,
            timeout=30,
            json={"name": "cp", "schedule": "0 3 * * *", "action": "checkpoint"},
        )
        assert defined.status_code == 200
        ran = httpx.post(f"{base}/api/jobs/run", headers=headers, json={"name": "cp"}, timeout=30)
        assert ran.json()["outcome"] == "succeeded"
        assert httpx.get(f"{base}/api/jobs", timeout=30).status_code == 401
    finally:
        output = stop(process)
    assert "dgxmm: stopped" in output
    sidecar = data / "dgxmm.db.workload.json"
    assert '"cp"' in sidecar.read_text()  # the statistics were flushed on the way out

    again = start(data, port)
    try:
        assert token_file.read_text().strip() == token  # no second admin token
        jobs = httpx.get(f"{base}/api/jobs", headers=headers, timeout=30).json()["jobs"]
        cp = next(job for job in jobs if job["name"] == "cp")
        assert cp["last_run"]["outcome"] == "succeeded"
        assert cp["runs"]["last_hour"] == 1
    finally:
        stop(again)


def test_it_binds_loopback_unless_told_otherwise_and_stops_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    process = start(tmp_path / "data", port)
    try:
        with socket.socket() as probe:
            probe.settimeout(5)
            probe.connect(("127.0.0.1", port))
        addresses = {
            line.split()[1]
            for line in Path("/proc/net/tcp").read_text().splitlines()[1:]
            if line.split()[3] == "0A"
        }  # listening sockets
        assert f"0100007F:{port:04X}" in addresses
        assert f"00000000:{port:04X}" not in addresses
    finally:
        output = stop(process, signal.SIGTERM)
    assert "dgxmm: stopped" in output  # SIGTERM stops as cleanly as Ctrl-C


def test_it_serves_the_proxy_on_its_own_loopback_port(tmp_path: Path) -> None:
    port, proxy_port = free_port(), free_port()
    process = start(tmp_path / "data", port, "--proxy-port", str(proxy_port))
    try:
        models = httpx.get(f"http://127.0.0.1:{proxy_port}/v1/models", timeout=30)
        assert models.json() == {"object": "list", "data": []}
        unknown = httpx.post(
            f"http://127.0.0.1:{proxy_port}/v1/chat/completions",
            json={"model": "nothing", "messages": [{"role": "user", "content": "hi"}]},
            timeout=30,
        )
        assert unknown.status_code == 404
        assert unknown.json()["error"]["code"] == "model_not_found"
        addresses = {
            line.split()[1]
            for line in Path("/proc/net/tcp").read_text().splitlines()[1:]
            if line.split()[3] == "0A"
        }
        assert f"0100007F:{proxy_port:04X}" in addresses
    finally:
        output = stop(process)
    assert "dgxmm: stopped" in output  # the proxy stopped first, cleanly
