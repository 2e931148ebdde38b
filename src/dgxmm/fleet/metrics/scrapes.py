"""The scrape pass's threads: many deployments' ``/metrics`` read at once, none waiting on another.

``Metrics.rollup_all`` hands ``ScrapePool.run`` its targets and the scrape of one. The targets
wait in one queue that each pool thread empties, and the pass waits for them at most the
scrape deadline: a hung or slow server never delays the others, and one still unanswered at
the deadline counts as unreadable. Few scrapes move at once, so a request served beside the
pass is not starved of the GIL; one stuck past ``STUCK_S`` gets a thread started in its place.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_all
from enum import Enum

from dgxmm.errors import BackendError
from dgxmm.fleet.deployments.deployment import Deployment
from dgxmm.fleet.metrics.sample import MetricsSample

__all__ = ["MOVING_SCRAPES", "SCRAPE_WORKERS", "STUCK_S", "Scrape", "ScrapePool", "Scraped"]

# Scrapes at once, at most. More than the hung servers a fleet is likely to have at one time,
# so the healthy ones are never left waiting for a free thread behind them.
SCRAPE_WORKERS = 256
# Scrapes moving at once: enough for a short pass, few enough that a request served beside
# the pass waits for the GIL milliseconds, not seconds. Hundreds of runnable scrape threads
# stalled every request for the whole pass (1.5 s at 1,000 deployments; benchmarks/README.md).
MOVING_SCRAPES = 16
# A scrape still waiting after this is taken for a slow or hung server: another thread starts
# in its place, so the healthy servers behind it never wait for its timeout.
STUCK_S = 0.1


class Scrape(Enum):
    """How one target's scrape went."""

    SAMPLED = "sampled"
    CHECKED = "checked"  # a sleeping deployment's health
    GONE = "gone"
    UNREADABLE = "unreadable"


# How a scrape went, its sample (sampled) and its error (unreadable).
Scraped = tuple[Scrape, MetricsSample | None, BackendError | None]


class ScrapePool:
    """The bounded pool the scrape passes run on."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=SCRAPE_WORKERS, thread_name_prefix="scrape")

    def run(
        self,
        targets: list[Deployment],
        scrape: Callable[[Deployment], Scraped],
        deadline_s: float,
    ) -> tuple[dict[int, Scraped], list[Deployment]]:
        """Scrape ``targets`` for at most ``deadline_s``; return what was found, by id, and
        the targets no thread took before the deadline (they wait for the next pass)."""
        # The targets wait in one queue that each pool thread empties: submitting one task
        # per target would make this thread fight hundreds of busy workers for the GIL.
        work = deque(targets)
        results: dict[int, Scraped] = {}
        go = threading.Event()
        # When each thread's scrape under way began (0.0: between two); one slot per thread.
        began = [0.0] * SCRAPE_WORKERS

        def scrape_queued(slot: int) -> None:
            go.wait()
            while True:
                try:
                    deployment = work.popleft()
                except IndexError:
                    return
                began[slot] = time.monotonic()
                results[deployment.id] = scrape(deployment)
                began[slot] = 0.0

        loops: list[Future[None]] = []

        def add(count: int) -> None:
            for _ in range(max(0, min(count, SCRAPE_WORKERS - len(loops), len(work)))):
                loops.append(self._pool.submit(scrape_queued, len(loops)))

        deadline = time.monotonic() + deadline_s
        add(MOVING_SCRAPES)
        # Every first thread is handed its loop before any starts: threads scraping while
        # this one still submits starve it of the GIL.
        go.set()
        while (left := deadline - time.monotonic()) > 0:
            _, waiting = wait_all(loops, timeout=min(STUCK_S, left))
            if not waiting:
                break
            now = time.monotonic()
            stuck = sum(1 for at in began if at and now - at > STUCK_S)
            add(MOVING_SCRAPES - (len(waiting) - stuck))  # a thread for each stuck one
        never = list(work)
        work.clear()  # past the deadline: what no thread took yet waits for the next pass
        return dict(results), never  # a copy: a stuck scrape may still answer into it

    def close(self) -> None:
        """Start no more scrapes (those under way end on their own timeouts)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
