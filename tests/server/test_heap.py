"""The serving interpreter's heap: frozen after each full collection, refreshed when it doubled.

Counted, not timed: which objects a full collection would walk (those in a generation,
``gc.get_objects()``), and whether a cycle that became garbage is freed.
"""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections.abc import Iterator

import pytest
from support import wait_for

from dgxmm.server.host.heap import Heap


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def walked(thing: object) -> bool:
    """Return whether a full collection would walk ``thing`` (it is in a generation)."""
    return any(found is thing for found in gc.get_objects())


@pytest.fixture
def heap() -> Iterator[Heap]:
    made = Heap(growth=1.5, least=0)
    yield made
    made.stop()


def test_what_lives_at_start_is_walked_by_no_full_collection(heap: Heap) -> None:
    before = [[n] for n in range(1_000)]
    assert walked(before)
    heap.start()
    assert not walked(before)
    assert gc.get_freeze_count() > 1_000
    heap.stop()
    assert walked(before)  # stopped: the collector has it back
    assert gc.get_freeze_count() == 0


def test_what_outlives_a_full_collection_is_frozen_after_it(heap: Heap) -> None:
    heap.start()
    later = [[n] for n in range(1_000)]
    assert walked(later)
    gc.collect()  # a full collection, as the interpreter runs its own
    wait_for(lambda: not walked(later), "the survivors to be frozen")


def test_a_frozen_cycle_that_became_garbage_is_freed_once_the_heap_grew(heap: Heap) -> None:
    first, second = _Node(), _Node()
    first.other, second.other = second, first
    gone = weakref.ref(first)
    heap.start()
    del first, second  # a frozen cycle, garbage now: no full collection frees it yet
    gc.collect()
    assert gone() is not None
    refreshes = heap.refreshes
    grown = [[n] for n in range(gc.get_freeze_count())]  # more than half as many again
    gc.collect()
    wait_for(lambda: heap.refreshes > refreshes, "a refresh")
    assert gone() is None
    assert not walked(grown)


class _SlowToGo:
    """Garbage whose finalizer keeps the collector busy (marked collecting) for half a second."""

    def __init__(self, inside: threading.Event) -> None:
        self.inside = inside
        self.me = self  # a cycle: only a collection frees it

    def __del__(self) -> None:
        self.inside.set()
        time.sleep(0.5)


def test_a_refresh_asked_while_another_collection_runs_still_collects(heap: Heap) -> None:
    """A collection asked while another thread's runs does nothing, and says nothing of it."""
    first, second = _Node(), _Node()
    first.other, second.other = second, first
    gone = weakref.ref(first)
    heap.start()
    del first, second  # a frozen cycle, garbage now
    inside = threading.Event()
    _SlowToGo(inside)

    def refresh() -> None:
        assert inside.wait(10)
        heap._refresh()  # as the heap's thread would, had a full collection just ended

    refresher = threading.Thread(target=refresh)
    refresher.start()
    gc.collect()  # finds the slow one: its finalizer runs while the refresh asks for its own
    refresher.join()
    assert gone() is None
