"""The stand-in's fault modes, over real HTTP: set on the command line, switched at run time.

No test asserts how long anything took: a hang is seen as a request still unanswered while
the server answers others, then answered once the fault is switched off or its time is up.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

import httpx
from support import PATIENCE_S, StandinProcess, wait_for

Start = Callable[..., StandinProcess]


def in_background(server: StandinProcess, method: str, path: str) -> list[httpx.Response]:
    """Send one request on another thread; its response lands in the list."""
    answers: list[httpx.Response] = []

    def send() -> None:
        with httpx.Client(base_url=server.base_url, timeout=PATIENCE_S, trust_env=False) as c:
            answers.append(c.request(method, path))

    threading.Thread(target=send, daemon=True).start()
    return answers


def test_it_shows_and_switches_its_faults_at_run_time(standin: Start) -> None:
    server = standin("--fail-sleep", "--hang-wake", "2.5")
    shown = server.client.get("/dgxmm/faults").json()
    assert (shown["sleep_error"], shown["wake_hang_s"], shown["die_on_wake"]) == (True, 2.5, False)
    changed = server.client.post("/dgxmm/faults", json={"sleep_error": False}).json()
    assert (changed["sleep_error"], changed["wake_hang_s"]) == (False, 2.5)
    refused = server.client.post("/dgxmm/faults", json={"sleep_hang_s": -1})
    assert refused.status_code == 400
    assert refused.json()["error"]["message"].startswith("sleep_hang_s: -1 is not")
    unknown = server.client.post("/dgxmm/faults", json={"explode": True})
    assert unknown.json()["error"]["message"].startswith("explode: not a fault")


def test_it_answers_500_to_sleep_and_stays_awake(standin: Start) -> None:
    server = standin("--fail-sleep")
    response = server.client.post("/sleep?level=1")
    assert response.status_code == 500
    assert response.json()["error"]["type"] == "InternalServerError"
    assert server.client.get("/is_sleeping").json() == {"is_sleeping": False}


def test_it_holds_a_sleep_and_sleeps_when_the_hang_is_over(standin: Start) -> None:
    server = standin("--hang-sleep", "1")
    answers = in_background(server, "POST", "/sleep?level=1")
    assert server.client.get("/health").status_code == 200  # it answers others meanwhile
    wait_for(lambda: answers, "the hung sleep to answer")
    assert answers[0].status_code == 200
    assert server.client.get("/is_sleeping").json() == {"is_sleeping": True}


def test_it_dies_during_a_wake(standin: Start) -> None:
    server = standin()
    assert server.client.post("/sleep?level=1").status_code == 200
    server.client.post("/dgxmm/faults", json={"die_on_wake": True})
    with contextlib.suppress(httpx.HTTPError):  # no answer: the process is gone
        server.client.post("/wake_up")
    assert server.process.wait(timeout=PATIENCE_S) == 3


def test_it_stops_answering_metrics_until_switched_back(standin: Start) -> None:
    server = standin("--silent-metrics")
    answers = in_background(server, "GET", "/metrics")
    assert server.client.get("/health").status_code == 200
    assert answers == []  # still held
    server.client.post("/dgxmm/faults", json={"metrics_silent": False})
    wait_for(lambda: answers, "the held scrape to answer")
    assert "vllm:num_requests_running" in answers[0].text


def test_it_answers_metrics_late_when_told(standin: Start) -> None:
    server = standin("--slow-metrics", "0.5")
    assert server.client.get("/dgxmm/faults").json()["metrics_delay_s"] == 0.5
    assert "vllm:num_requests_waiting" in server.client.get("/metrics").text


def test_its_long_answers_are_what_they_say_and_counted(standin: Start) -> None:
    server = standin()
    refused = server.client.post("/dgxmm/faults", json={"error_bytes": 1.5})
    assert refused.json()["error"]["message"].startswith("error_bytes: 1.5 is not a whole")
    chat = {"messages": [{"role": "user", "content": "hi"}], "stream": True}
    server.client.post("/dgxmm/faults", json={"long_line_bytes": 3 * 1024 * 1024})
    line = server.client.post("/v1/chat/completions", json=chat)
    assert (line.status_code, len(line.content)) == (200, 3 * 1024 * 1024)
    assert b"\n" not in line.content
    server.client.post("/dgxmm/faults", json={"long_line_bytes": 0, "error_bytes": 1000})
    error = server.client.post("/v1/chat/completions", json=chat)
    assert (error.status_code, len(error.content)) == (500, 1000)
    assert server.client.get("/dgxmm/seen").json() == {"sent": [3 * 1024 * 1024, 1000],
                                                       "hanging": {}}  # fmt: skip


def test_it_drips_a_streamed_answer_while_told(standin: Start) -> None:
    server = standin()
    server.client.post("/dgxmm/faults", json={"drip_s": 0.01})
    chat = {"messages": [{"role": "user", "content": "hi"}], "stream": True}
    lines: list[str] = []
    with server.client.stream("POST", "/v1/chat/completions", json=chat) as answer:
        for line in answer.iter_lines():
            lines.append(line)
            if len(lines) == 3:  # dripping: switch it off, and the events come
                server.client.post("/dgxmm/faults", json={"drip_s": 0})
    assert lines[:3] == [": still thinking"] * 3
    assert [line for line in lines if line][-1] == "data: [DONE]"
