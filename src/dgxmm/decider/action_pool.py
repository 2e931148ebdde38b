"""A bounded pool of worker threads that acts on each deployment one action at a time.

The schedule runner and the idle runner both decide in a pass that must not wait for a model
server, and hand each deployment's action to a worker here: a deployment whose action is
still under way is not handed another (``submit`` answers None), and a worker forgets its
deployment when it ends, whatever happened, under the same lock ``submit`` takes, so no
deployment is ever acted on twice at once by one runner.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_all
from typing import Any, Generic, TypeVar

__all__ = ["ActionPool"]

T = TypeVar("T")


class ActionPool(Generic[T]):
    """Workers acting on deployments, one action per deployment at a time."""

    def __init__(self, workers: int, name: str) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        self._guard = threading.Lock()
        self._acting: dict[int, Future[T]] = {}

    def is_acting(self, deployment_id: int) -> bool:
        """Tell whether an action on the deployment is under way."""
        with self._guard:
            return deployment_id in self._acting

    def submit(self, deployment_id: int, act: Callable[..., T], *args: Any) -> Future[T] | None:
        """Hand ``act(*args)`` to a worker; None (and nothing done) while one is under way."""
        with self._guard:  # the worker forgets itself under the same guard: never before
            if deployment_id in self._acting:
                return None
            future = self._pool.submit(self._run, deployment_id, act, *args)
            self._acting[deployment_id] = future
            return future

    def drain(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the actions under way; tell whether all finished."""
        with self._guard:
            running = list(self._acting.values())
        _, left = wait_all(running, timeout=timeout_s)
        return not left

    def close(self) -> None:
        """Take no more actions; those under way finish on their threads."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _run(self, deployment_id: int, act: Callable[..., T], *args: Any) -> T:
        try:
            return act(*args)
        finally:
            with self._guard:
                self._acting.pop(deployment_id, None)
