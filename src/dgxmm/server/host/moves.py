"""The moves of a host's job list in memory, and the jobs each touched.

Runs started and taken back, skips and syncs live in the host's scheduler, not in the store,
so the store's change counter does not see them. With it, this counter is the jobs topic of
``GET /api/changes``; and since each move remembers the jobs it touched, a live job list can
fetch those rows alone (``keys_since``), as the store's ``change_keys`` lets it for the rest.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable

__all__ = ["KEPT_MOVES", "Moves"]

# The moves kept with their jobs: a page polls every 2 s and a busy host makes a few moves a
# tick, so a page further behind than this is fetched whole.
KEPT_MOVES = 1_000


class Moves:
    """A counter of moves, each with the jobs it touched (None: it may add or move rows)."""

    def __init__(self) -> None:
        self.count = 0
        self._kept: deque[tuple[int, frozenset[str] | None]] = deque(maxlen=KEPT_MOVES)
        # Its own lock: a poll must not wait for a tick that holds the host's while it claims.
        self._lock = threading.Lock()

    def moved(self, names: Iterable[str] | None) -> None:
        """Count a move that touched these jobs (None: a sync, which may add or move rows)."""
        with self._lock:
            self.count += 1
            self._kept.append((self.count, None if names is None else frozenset(names)))

    def keys_since(self, since: int) -> frozenset[str] | None:
        """Return the jobs the moves after ``since`` touched; None when one of them was a sync
        or is older than the moves kept."""
        with self._lock:
            if since >= self.count:
                return frozenset()
            touched = [names for number, names in self._kept if number > since]
            if len(touched) != self.count - since:
                return None
        if any(names is None for names in touched):
            return None
        return frozenset(name for names in touched if names is not None for name in names)
