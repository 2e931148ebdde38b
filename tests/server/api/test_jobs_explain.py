"""GET /api/jobs/{name}/explain?at=: whether an instant is a job's time, and what became of it."""

from __future__ import annotations

import functools

from fastapi.testclient import TestClient
from server.apikit import define
from support import at, wait_for

from dgxmm.clock import ManualClock
from dgxmm.server import Host


def explain(client: TestClient, name: str, when: str) -> dict[str, object]:
    response = client.get(f"/api/jobs/{name}/explain", params={"at": when})
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


def test_it_tells_a_run_a_miss_a_switch_and_a_time_before_the_host_ticked(
    client: TestClient, viewer: TestClient, host: Host, clock: ManualClock
) -> None:
    define(client, name="cp", schedule="* * * * *", action="checkpoint")  # the host's 10:00:30
    host.tick(at("2026-06-01T10:00:31+02:00"))  # cp is planned: 10:01
    clock.set(at("2026-06-01T10:01:02+02:00"))
    assert "cp" in [run.name for run in host.tick()]
    wait_for(lambda: host.store.workload_stats.last_run("cp"), "cp's run to end")
    told = explain(client, "cp", "2026-06-01T10:01:00+02:00")
    assert (told["verdict"], told["is_time"], told["zone"]) == ("ran", True, "Europe/Berlin")
    run = told["run"]
    assert isinstance(run, dict)
    assert (run["outcome"], run["scheduled_at"]) == ("succeeded", "2026-06-01T10:01:00+02:00")
    clock.set(at("2026-06-01T10:05:30+02:00"))  # nothing ticked for four minutes
    host.tick()
    missed = explain(viewer, "cp", "2026-06-01T10:03:00+02:00")  # a viewer may ask
    assert (missed["verdict"], missed["cause"]) == ("skipped", "missed")
    assert "no tick until 210 s later" in str(missed["detail"])
    client.post("/api/jobs/enable", json={"name": "cp", "enabled": False, "note": "disk"})
    clock.set(at("2026-06-01T10:06:05+02:00"))
    host.tick()
    off = explain(client, "cp", "2026-06-01T10:06:00+02:00")
    assert (off["verdict"], off["cause"]) == ("skipped", "disabled")
    early = explain(client, "stats_flush", "2026-06-01T09:59:00+02:00")
    assert (early["verdict"], early["cause"]) == ("skipped", "not_ticking")
    ahead = explain(client, "cp", "2026-06-01T12:00:00+02:00")
    assert ahead["verdict"] == "upcoming"
    between = explain(client, "cp", "2026-06-01T10:01:30+02:00")
    assert (between["verdict"], between["next"]) == ("not_a_time", "2026-06-01T10:02:00+02:00")


def test_it_reads_a_time_without_an_offset_in_the_jobs_zone_and_tells_a_gap(
    client: TestClient, host: Host
) -> None:
    define(client, name="ny", schedule="30 2 * * *", action="checkpoint",
           time_zone="America/New_York")  # fmt: skip
    told = explain(client, "ny", "2027-03-14T02:30")  # New York skips 02:30 that night
    assert (told["verdict"], told["moved"], told["zone"]) == ("upcoming", True, "America/New_York")
    assert told["time"] == "2027-03-14T03:00:00-04:00"


def test_it_refuses_a_bad_time_naming_it_and_an_unknown_job(client: TestClient) -> None:
    for bad in ("yesterday", "2026-13-01T00:00", "3000-01-01T00:00:00+00:00"):
        response = client.get("/api/jobs/stats_flush/explain", params={"at": bad})
        assert (response.status_code, response.json()["field"]) == (400, "at"), bad
    response = client.get("/api/jobs/ghost/explain", params={"at": "2026-06-01T10:00"})
    assert response.status_code == 404


def test_a_failing_job_is_retried_as_runs_of_its_own_and_explain_says_so(
    client: TestClient, host: Host, clock: ManualClock
) -> None:
    query = {"name": "bad", "params": {}, "body": "INSERT INTO notes (label) VALUES (NULL)"}
    assert client.post("/api/queries/define", json=query).status_code == 200
    row = define(client, name="q", schedule="* * * * *", action="query", query="bad",
                 retries=2, retry_backoff_s=1, retry_backoff_max_s=2)  # fmt: skip
    assert (row["retries"], row["retry_backoff_s"], row["retry_backoff_max_s"]) == (2, 1, 2)
    host.tick(at("2026-06-01T10:00:31+02:00"))

    def ended(count: int) -> bool | None:
        finished = [r for r in host.store.runs.page(job="q") if r.finished_at is not None]
        return len(finished) == count or None

    for second, done in ((2, 1), (5, 2), (10, 3), (15, 3)):  # each wait is at most 1 s, then 2 s
        clock.set(at(f"2026-06-01T10:01:{second:02d}+02:00"))
        host.tick()
        # Taken back into the scheduler before the next tick: a run whose row says finished
        # may not have handed its result over yet, and a tick then finds the job running.
        host.wait_idle()
        wait_for(functools.partial(ended, done), f"{done} run(s) of q")
    runs = client.get("/api/jobs/runs", params={"name": "q"}).json()["runs"]
    assert [(r["attempt"], r["trigger"], r["outcome"]) for r in runs] == [
        (3, "retry", "failed"), (2, "retry", "failed"), (1, "schedule", "failed"),
    ]  # fmt: skip
    assert {r["scheduled_at"] for r in runs} == {"2026-06-01T10:01:00+02:00"}
    told = explain(client, "q", "2026-06-01T10:01:00+02:00")
    assert told["verdict"] == "ran"
    assert "it was retried: attempt 1" in str(told["detail"])
    page = client.get("/jobs/q", headers={"Accept": "text/html"}).text
    assert "(attempt 3)" in page
    assert "2, waiting up to 1 s first, doubling to at most 2 s" in page
