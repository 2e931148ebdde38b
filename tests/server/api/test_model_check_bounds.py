"""The model check's bounds against servers that misbehave (issue 44, point 1).

One deadline for the whole call (a server that drips a line a second never trips a per-read
timeout), a byte bound that holds inside a line, a bounded error read, and checks that hang
never starve the other routes. Real stand-ins on 127.0.0.1; the bytes the stand-in had sent
when dgxmm hung up are what it reports (``GET /dgxmm/seen``), never the process's RSS.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Callable

import httpx
import pytest
from fastapi import FastAPI
from support import PATIENCE_S, StandinProcess, serving, wait_for

from dgxmm.errors import BackendError
from dgxmm.fleet import Deployment, DeploymentState, Fleet
from dgxmm.server import model_check
from dgxmm.server.model_check import MAX_CHECKS, CheckKind, ModelCheck, run_check
from dgxmm.store import writing

Start = Callable[..., StandinProcess]
HUGE = 256 * 1024 * 1024


def running(fleet: Fleet, server: StandinProcess) -> Deployment:
    """An external deployment of the stand-in, as if running (the check reads only its URL)."""
    made = fleet.deployments.create(
        actor="user:a", name="remote", model=server.model, backend="external",
        base_url=server.base_url, gpus=[0], memory_gib_awake=40.0, memory_gib_asleep=4.0,
    )  # fmt: skip
    return dataclasses.replace(made, state=DeploymentState.RUNNING)


def check(deployment: Deployment) -> model_check.CheckResult:
    asked = ModelCheck(kind=CheckKind.CHAT, prompt="hi", max_tokens=8)
    return asyncio.run(run_check(deployment, asked, proxy_url=None))


def sent(server: StandinProcess) -> int:
    [count] = wait_for(lambda: server.client.get("/dgxmm/seen").json()["sent"], "its end")
    return int(count)


def test_a_server_that_drips_is_dropped_at_the_one_deadline(
    fleet: Fleet, standin: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It drips a comment line every 0.05 s for 30 s: each read answers long before httpx's
    # per-read timeout, so only a deadline for the whole call ends it.
    monkeypatch.setattr(model_check, "TIMEOUT_S", 1.0)
    server = standin()
    server.client.post("/dgxmm/faults", json={"drip_s": 0.05})
    with pytest.raises(BackendError, match="no answer within 1 s from the server"):
        check(running(fleet, server))


def test_a_line_without_end_is_cut_at_the_byte_bound(fleet: Fleet, standin: Start) -> None:
    server = standin()
    server.client.post("/dgxmm/faults", json={"long_line_bytes": HUGE})
    result = check(running(fleet, server))
    assert result.cut
    assert result.answer == ""
    # dgxmm hung up after the bound: the rest never left the stand-in (its sockets' buffers
    # hold a few MiB on the loopback).
    assert sent(server) < HUGE // 4


def test_an_error_answer_is_read_only_to_its_first_bytes(fleet: Fleet, standin: Start) -> None:
    server = standin()
    server.client.post("/dgxmm/faults", json={"error_bytes": HUGE})
    with pytest.raises(BackendError, match="answered 500") as raised:
        check(running(fleet, server))
    assert len(str(raised.value)) < 700  # the first 500 bytes and the words around them
    assert sent(server) < HUGE // 4


def test_hung_checks_leave_the_other_routes_answering(
    full_app: FastAPI, admin_token: str, fleet: Fleet, standin: Start
) -> None:
    # Issue 44: the route was sync, so 42 hung checks took every worker thread and
    # GET /api/jobs waited 22 to 40 s. Here 48 checks hang on a dripping server.
    server = standin()
    deployment = running(fleet, server)
    with writing(fleet.store.engine) as connection:  # the row says running, as a check needs
        fleet.deployments.set_state(connection, deployment.id, DeploymentState.RUNNING)
    server.client.post("/dgxmm/faults", json={"drip_s": 0.5})
    headers = {"Authorization": f"Bearer {admin_token}"}
    answers: list[httpx.Response] = []
    with serving(full_app) as base:

        def send() -> None:
            with httpx.Client(base_url=base, headers=headers, timeout=PATIENCE_S * 3) as client:
                answers.append(
                    client.post(f"/api/deployments/{deployment.id}/check", json={"prompt": "hi"})
                )

        threads = [threading.Thread(target=send) for _ in range(48)]
        for thread in threads:
            thread.start()
        wait_for(
            lambda: server.metrics()["vllm:num_requests_running"] >= MAX_CHECKS,
            "the checks to reach the server",
        )
        jobs = httpx.get(f"{base}/api/jobs", headers=headers, timeout=PATIENCE_S)
        assert jobs.status_code == 200
        wait_for(lambda: len(answers) >= 48 - MAX_CHECKS, "the checks past the bound")
        assert len(answers) == 48 - MAX_CHECKS  # the others still hang: they were in flight
        server.client.post("/dgxmm/faults", json={"drip_s": 0})
        for thread in threads:
            thread.join(timeout=PATIENCE_S * 3)
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses == [200] * MAX_CHECKS + [409] * (48 - MAX_CHECKS)
    busy = next(answer for answer in answers if answer.status_code == 409)
    assert f"{MAX_CHECKS} model checks are under way" in busy.json()["message"]
