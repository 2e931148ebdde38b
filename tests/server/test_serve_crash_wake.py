"""kill -9 of `dgxmm serve` during a wake, and a restart at once (issue 44, point 7).

The reattach found the deployment sleeping (its wake was still running on the server), and
90 s after the server finished waking dgxmm still said sleeping, so the GPU bars, the fit
check and the savings counted the asleep memory where the awake memory was held. A
deployment found up at a restart is asked again until what its server says settles, and
every metrics pass compares ``/is_sleeping`` with the record.
"""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path

import httpx
from fleet.fleetkit import ensure_gone
from server.test_serve import serve, stop
from support import PATIENCE_S, standin_keys, wait_for

from dgxmm.fleet.backends.pidfile import read_pid_file


def test_a_wake_cut_by_kill_9_is_found_running_once_it_finished(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.json").write_text(json.dumps({"gpus": [{"index": 0, "memory_gib": 80}]}))
    process, port = serve(data)
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {(data / 'admin-token').read_text().strip()}"}
    api = httpx.Client(base_url=base, headers=headers, timeout=PATIENCE_S)
    keys = standin_keys("waking", "--hang-wake", "3600")
    made = api.post("/api/deployments", json=keys)
    assert made.status_code == 201, made.text
    deployment = made.json()["id"]
    server = httpx.Client(base_url=f"http://127.0.0.1:{keys['port']}", timeout=PATIENCE_S)
    again = None
    try:
        assert api.post(f"/api/deployments/{deployment}/start").status_code == 200
        assert api.post(f"/api/deployments/{deployment}/sleep").status_code == 200

        def wake() -> None:
            # It hangs on the server (its fault) until the test lets it finish; the kill
            # drops its connection.
            with contextlib.suppress(httpx.HTTPError):
                httpx.post(
                    f"{base}/api/deployments/{deployment}/wake", headers=headers, timeout=PATIENCE_S
                )

        waking = threading.Thread(target=wake, daemon=True)
        waking.start()
        wait_for(
            lambda: server.get("/dgxmm/seen").json()["hanging"].get("wake_hang_s"),
            "the wake to reach the server",
        )
        process.kill()  # kill -9, mid-wake
        process.communicate(timeout=PATIENCE_S)
        waking.join(timeout=PATIENCE_S)
        again, _ = serve(data, port=port)  # at once
        found = api.get(f"/api/deployments/{deployment}").json()
        assert found["state"] == "sleeping"  # the server says so: its wake still runs
        server.post("/dgxmm/faults", json={"wake_hang_s": 0})  # the wake finishes
        wait_for(lambda: not server.get("/is_sleeping").json()["is_sleeping"], "the wake's end")
        wait_for(
            lambda: api.get(f"/api/deployments/{deployment}").json()["state"] == "running",
            "dgxmm to find it running",
        )
        events = api.get(f"/api/deployments/{deployment}/events").json()["events"]
        newest = events[0]
        assert (newest["action"], newest["actor"], newest["outcome"]) == (
            "wake",
            "system",
            "done",
        )
        assert "found awake" in newest["detail"]
        assert api.post(f"/api/deployments/{deployment}/stop").status_code == 200
    finally:
        server.close()
        api.close()
        if again is not None:
            stop(again)
        elif process.poll() is None:
            process.kill()
            process.communicate(timeout=PATIENCE_S)
        # A failed test leaves the model server running (servers outlive dgxmm): not ours to keep.
        record = read_pid_file(data / "deployments" / str(deployment) / "server.pid")
        if record is not None:
            ensure_gone(record.pid)
