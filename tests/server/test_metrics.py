"""`GET /metrics`: dgxmm's own series in Prometheus text, fed by the real seams, per app."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from support import at, free_port

import dgxmm
from dgxmm.clock import ManualClock
from dgxmm.decider.schedules import ResultKind, ScheduleAction
from dgxmm.decider.schedules.service import ScheduleService
from dgxmm.fleet import DeploymentState, Fleet, Gpu, GpuInventory, InventorySource
from dgxmm.proxy import ProxyStats, Refusal
from dgxmm.server import (
    FLEET_ROUTES,
    SCHEDULE_ROUTES,
    Host,
    Role,
    ServerMetrics,
    Services,
    Tokens,
    create_app,
)
from dgxmm.store import Store, writing

DASHBOARD = Path(__file__).parents[2] / "docs" / "grafana-dashboard.json"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@dataclass
class Served:
    client: TestClient
    store: Store
    fleet: Fleet
    schedules: ScheduleService
    tokens: Tokens
    host: Host
    proxy: ProxyStats


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    clock = ManualClock(at("2026-06-01T10:00:30+00:00"))
    store = Store.open(tmp_path / "dgxmm.db", clock=clock)
    metrics = ServerMetrics()
    inventory = GpuInventory(
        gpus=(Gpu(index=0, name="H100", memory_gib=80.0),), source=InventorySource.CONFIGURATION
    )
    fleet = Fleet(store, inventory=inventory, clock=clock, telemetry=metrics)
    schedules = ScheduleService(store, fleet, clock=clock)
    host = Host(store, time_zone="UTC", clock=clock, tick_seconds=0.2, telemetry=metrics)
    tokens = Tokens(store.engine, clock)
    proxy = ProxyStats()
    services = Services(
        host=host, tokens=tokens, fleet=fleet, schedules=schedules, metrics=metrics, proxy=proxy
    )
    host.start()
    try:
        with TestClient(create_app(services, [FLEET_ROUTES, SCHEDULE_ROUTES])) as client:
            client.headers["Authorization"] = f"Bearer {tokens.create(Role.VIEWER, 'prom')}"
            yield Served(client, store, fleet, schedules, tokens, host, proxy)
    finally:
        host.stop()
        schedules.close()
        fleet.close()
        store.close()


def samples(text: str) -> Samples:
    """Every sample of an exposition, by name and labels (the parser refuses bad text)."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(found: Samples, name: str, **labels: str) -> float | None:
    return found.get((name, frozenset(labels.items())))


def do_some_work(served: Served) -> None:
    """A job run, a failed start, a deployment found gone, a schedule's slot skipped, and a
    request the proxy held for a wake and one it refused."""
    served.proxy.hold_began("llama", 100)
    served.proxy.hold_ended("llama", 1.5, 100)
    served.proxy.refused(Refusal.WAKE_FAILED)
    admin = {"Authorization": f"Bearer {served.tokens.create(Role.ADMIN, 'alice')}"}
    client = served.client
    job = {"name": "cp", "schedule": "0 3 * * *", "action": "checkpoint"}
    assert client.post("/api/jobs/define", json=job, headers=admin).status_code == 200
    assert client.post("/api/jobs/run", json={"name": "cp"}, headers=admin).status_code == 200
    made = client.post(
        "/api/deployments",
        json={"name": "llama", "model": "m", "backend": "external", "gpus": [0],
              "base_url": f"http://127.0.0.1:{free_port()}", "memory_gib_awake": 10.0,
              "startup_timeout_s": 2.0},
        headers=admin,
    )  # fmt: skip
    assert made.status_code == 201, made.text
    key = made.json()["id"]
    started = client.post(f"/api/deployments/{key}/start", headers=admin)
    assert started.status_code == 502, started.text  # nothing listens: the start failed
    with writing(served.store.engine) as connection:  # as if it had come up, then went away
        served.fleet.deployments.set_state(connection, key, DeploymentState.RUNNING)
    served.fleet.metrics.rollup_all()  # its port refuses: gone, and marked failed
    served.schedules.create(
        key,
        action=ScheduleAction.SLEEP,
        days=127,
        time="10:00",
        time_zone="UTC",
        actor="user:alice",
    )
    [run] = served.schedules.run_pass(at("2026-06-01T10:00:00+00:00"))
    assert run.kind is ResultKind.SKIPPED  # a failed deployment is not put to sleep


def test_it_counts_what_the_seams_did_and_reads_the_states_from_the_store(
    served: Served,
) -> None:
    before = served.client.get("/metrics")
    assert before.headers["content-type"].startswith("text/plain; version=0.0.4")
    empty = samples(before.text)
    assert {value(empty, "dgxmm_deployments", state=s.value) for s in DeploymentState} == {0}
    assert not any(name.startswith("dgxmm_job_run_duration") for name, _ in empty)
    do_some_work(served)
    found = samples(served.client.get("/metrics").text)
    assert value(found, "dgxmm_deployments", state="failed") == 1
    assert value(found, "dgxmm_deployments", state="running") == 0
    assert (
        value(
            found,
            "dgxmm_deployment_action_duration_seconds_count",
            action="start",
            outcome="failed",
        )
        == 1
    )
    assert value(found, "dgxmm_job_run_duration_seconds_count", job="cp", outcome="succeeded") == 1
    assert value(found, "dgxmm_schedule_decisions_total", action="sleep", outcome="skipped") == 1
    assert value(found, "dgxmm_scrape_errors_total", deployment="llama", kind="gone") == 1
    assert value(found, "dgxmm_info", version=dgxmm.__version__) == 1


def test_it_keeps_each_apps_counts_to_itself(served: Served, tmp_path: Path) -> None:
    do_some_work(served)
    other_store = Store.open(tmp_path / "other.db")
    other_host = Host(other_store, time_zone="UTC")
    tokens = Tokens(other_store.engine, other_store.clock)
    try:
        with TestClient(create_app(Services(host=other_host, tokens=tokens))) as other:
            other.headers["Authorization"] = f"Bearer {tokens.create(Role.VIEWER, 'p')}"
            found = samples(other.get("/metrics").text)
    finally:
        other_host.stop()
        other_store.close()
    assert not any(name.startswith("dgxmm_job_run_duration") for name, _ in found)
    assert value(found, "dgxmm_deployments", state="failed") is None  # no fleet in that app


def skip_a_time(served: Served) -> None:
    """A job switched off skips its 10:01 (the host's clock stands at 10:00:30)."""
    served.store.define_job(name="off", schedule="* * * * *", action="checkpoint", enabled=False)
    served.host.tick(at("2026-06-01T10:00:31+00:00"))
    served.host.tick(at("2026-06-01T10:01:05+00:00"))


def test_it_asks_for_a_token(served: Served) -> None:
    answer = served.client.get("/metrics", headers={"Authorization": ""})
    assert answer.status_code == 401


def test_every_metric_of_the_grafana_dashboard_is_served(served: Served) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    named = {name for expr in exprs for name in re.findall(r"\bdgxmm_[a-z_]+", expr)}
    do_some_work(served)
    skip_a_time(served)
    served_names = {name for name, _ in samples(served.client.get("/metrics").text)}
    assert len(named) >= 6
    assert named - served_names == set()
    families = {"dgxmm_deployments", "dgxmm_deployment_action_duration_seconds_count",
                "dgxmm_schedule_decisions_total", "dgxmm_job_run_duration_seconds_count",
                "dgxmm_scrape_errors_total", "dgxmm_job_skips_total"}  # fmt: skip
    assert families <= named  # the dashboard shows each thing the issue asks for


def test_it_serves_what_each_deployment_holds_and_frees_now(served: Served) -> None:
    do_some_work(served)  # llama: 10 GiB awake on one GPU, now failed
    found = samples(served.client.get("/metrics").text)
    assert value(found, "dgxmm_deployment_memory_held_gib", deployment="llama",
                 state="failed") == 0.0  # fmt: skip
    assert value(found, "dgxmm_deployment_memory_freed_gib", deployment="llama") == 10.0
    with writing(served.store.engine) as connection:
        served.fleet.deployments.set_state(connection, 1, DeploymentState.RUNNING)
    found = samples(served.client.get("/metrics").text)
    assert value(found, "dgxmm_deployment_memory_held_gib", deployment="llama",
                 state="running") == 10.0  # fmt: skip
    assert value(found, "dgxmm_deployment_memory_freed_gib", deployment="llama") == 0.0


def test_it_counts_a_jobs_skipped_times_by_job_and_reason(tmp_path: Path) -> None:
    clock = ManualClock(at("2026-06-01T10:00:30+00:00"))
    store = Store.open(tmp_path / "dgxmm.db", clock=clock)
    metrics = ServerMetrics()
    host = Host(store, time_zone="UTC", clock=clock, telemetry=metrics)
    try:
        store.define_job(name="every", schedule="* * * * *", action="checkpoint")
        store.define_job(name="off", schedule="* * * * *", action="checkpoint", enabled=False)
        host.tick(at("2026-06-01T10:00:30+00:00"))  # plans
        # Nothing ticked for five minutes: every's 10:01 to 10:05 are missed, five times.
        host.tick(at("2026-06-01T10:05:30+00:00"))
        host.tick(at("2026-06-01T10:06:02+00:00"))  # off's 10:06 is skipped again
        found = samples(metrics.exposition(None).decode())
        assert value(found, "dgxmm_job_skips_total", job="every", reason="missed") == 5
        assert value(found, "dgxmm_job_skips_total", job="off", reason="disabled") == 2
        assert value(found, "dgxmm_job_skips_total", job="every", reason="disabled") is None
    finally:
        host.stop()
        store.close()
