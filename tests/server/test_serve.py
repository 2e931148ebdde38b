"""`dgxmm serve` as a real process: first start, the API over HTTP, Ctrl-C, and a restart."""

from __future__ import annotations

import signal
import socket
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from alerts.alertkit import Receiver
from support import start_serve, wait_for

ALLOW_PRIVATE = "--alerts-allow-private-networks"  # for a webhook receiver on 127.0.0.1


def start(
    data: Path, port: int, *more: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """Serve `data` on `port` with `more` flags (tests/server's other soaks start it so)."""
    return serve(data, *more, port=port, env=env)[0]


def serve(
    data: Path, *more: str, port: int | None = None, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], int]:
    """Serve `data` on `port` (a free one when None) with `more` flags; return it and its port."""

    def argv(ports: list[int]) -> list[str]:
        return ["serve", "--data", str(data), "--port", str(port or ports[0]),
                "--time-zone", "Europe/Berlin", "--tick", "0.5", *more]  # fmt: skip

    process, ports = start_serve(argv, env=env)
    return process, port or ports[0]


def stop(process: subprocess.Popen[str], sig: signal.Signals = signal.SIGINT) -> str:
    process.send_signal(sig)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 0, output
    return output


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as running:
        yield running


def test_it_serves_stops_on_ctrl_c_and_keeps_everything_across_a_restart(
    tmp_path: Path, receiver: Receiver
) -> None:
    data = tmp_path / "data"
    # The receiver is on 127.0.0.1, a private address: the operator allows it here.
    process, port = serve(data, ALLOW_PRIVATE)
    token_file = data / "admin-token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    # The alerts' sealing key: beside the token, kept from the database and its backups.
    assert stat.S_IMODE((data / "alerts.key").stat().st_mode) == 0o600
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
            "schedule_proposals", "wait_budgets", "alerts_purge",
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
        made = httpx.post(f"{base}/api/alerts/channels", headers=headers, timeout=30,
                          json={"name": "ops", "url": receiver.url}).json()  # fmt: skip
        receiver.secret, channel = made["secret"], made["channel"]["id"]
    finally:
        output = stop(process)
    assert "dgxmm: stopped" in output
    sidecar = data / "dgxmm.db.workload.json"
    assert '"cp"' in sidecar.read_text()  # the statistics were flushed on the way out

    again, _ = serve(data, ALLOW_PRIVATE, port=port)
    try:
        assert token_file.read_text().strip() == token  # no second admin token
        jobs = httpx.get(f"{base}/api/jobs", headers=headers, timeout=30).json()["jobs"]
        cp = next(job for job in jobs if job["name"] == "cp")
        assert cp["last_run"]["outcome"] == "succeeded"
        assert cp["runs"]["last_hour"] == 1
        # The channel made before the restart is sent to: its sealed URL and secret open
        # with the key kept in the data directory.
        httpx.post(f"{base}/api/alerts/channels/{channel}/test", headers=headers, timeout=30)
        [got] = wait_for(receiver.requests, "the test message", timeout_s=30)
        assert got.signed
    finally:
        stop(again)


def test_it_binds_loopback_unless_told_otherwise_and_stops_on_sigterm(tmp_path: Path) -> None:
    process, port = serve(tmp_path / "data")
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
    process, (_, proxy_port) = start_serve(
        lambda ports: ["serve", "--data", str(tmp_path / "data"), "--port", str(ports[0]),
                       "--proxy-port", str(ports[1]), "--time-zone", "Europe/Berlin"],
        ports=2,
    )  # fmt: skip
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


def _children(pid: int) -> dict[int, str]:
    """Return the processes whose parent is ``pid``, with their command lines."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError, ValueError):
            continue  # it ended while we looked
        if parent == pid:
            found[int(entry.name)] = command
    return found


def test_its_page_reader_is_a_child_that_ends_when_it_is_killed(tmp_path: Path) -> None:
    """The metrics pass's pages are read by a child process: kill -9 of dgxmm leaves none."""
    process, _ = serve(tmp_path / "data")
    try:
        readers = wait_for(
            lambda: [
                pid
                for pid, command in _children(process.pid).items()
                if "dgxmm.fleet.backends.page_process" in command
            ],
            "the page reader",
            timeout_s=30,
        )
    finally:
        process.kill()
        process.communicate(timeout=60)
    [reader] = readers
    # Its stdin closed with its parent: it ends on its own (reaped by init, as an orphan).
    wait_for(lambda: not Path(f"/proc/{reader}").exists() or _is_zombie(reader),
             "the page reader to end", timeout_s=30)  # fmt: skip


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
