"""``Settling``: after a restart, the deployments found up are asked again until they settle.

An action's record is written when it ends. A dgxmm killed during a wake leaves the row
``sleeping``, and the restart's reattach finds the server still asleep, because the wake is
still running there (issue 44: 90 s after the server finished waking, dgxmm still said
``sleeping``, and the GPU bars, the fit check and the savings counted the asleep memory).
Nothing tells the reattach which servers were mid-action, so every deployment it found
``running`` or ``sleeping`` is asked again, on a thread of its own: after 1 s, then each
time twice as long after (at most 30 s between), until the longest an action dgxmm began
could still run has passed (the deployment's ``startup_timeout_s`` or ``sleep_timeout_s``,
the larger), or a correction was written. Each ask is the reconciler's (``settle``: it
believes only ``GET /is_sleeping``, never waits for a deployment's lock, and writes the
event that says why). After the window, the metrics pass compares the two every minute.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dgxmm.errors import DgxmmError

__all__ = ["FIRST_ASK_S", "MOST_BETWEEN_S", "Settling", "Unsettled"]

log = logging.getLogger(__name__)

FIRST_ASK_S = 1.0
MOST_BETWEEN_S = 30.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Unsettled:
    """A deployment found up at a restart, and how long an action of it could still run."""

    deployment_id: int
    window_s: float


class Settling:
    """Asks each deployment found up at a restart again until it settles; see the module."""

    def __init__(
        self,
        settle: Callable[[int], bool],
        *,
        first_s: float = FIRST_ASK_S,
        most_between_s: float = MOST_BETWEEN_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settle = settle  # True once a correction was written, or nothing is left to ask
        self._first_s = first_s
        self._most_between_s = most_between_s
        self._monotonic = monotonic
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, found: Sequence[Unsettled]) -> None:
        """Start asking them again, on a thread of its own (none for none)."""
        if not found:
            return
        self._thread = threading.Thread(
            target=self._run, args=(list(found),), name="dgxmm-settling", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop asking; wait for an ask under way."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _run(self, found: list[Unsettled]) -> None:
        began = self._monotonic()
        # deployment id -> (next ask, seconds between, the window's end)
        asks = {
            one.deployment_id: (began + self._first_s, self._first_s, began + one.window_s)
            for one in found
        }
        while asks and not self._stop.is_set():
            soonest = min(at for at, _, _ in asks.values())
            if self._stop.wait(max(0.0, soonest - self._monotonic())):
                return
            now = self._monotonic()
            for deployment_id, (at, was, end) in list(asks.items()):
                if at > now:
                    continue
                try:
                    settled = self._settle(deployment_id)
                except DgxmmError as error:  # one server in trouble must not end the watch
                    log.warning("asking deployment %s again: %s", deployment_id, error)
                    settled = False
                between = min(was * 2, self._most_between_s)
                if settled or now >= end:
                    del asks[deployment_id]
                else:  # the last ask at the window's end
                    asks[deployment_id] = (min(now + between, end), between, end)
