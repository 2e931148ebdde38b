"""Lanes: one task per channel with something due, on one event loop of its own thread.

Why tasks on one loop, and not a thread per channel: an attempt's whole deadline is
``asyncio.timeout`` around it, and removing a channel cancels its task, which closes the
connection under way at once; a blocked thread can be neither bounded as a whole nor
stopped. A channel's deliveries go out one after another in its lane (in order, and a
receiver that fails is not hammered); channels never wait for each other, so a slow
receiver, or a failing channel's retries, hold up only their own lane.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import Future

__all__ = ["Lanes"]

log = logging.getLogger(__name__)


class Lanes:
    """Runs ``work(channel_id)`` as one task per channel; at most one per channel at a time."""

    def __init__(self, work: Callable[[int], Awaitable[object]]) -> None:
        self._work = work
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._tasks: dict[int, asyncio.Task[object]] = {}  # touched on the loop's thread only
        self._busy: set[int] = set()
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the loop's thread."""
        if self._thread is not None:
            return
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(
            target=_serve, args=(loop,), name="dgxmm-alerts-lanes", daemon=True
        )
        self._thread.start()

    def stop(self, grace: float) -> None:
        """Let the lanes end within ``grace`` seconds, cancel what is left, stop the loop.

        An attempt under way is let finish and be recorded (a receiver that took it must not
        get it again from another instance later); one still going after ``grace`` is closed.
        """
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._loop = None  # no lane starts from here on
        done: Future[None] = asyncio.run_coroutine_threadsafe(self._finish_all(grace), loop)
        try:
            done.result(grace + 10)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            self._thread = None

    def run(self, channel_ids: Iterable[int]) -> None:
        """Start a lane for each channel that has none running; return at once."""
        loop = self._loop
        if loop is None:
            return
        with self._lock:
            new = [c for c in channel_ids if c not in self._busy]
            self._busy.update(new)
        for channel_id in new:
            loop.call_soon_threadsafe(self._begin, channel_id)

    def cancel(self, channel_id: int) -> None:
        """Stop a channel's lane now, its attempt under way with it (the channel was removed)."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._cancel, channel_id)

    def keep_only(self, channel_ids: Iterable[int]) -> None:
        """Stop the lanes of channels not in ``channel_ids`` (removed on another instance)."""
        kept = set(channel_ids)
        for channel_id in self.busy() - kept:
            self.cancel(channel_id)

    def busy(self) -> set[int]:
        """Return the channels whose lane is running."""
        with self._lock:
            return set(self._busy)

    def _begin(self, channel_id: int) -> None:
        task = asyncio.get_running_loop().create_task(self._lane(channel_id))
        self._tasks[channel_id] = task

    async def _lane(self, channel_id: int) -> None:
        try:
            await self._work(channel_id)
        except asyncio.CancelledError:
            raise
        except Exception:  # one bad lane must not stop the others, nor the next pass
            log.exception("dgxmm alerts: channel %s's lane failed; it runs again", channel_id)
        finally:
            self._tasks.pop(channel_id, None)
            with self._lock:
                self._busy.discard(channel_id)

    def _cancel(self, channel_id: int) -> None:
        task = self._tasks.get(channel_id)
        if task is not None:
            task.cancel()

    async def _finish_all(self, grace: float) -> None:
        tasks = list(self._tasks.values())
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=grace)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
        # The database calls under way on worker threads end before the loop closes.
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        loop.close()
