"""The ticker's lease: how often a standby tries it, when a holder counts as stuck, and the
refusal of a second server on one SQLite database.

Only the holder of the lease ticks (``host.py``). It beats at every pass of its ticker; a
standby that sees the holder's beat unmoved for ``stuck_after(tick_seconds)`` seconds deposes
it (``store/presence``), and takes the lease at its next try, every ``LEASE_TRY_SECONDS``.
"""

from __future__ import annotations

from dgxmm.errors import Conflict
from dgxmm.store import Store
from dgxmm.time_units import SECOND_US

__all__ = [
    "LEASE_TRY_SECONDS",
    "STUCK_MIN_SECONDS",
    "STUCK_TICKS",
    "TAKEOVER_CATCHUP_US",
    "second_server",
    "stuck_after",
]

# A standby tries the ticker's lease this often: a dead holder is replaced within about it.
LEASE_TRY_SECONDS = 1.0
# At a takeover, times due this long before it are still run (if nobody claimed them).
TAKEOVER_CATCHUP_US = 30 * SECOND_US
# A holder whose beat has not moved for this many ticks (and at least this many seconds) is
# stuck: a slow tick (a claim waits at most 2 s for a lock, a sync reads the catalog) beats
# late, never this late, and the floor keeps a short tick from deposing on a hiccup.
STUCK_TICKS = 4
STUCK_MIN_SECONDS = 10.0


def stuck_after(tick_seconds: float) -> float:
    """Return how long (real seconds) a holder's beat may stand still before it is deposed."""
    return max(STUCK_MIN_SECONDS, STUCK_TICKS * tick_seconds)


def second_server(store: Store) -> Conflict:
    """The refusal of a second server on one SQLite database (SQLite serves one instance)."""
    return Conflict(
        f"another dgxmm serve is running on {store.path}; stop it first "
        "(several instances on one database need PostgreSQL)",
        field="database",
    )
