"""The serving interpreter's heap: what outlives a full collection is frozen, so the next is short.

CPython's full collection (generation 2) walks every object the collector tracks, with every
thread stopped. ``dgxmm serve`` holding 11,000 jobs and 1,000 deployments holds millions, and
each full collection paused the server for 120 to 575 ms: beside ``benchmarks/server.py``
they were the 99th percentile of every request, a static answer's as much as
``GET /api/changes``'s.

``Heap`` freezes (``gc.freeze``) what survives: at start, after one collection, and after each
full collection the interpreter runs on its own. Frozen objects are in no generation, so the
next full collection walks only what was made since. What it costs: a cycle of frozen
objects that later becomes garbage is not freed (garbage without a cycle still is, by its
reference count). So when the frozen objects have doubled since the last time everything was
collected, ``Heap`` collects everything once more (``gc.unfreeze``, ``gc.collect``) and
freezes what is left: one long pause each time the heap doubles, and leaked cycles never
hold more than the live heap itself.

The work is done on a thread of its own, woken by the collector's callback: a collection
asked from inside a callback does nothing (the collector is still marked as collecting). So
does one asked while another thread's collection is under way, and says nothing of it: a
refresh knows its collection ran when the callback hears it end on the refreshing thread, and
asks again until it does.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from typing import Any

__all__ = ["Heap"]

log = logging.getLogger(__name__)

_TRIES = 500  # a refresh's collection asked again at most this often, 10 ms apart


class Heap:
    """Freezes what outlives each full collection; collects everything when that doubled."""

    def __init__(self, *, growth: float = 2.0, least: int = 100_000) -> None:
        """``growth``: the frozen objects' growth since the last refresh that asks another;
        ``least``: below this many frozen, a full collection is short anyway: none is asked."""
        self._growth = growth
        self._least = least
        self._after_full = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._baseline = 0  # frozen objects just after everything was last collected
        self._tending = threading.RLock()  # a freeze never falls inside a refresh
        self._collector = 0  # the thread whose refresh collects now (its ident)
        self._collected = False  # that collection ran (the callback heard it end)
        self.refreshes = 0  # full refreshes since start

    def start(self) -> None:
        """Collect once, freeze what is left, and freeze again after every full collection."""
        if self._thread is not None:
            return
        gc.callbacks.append(self._noticed)  # first: the refresh hears its collection end
        self._refresh()
        self._thread = threading.Thread(target=self._tend, name="dgxmm-heap", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop freezing; what is frozen goes back to the collector."""
        if self._thread is None:
            return
        self._stopping.set()
        self._after_full.set()
        self._thread.join()
        self._thread = None
        gc.callbacks.remove(self._noticed)
        gc.unfreeze()

    def _noticed(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "stop" or info["generation"] != 2:
            return
        if threading.get_ident() == self._collector:
            self._collected = True  # a refresh's own: it freezes what is left itself
        else:
            self._after_full.set()

    def _tend(self) -> None:
        while True:
            self._after_full.wait()
            self._after_full.clear()
            if self._stopping.is_set():
                return
            with self._tending:
                gc.freeze()
                if gc.get_freeze_count() > max(self._least, self._growth * self._baseline):
                    self._refresh()

    def _refresh(self) -> None:
        """Collect everything, frozen or not, once; freeze what is left."""
        with self._tending:
            self._collector, self._collected = threading.get_ident(), False
            gc.unfreeze()
            found = gc.collect()
            for _ in range(_TRIES):
                if self._collected:
                    break
                time.sleep(0.01)  # another thread's collection was under way: ours did nothing
                found = gc.collect()
            self._collector = 0
            gc.freeze()
            self._baseline = gc.get_freeze_count()
            self.refreshes += 1
        log.info("dgxmm heap: %d objects frozen, %d unreachable collected", self._baseline, found)
