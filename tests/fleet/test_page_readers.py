"""The pages a metrics pass reads, read alike in the calling thread and by the child process.

One contract, run against ``InlinePages`` and ``PageProcess``, over a real HTTP server on
127.0.0.1 that answers each path its own way (a vLLM metrics page, a page that is not one, a
500, a health check, an answer that never comes). Then what only the child process has: it
ends with its parent's pipe, a child that died is replaced, and a hung page holds up no other.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from fleet.test_metrics_sample import page as metrics_page
from support import free_port, wait_for

from dgxmm.clock import ManualClock
from dgxmm.errors import BackendError, ServerGone, TimedOut
from dgxmm.fleet import Health, HttpTimeouts, MetricsSample, SleepState
from dgxmm.fleet.backends import InlinePages, ModelServerClient, PageProcess, PageRequest, Pages
from dgxmm.fleet.backends.pages import Failure, Page

RELEASE = threading.Event()  # lets the hung answers go at the end of a test
HUGE = 256 * 1024 * 1024
SENT: list[int] = []  # what each huge page had sent when its reader hung up


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.startswith("/hang/"):
            RELEASE.wait(30)
            return
        if self.path in ("/huge/metrics", "/drip/metrics"):
            self._send_long(drip=self.path.startswith("/drip/"))
            return
        status, body = {
            "/ok/metrics": (200, metrics_page(running="2", stop="7", sleep="weights_offloaded")),
            "/bad/metrics": (200, "vllm:num_requests_running{oops} 1\n"),
            "/plain/metrics": (200, "process_open_fds 12\n"),
            "/err/metrics": (500, "CUDA error: out of memory"),
            "/ok/health": (200, ""),
            "/loading/health": (503, "loading"),
        }.get(self.path, (404, "no such page"))
        encoded = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(encoded)))
        self.end_headers()
        self.wfile.write(encoded)

    def _send_long(self, *, drip: bool) -> None:
        """A page of HUGE bytes: at once, or a line every 0.05 s (for at most 30 s)."""
        self.send_response(200)
        self.send_header("Content-Length", str(HUGE))
        self.end_headers()
        sent = 0
        try:
            if drip:
                for _ in range(600):
                    if RELEASE.is_set():
                        return
                    self.wfile.write(b"# still here\n")
                    self.wfile.flush()
                    time.sleep(0.05)
                return
            piece = b"#" * (1024 * 1024)
            while sent < HUGE:
                self.wfile.write(piece)
                sent += len(piece)
        except OSError:
            pass
        finally:
            if not drip:
                SENT.append(sent)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    RELEASE.set()
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def process() -> Iterator[PageProcess]:
    reader = PageProcess()
    yield reader
    reader.close()


@pytest.fixture(params=["inline", "process"])
def pages(request: pytest.FixtureRequest, process: PageProcess) -> Iterator[Pages]:
    if request.param == "process":
        yield process
        return
    with httpx.Client(trust_env=False) as client:
        yield InlinePages(client)


def ask(url: str, *, metrics: bool = True, timeout_s: float = 5.0) -> PageRequest:
    return PageRequest(url=url, connect_s=2.0, timeout_s=timeout_s, metrics=metrics)


def test_a_vllm_metrics_page_is_read_as_a_sample(pages: Pages, server: str) -> None:
    page = pages.read(ask(f"{server}/ok/metrics"))
    assert (page.failure, page.status, page.reason, page.invalid) == (None, 200, "OK", None)
    assert page.sample == MetricsSample(
        taken_at_us=0,
        requests_running=2,
        requests_waiting=0,
        requests_finished_total=7,
        latency_sum_s=0.0,
        latency_count=0,
        sleep_state=SleepState.WEIGHTS_OFFLOADED,
    )


def test_a_page_that_is_not_prometheus_says_why(pages: Pages, server: str) -> None:
    page = pages.read(ask(f"{server}/bad/metrics"))
    assert (page.status, page.sample) == (200, None)
    assert page.invalid is not None
    assert page.invalid.startswith("metrics line 1:")
    plain = pages.read(ask(f"{server}/plain/metrics"))
    assert plain.invalid is not None
    assert "vllm:num_requests_running: is missing" in plain.invalid


def test_a_server_error_keeps_its_status_and_the_start_of_its_body(
    pages: Pages, server: str
) -> None:
    page = pages.read(ask(f"{server}/err/metrics"))
    assert (page.status, page.reason, page.excerpt) == (
        500,
        "Internal Server Error",
        "'CUDA error: out of memory'",
    )
    assert (page.is_success, page.sample, page.invalid) == (False, None, None)


def test_a_huge_metrics_page_is_read_only_to_its_bound(pages: Pages, server: str) -> None:
    # Issue 44: what a model server sends is read with a byte bound (8 MiB of /metrics).
    SENT.clear()
    page = pages.read(ask(f"{server}/huge/metrics", timeout_s=30.0))
    assert page.sample is None
    assert page.invalid == "the page is over 8388608 bytes (dgxmm reads no more of it)"
    [sent] = wait_for(lambda: list(SENT), "the page's end")
    assert sent < HUGE // 4  # dgxmm hung up: the rest never left


def test_a_dripping_metrics_page_ends_at_its_one_deadline(pages: Pages, server: str) -> None:
    # A line every 0.05 s never trips httpx's per-read timeout; the page's own one does.
    page = pages.read(ask(f"{server}/drip/metrics", timeout_s=1.0))
    assert page.failure is Failure.TIMEOUT


def test_a_health_page_is_its_status_alone(pages: Pages, server: str) -> None:
    assert pages.read(ask(f"{server}/ok/health", metrics=False)) == Page(status=200, reason="OK")
    loading = pages.read(ask(f"{server}/loading/health", metrics=False))
    assert (loading.status, loading.reason) == (503, "Service Unavailable")


def test_a_refused_connection_is_a_connect_failure(pages: Pages) -> None:
    page = pages.read(ask(f"http://127.0.0.1:{free_port()}/metrics"))
    assert page == Page(failure=Failure.CONNECT, detail="connection refused")


def test_an_answer_that_never_comes_is_a_timeout(pages: Pages, server: str) -> None:
    page = pages.read(ask(f"{server}/hang/metrics", timeout_s=0.3))
    assert page.failure is Failure.TIMEOUT
    assert page.status == 0


@pytest.mark.parametrize("reader", ["inline", "process"])
def test_the_client_says_the_same_whoever_reads(
    reader: str, process: PageProcess, server: str
) -> None:
    """What a pass meets (a sample, each failure) reads the same through either reader."""
    timeouts = HttpTimeouts(connect_s=2.0, probe_s=0.3, metrics_s=0.3)

    def client(path: str) -> ModelServerClient:
        base = f"{server}/{path}" if path else f"http://127.0.0.1:{free_port()}"
        pages = process if reader == "process" else None
        return ModelServerClient(base, server="deployment 'llama'", timeouts=timeouts, pages=pages)

    sample = client("ok").sample(ManualClock(1_000))
    assert (sample.taken_at_us, sample.requests_finished_total) == (1_000, 7)
    with pytest.raises(BackendError) as failure:
        client("err").sample(ManualClock(0))
    assert str(failure.value) == (
        "metrics (GET /metrics) on deployment 'llama': answered 500 Internal Server Error: "
        "'CUDA error: out of memory'"
    )
    with pytest.raises(BackendError, match="on deployment 'llama': metrics line 1:"):
        client("bad").sample(ManualClock(0))
    with pytest.raises(ServerGone, match="connection refused; the server is gone"):
        client("").sample(ManualClock(0))
    with pytest.raises(TimedOut, match=r"no answer within 0\.3 s"):
        client("hang").sample(ManualClock(0))
    assert client("ok").check_health().health is Health.HEALTHY
    loading = client("loading").check_health()
    assert (loading.health, loading.detail) == (Health.UNHEALTHY, "503 Service Unavailable")
    hung = client("hang").check_health()
    assert (hung.health, hung.detail) == (Health.UNREACHABLE, "no answer within 0.3 s")
    gone = client("").check_health()
    assert (gone.health, gone.detail) == (Health.UNREACHABLE, "connection refused")


def test_a_hung_page_holds_up_no_other(process: PageProcess, server: str) -> None:
    """Forty hung pages asked first; a good page asked after them still answers at once."""
    with ThreadPoolExecutor(max_workers=41) as pool:
        hung = [
            pool.submit(process.read, ask(f"{server}/hang/metrics", timeout_s=20.0))
            for _ in range(40)
        ]
        good = pool.submit(process.read, ask(f"{server}/ok/metrics"))
        assert good.result(timeout=10).status == 200
        assert not any(future.done() for future in hung)
        RELEASE.set()  # the hung answers end: their connections close with no answer
        for future in hung:
            assert future.result(timeout=10).failure is Failure.TRANSPORT
    RELEASE.clear()


def _child_pid(process: PageProcess) -> int:
    child = process._child  # the test looks inside to kill it
    assert child is not None
    return child.pid


def test_a_child_that_died_is_replaced_and_what_it_held_fails(server: str) -> None:
    reader = PageProcess()
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            held = pool.submit(reader.read, ask(f"{server}/hang/metrics", timeout_s=20.0))
            deadline = time.monotonic() + 10
            while reader._child is None and time.monotonic() < deadline:
                time.sleep(0.01)
            first = _child_pid(reader)
            time.sleep(0.5)  # the page is asked of the child
            os.kill(first, signal.SIGKILL)
            assert held.result(timeout=10) == Page(
                failure=Failure.TRANSPORT, detail="the page reader exited"
            )
        assert reader.read(ask(f"{server}/ok/metrics")).status == 200
        assert _child_pid(reader) != first
    finally:
        reader.close()


def test_the_child_ends_when_its_reader_closes(server: str) -> None:
    """At once, though a page it reads hangs: nobody waits for that page any more."""
    reader = PageProcess()
    assert reader.read(ask(f"{server}/ok/health", metrics=False)).status == 200
    child = reader._child
    assert child is not None
    with ThreadPoolExecutor(max_workers=1) as pool:
        held = pool.submit(reader.read, ask(f"{server}/hang/metrics", timeout_s=20.0))
        time.sleep(0.5)  # the page is asked of the child
        reader.close()
        assert child.returncode == 0  # it ended on its own, not killed: its stdin closed
        assert held.result(timeout=10).failure is Failure.TRANSPORT
    closed = reader.read(ask(f"{server}/ok/health", metrics=False))
    assert closed == Page(failure=Failure.TRANSPORT, detail="the page reader is closed")


def test_a_line_that_is_no_answer_is_passed_over(
    server: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A child that prints something else on its stdout (a library's print) still answers."""
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\necho "hello from a library"\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    reader = PageProcess(python=str(python))
    try:
        with caplog.at_level(logging.WARNING, logger="dgxmm.fleet.backends.page_process"):
            assert reader.read(ask(f"{server}/ok/metrics")).status == 200
        assert "no answer" in caplog.text
        assert "hello from a library" in caplog.text
    finally:
        reader.close()


def test_a_page_the_child_cannot_even_ask_is_answered_at_once(process: PageProcess) -> None:
    """An error httpx raises before any request (not a transport error) is still an answer."""
    page = process.read(ask("http://[::1/metrics", timeout_s=20.0))
    assert page.failure is Failure.TRANSPORT
    assert page.detail.startswith("InvalidURL:")
