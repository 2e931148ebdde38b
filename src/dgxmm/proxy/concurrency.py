"""A deployment's concurrency limit: so many requests at once, a bounded queue, then 429.

``max_concurrent_requests`` (none by default) is how many requests the proxy passes to one
deployment's server at once; past it a request waits, first come first served, for one of
them to end, up to ``max_queued_requests`` waiting (then 429 ``rate_limit_exceeded`` with
``Retry-After``, in OpenAI's shape), and up to the hold's time bound (``proxy.max_hold_s``,
then 429 too). A client that goes away leaves the queue. llama-swap answers 429 past its
limit at once (``max_queued_requests: 0`` here); Ollama queues (``OLLAMA_MAX_QUEUE``).

A slot is handed from the request that ends to the first waiting one directly, so a request
arriving meanwhile cannot overtake the queue. Event loop only: no lock.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from dgxmm.proxy.replies import ProxyRefused, Refusal

__all__ = ["Slots"]


@dataclass(slots=True)
class _Gate:
    busy: int = 0
    waiting: deque[asyncio.Future[None]] = field(default_factory=deque)


class Slots:
    """Per deployment id, the requests passed on now and those waiting for a slot."""

    def __init__(self) -> None:
        self._gates: dict[int, _Gate] = {}

    def busy(self, deployment_id: int) -> int:
        """Return how many requests of the deployment hold a slot now."""
        gate = self._gates.get(deployment_id)
        return gate.busy if gate is not None else 0

    def waiting(self, deployment_id: int) -> int:
        """Return how many requests of the deployment wait for a slot now."""
        gate = self._gates.get(deployment_id)
        return len(gate.waiting) if gate is not None else 0

    async def take(
        self,
        deployment_id: int,
        name: str,
        *,
        limit: int,
        queue: int,
        max_wait_s: float,
        gone: Callable[[], Coroutine[Any, Any, None]],
    ) -> bool:
        """Take a slot (waiting for one if need be); False when the client went away first.

        ``ProxyRefused`` (``rate_limit_exceeded``) when the queue is full or the wait passed
        ``max_wait_s``. Give the slot back with ``give_back`` once the request has ended.
        """
        gate = self._gates.setdefault(deployment_id, _Gate())
        if gate.busy < limit and not gate.waiting:
            gate.busy += 1
            return True
        if len(gate.waiting) >= queue:
            raise ProxyRefused(
                Refusal.BUSY,
                f"deployment {name!r} serves {limit} requests at once and {queue} wait already "
                "(its max_concurrent_requests and max_queued_requests)",
            )
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        gate.waiting.append(turn)
        left = asyncio.ensure_future(gone())
        try:
            done, _ = await asyncio.wait(
                {turn, left}, timeout=max_wait_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            left.cancel()
        if turn.done():  # handed over by give_back (busy counts it still), perhaps as it left
            if left in done:
                self.give_back(deployment_id)
                return False
            return True
        turn.cancel()  # no slot may be handed to it now
        gate.waiting.remove(turn)
        if left in done:
            return False
        raise ProxyRefused(
            Refusal.BUSY,
            f"deployment {name!r} had no free slot of its {limit} within {max_wait_s:g} s "
            "(the setting proxy.max_hold_s)",
        )

    def give_back(self, deployment_id: int) -> None:
        """Hand the slot to the first request waiting, or free it."""
        gate = self._gates[deployment_id]
        while gate.waiting:
            turn = gate.waiting.popleft()
            if not turn.done():
                turn.set_result(None)
                return
        gate.busy -= 1
        if gate.busy == 0:
            del self._gates[deployment_id]
