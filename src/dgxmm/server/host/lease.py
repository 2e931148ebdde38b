"""The ticker's lease: this instance's part in it, how often a standby tries it, when a holder
counts as stuck, and the refusal of a second server on one SQLite database.

Only the holder of the lease ticks (``host.py``). It beats at every pass of its ticker; a
standby that sees the holder's beat unmoved for ``stuck_after(tick_seconds)`` seconds deposes
it (``store/presence``), and takes the lease at its next try, every ``LEASE_TRY_SECONDS``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from dgxmm.errors import Conflict, DgxmmError
from dgxmm.store import Dialect, InstanceRole, Store
from dgxmm.time_units import SECOND_US

__all__ = [
    "LEASE_TRY_SECONDS",
    "STUCK_MIN_SECONDS",
    "STUCK_TICKS",
    "TAKEOVER_CATCHUP_US",
    "TickerLease",
    "second_server",
    "stuck_after",
]

log = logging.getLogger(__name__)

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


class TickerLease:
    """This instance's part in the ticker's lease: holder or standby, and the steps between.

    ``take_over`` is the host's: it records the lost holder's runs, calls ``hold``, and ticks.
    ``lock`` is the host's scheduler lock, so that standing down and taking over (which hold
    it) never cross.
    """

    def __init__(
        self,
        store: Store,
        *,
        stuck_seconds: float,
        take_over: Callable[[], None],
        lock: threading.RLock,
    ) -> None:
        self.store = store
        self.stuck_seconds = stuck_seconds
        self.role = InstanceRole.STANDBY
        self._take_over = take_over
        self._lock = lock

    def start(self) -> None:
        """Take the lease, or stand by; on SQLite a second server is refused (Conflict)."""
        if self.store.presence.try_lease():
            self._take_over()
        elif self.store.dialect is Dialect.SQLITE:
            raise second_server(self.store)
        else:
            self.store.presence.register(InstanceRole.STANDBY)
            log.info("dgxmm host: standing by; instance %s ticks", self.holder_name())

    def hold(self) -> None:
        """Say this instance holds the lease (under the host's lock, in ``take_over``)."""
        self.role = InstanceRole.HOLDER
        self.store.presence.set_role(InstanceRole.HOLDER)

    def step(self) -> bool:
        """Keep or try the lease; tell whether this instance ticks now."""
        presence = self.store.presence
        if self.role is InstanceRole.HOLDER:
            if presence.holds_lease():
                return True
            self.stand_down("its connection")
            return False
        if presence.try_lease():
            self._take_over()
            return True
        deposed = presence.depose_if_stuck(at=time.monotonic(), after_seconds=self.stuck_seconds)
        if deposed is not None:
            log.error(
                "dgxmm host: the holder %s has not ticked for %.0f s; ended its sessions",
                deposed,
                self.stuck_seconds,
            )
            if presence.try_lease():  # its backend may still be exiting: else at the next try
                self._take_over()
                return True
        return False

    def stand_down(self, why: str) -> None:
        """Stop ticking: the lease is no longer this instance's."""
        with self._lock:
            if self.role is not InstanceRole.HOLDER:
                return
            log.error("dgxmm host: lost the ticker's lease (%s); standing by", why)
            self.role = InstanceRole.STANDBY
        try:
            self.store.presence.set_role(InstanceRole.STANDBY)
        except DgxmmError as error:  # the database is away: the next takeover writes the role
            log.warning("dgxmm host: could not record standing by: %s", error)

    def holder_name(self) -> str:
        """Name the instance that ticks now, as the store's presence rows say."""
        instances = self.store.presence.all()
        holders = [i.id for i in instances if i.alive and i.role is InstanceRole.HOLDER]
        return holders[0] if holders else "another"
