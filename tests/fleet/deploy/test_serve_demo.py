"""`dgxmm serve --demo --proxy-port` as a real process: three stand-ins up, their traffic
through the proxy, demo-code put to sleep by its idle ladder and woken by a request, stopped
after."""

from __future__ import annotations

import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from fleet.fleetkit import pid_exists
from support import PATIENCE_S, start_serve, wait_for

from dgxmm.fleet import sample_from_text
from dgxmm.fleet.backends.pidfile import read_pid_file


def test_the_demo_runs_three_stand_ins_with_traffic_and_stops_them(tmp_path: Path) -> None:
    data = tmp_path / "data"
    process, (port, proxy_port) = start_serve(
        lambda ports: ["serve", "--data", str(data), "--port", str(ports[0]), "--time-zone", "UTC",
                       "--tick", "0.5", "--demo", "--proxy-port", str(ports[1])],
        ports=2,
    )  # fmt: skip
    try:
        token = (data / "admin-token").read_text().strip()
        api = httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=PATIENCE_S,
            trust_env=False,
        )

        def all_running() -> list[dict[str, object]] | None:
            # demo-code sleeps between two bursts of its traffic: up is running or asleep.
            found = api.get("/api/deployments").json()["deployments"]
            up = [d["state"] in ("running", "sleeping") for d in found]
            return found if up == [True] * 3 else None

        # The demo writes four weeks of history and backtests its proposals first.
        deployments = wait_for(all_running, "the three demo deployments to run", timeout_s=180)
        assert sorted(str(d["name"]) for d in deployments) == [
            "demo-batch",
            "demo-chat",
            "demo-code",
        ]
        assert (data / "config.json").is_file()  # the pretend GPUs
        chat = next(d for d in deployments if d["name"] == "demo-chat")

        def served() -> bool:
            page = httpx.get(f"{chat['url']}/metrics", trust_env=False).text
            return sample_from_text(page, taken_at_us=0).requests_finished_total > 0

        wait_for(served, "the traffic generator to reach demo-chat")
        pids = []
        for deployment in deployments:
            record = read_pid_file(data / "deployments" / str(deployment["id"]) / "server.pid")
            assert record is not None
            pids.append(record.pid)
        insights = api.get("/api/insights").json()["insights"]
        assert {i["kind"] for i in insights} == {"demo"}
        synthetic = [i for i in insights if i["key"] and i["key"].startswith("demo-history")]
        assert len(synthetic) == 3  # one per deployment, shown on its pages
        assert "synthetic" in api.get(f"/deployments/{chat['id']}").text
        # Four weeks of office hours: a proposal waits to be accepted at once.
        waiting = api.get(f"/api/deployments/{chat['id']}/proposals").json()["proposals"]
        opened = [p for p in waiting if p["status"] == "open"]
        assert opened
        # ... with its backtest on the synthetic weeks held out.
        assert all(p["backtest"] is not None and p["backtest"]["weeks"] for p in opened)
        # The savings page's four synthetic weeks: evenings asleep, mornings woken by request.
        today = datetime.now(UTC).date()
        report = api.get(
            "/api/savings",
            params={"from": (today - timedelta(days=27)).isoformat(), "to": today.isoformat(),
                    "deployment": "demo-chat"},
        ).json()  # fmt: skip
        (shown,) = report["deployments"]
        assert len(shown["days"]) == 28
        assert shown["totals"]["freed_gib_h"] > 0
        assert shown["totals"]["wakes"].get("request", 0) >= 10  # a working morning each
        assert shown["totals"]["cold"] >= 10
        assert "demo-chat" in api.get("/savings").text
        # The traffic goes through the proxy; demo-code sleeps by idle, a request wakes it.
        proxy = api.get("/api/proxy").json()
        assert proxy["address"] == f"http://127.0.0.1:{proxy_port}/v1"
        code = next(d for d in deployments if d["name"] == "demo-code")
        assert code["idle_sleep_after_s"] == 20.0  # its history's sleeps came after as long

        def woken_by_request() -> bool:
            events = api.get(f"/api/deployments/{code['id']}/events").json()["events"]
            live = [e for e in events if "synthetic" not in (e["detail"] or "")]
            return any(e["action"] == "wake" and e["actor"] == "request" for e in live)

        wait_for(woken_by_request, "demo-code put to sleep by idle, then woken by a request",
                 timeout_s=240)  # fmt: skip
        passed = {m["deployment"]: m for m in api.get("/api/proxy").json()["models"]}
        assert passed["demo-chat"]["forwarded"] > 0
        assert passed["demo-code"]["wakes"] >= 1
        batch = next(d for d in deployments if d["name"] == "demo-batch")
        quiet = api.get(f"/api/deployments/{batch['id']}/schedules").json()["schedules"]
        assert [s["action"] for s in quiet] == ["sleep", "wake"]  # a sleep to watch go through
        assert batch["last_request_at"] is None  # no demo traffic: its quiet check passes
        api.close()
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=120)
    assert process.returncode == 0, output
    assert "dgxmm: stopped" in output
    # The first ticks after writing four weeks of history: at most a line each, no traceback.
    assert "Traceback" not in output
    for pid in pids:
        assert not pid_exists(pid)
