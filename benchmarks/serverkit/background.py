"""What runs on the server behind the figures: the long query job, a job switched twice a
second, and the minute's system jobs a window keeps clear of."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from serverkit.floor import Bench


def clear_of_the_minutes_jobs(seconds: float) -> None:
    """Wait until a window of ``seconds`` starting now misses the system jobs of the minute.

    The host starts them within a tick (5 s) of the minute and the metrics pass takes about
    2 s: a window from 10 s past a minute to 10 s before the next is clear of them.
    """
    if seconds > 40:
        return  # no window that long is clear: measure as it falls
    past = time.time() % 60
    if not 10 <= past <= 50 - seconds:
        time.sleep((70 - past) % 60)


@contextmanager
def long_job_running(bench: Bench) -> Iterator[None]:
    """Run the long query job on a thread until the server stops; wait until it runs."""

    def run() -> None:
        with contextlib.suppress(httpx.HTTPError):  # it answers when the server gives it up
            bench.client.post("/api/jobs/run", json={"name": "long_query"}, timeout=None)

    threading.Thread(target=run, daemon=True).start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        jobs = bench.client.get("/api/jobs").json()["jobs"]
        if any(j["name"] == "long_query" and j["running"] for j in jobs):
            break
        time.sleep(0.1)
    yield


@contextmanager
def jobs_changing(bench: Bench) -> Iterator[None]:
    """Switch a job off and on twice a second, so the counters the pollers read move."""
    stop = threading.Event()

    def toggle() -> None:
        with httpx.Client(
            base_url=bench.base, timeout=60, headers={"Authorization": f"Bearer {bench.token}"}
        ) as client:
            enabled = False
            while not stop.wait(0.5):
                client.post("/api/jobs/enable", json={"name": "def00000", "enabled": enabled})
                enabled = not enabled

    thread = threading.Thread(target=toggle, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
