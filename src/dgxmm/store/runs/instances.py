"""The dgxmm processes on one store: who they are, which one ticks, which ones are alive.

Every process that claims a run registers itself in ``instances`` (its id is on each run it
claims). How the others tell it is alive, exactly and without timeouts:

- PostgreSQL: the process holds an advisory lock keyed on its id, on a connection of its own
  for its whole life. The server drops that session the moment the process dies (kill -9
  closes its socket), and with it the lock: ``pg_locks`` answers for every instance at once.
  The ticker's lease is one more advisory lock on the same connection: the first server to
  take it ticks; the others try again every second and stand by.
- SQLite: one machine, so a process is alive while its process id is (on this host). The
  ticker's lease is an exclusive ``flock`` on ``<database>.ticker.lock``: a second server on
  the same database cannot take it and refuses to start (``serve.py``).

A clean stop writes ``stopped_at`` and lets go of the locks.

A holder that is stuck but still connected (SIGSTOP, a hung ticker) keeps its session, and
the lease with it. The holder beats at each pass of its ticker (``last_seen``, which only
grows); a standby that sees the lease holder's beat unchanged for long enough (the host's
liveness limit, measured on the standby's own monotonic clock, so no two machines' clocks
need agree) ends every session of that instance (``depose``: each carries the instance id as
its ``application_name``), which releases the lease and aborts whatever it had open. A claim
of scheduled runs is fenced: in its transaction it checks that this instance's lease session
still holds the lease (``is_leading``), so a resumed old holder claims nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import socket
import threading
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import IO, Any

from sqlalchemy import Connection, Engine, case, select, text, update

from dgxmm import __version__
from dgxmm.clock import Clock
from dgxmm.store.database import Dialect, guarded, reading, writing
from dgxmm.store.schema import instances

__all__ = ["HolderBeat", "Instance", "InstanceRole", "Presence", "new_instance_id"]

_HOST = socket.gethostname().split(".", 1)[0][:40] or "host"
# Arbitrary, fixed: the advisory lock of the ticker's lease (beside the migrations' lock).
_LEASE_KEY = 0x64677878_6D6D0002 & 0x7FFFFFFFFFFFFFFF


class InstanceRole(Enum):
    """What an instance does."""

    HOLDER = "holder"  # holds the ticker's lease: ticks and runs every scheduled job
    STANDBY = "standby"  # a server that serves the API and pages, ready to take the lease
    PROCESS = "process"  # the CLI (or a library) claiming runs of its own


@dataclass(frozen=True, slots=True, kw_only=True)
class Instance:
    """One instance as the store has it."""

    id: str
    role: InstanceRole
    started_at: int
    role_since: int
    last_seen: int
    stopped_at: int | None
    place: dict[str, Any]
    alive: bool

    def to_json(self) -> dict[str, Any]:
        """Return it as plain JSON values (instants in microseconds)."""
        return {
            "id": self.id,
            "role": self.role.value,
            "alive": self.alive,
            "started_at_us": self.started_at,
            "role_since_us": self.role_since,
            "last_seen_us": self.last_seen,
            "stopped_at_us": self.stopped_at,
            "place": self.place,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class HolderBeat:
    """Which instance holds the ticker's lease, and its last beat as its row has it."""

    instance: str
    last_seen: int


def new_instance_id() -> str:
    """Return a new instance id: the host's name, the process id and a few random digits."""
    # Readable in a run's row and in "abandoned: instance <id> was lost"; the random tail
    # keeps two stores opened by one process (or a reused pid) apart.
    return f"{_HOST}-{os.getpid()}-{secrets.token_hex(2)}"


def _key(instance: str) -> int:
    return int.from_bytes(hashlib.sha256(instance.encode()).digest()[:8], "big") >> 1


class Presence:
    """This process's row in ``instances`` and its locks; registered at its first claim."""

    def __init__(
        self,
        engine: Engine,
        *,
        dialect: Dialect,
        clock: Clock,
        instance: str,
        database_path: Path | None,
    ) -> None:
        self.engine = engine
        self.dialect = dialect
        self.clock = clock
        self.instance = instance
        self._database_path = database_path
        self._lock = threading.RLock()
        self._registered = False
        self._ever_registered = False  # its row exists (a later register updates it)
        self._session: Connection | None = None  # PostgreSQL: holds our locks
        self._lease_file: IO[bytes] | None = None  # SQLite: the ticker's flock
        self._lease_taken = False  # PostgreSQL: the lease's advisory lock is ours
        # PostgreSQL: the backend of the session that took the lease; claims are fenced on it.
        self._lease_pid: int | None = None
        # A standby's watch: the holder's beat as last seen, and when (monotonic s) it was.
        self._watched: tuple[HolderBeat, float] | None = None
        self._role = InstanceRole.PROCESS
        # Where it runs, and which dgxmm: the Instances page shows a mixed-version fleet.
        self.place: dict[str, Any] = {"host": _HOST, "pid": os.getpid(), "version": __version__}

    # -- this process -------------------------------------------------------------------------

    def register(self, role: InstanceRole | None = None) -> None:
        """Write this instance's row and take its lock, once; ``role`` changes it later."""
        with self._lock:
            if role is not None and self._registered and role is not self._role:
                self.set_role(role)
                return
            if self._registered:
                return
            if self._ever_registered:  # stopped, or its session was cut: come back
                self._ensure_session()
                self._registered = True
                self.set_role(role or self._role)
                return
            self._role = role or self._role
            self._ensure_session()
            now = self.clock.now_us()
            with writing(self.engine) as connection:
                connection.execute(
                    instances.insert().values(
                        id=self.instance,
                        role=self._role.value,
                        started_at=now,
                        role_since=now,
                        last_seen=now,
                        place=json.dumps(self.place, sort_keys=True),
                    )
                )
            self._registered = True
            self._ever_registered = True

    def _ensure_session(self) -> None:
        """PostgreSQL: open our own session and take this instance's lock on it, once."""
        if self.dialect is not Dialect.POSTGRESQL or self._session is not None:
            return
        session = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        try:
            with guarded():
                session.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _key(self.instance)})
        except BaseException:
            session.close()
            raise
        self._session = session

    @property
    def role(self) -> InstanceRole:
        """This instance's role."""
        return self._role

    def set_role(self, role: InstanceRole) -> None:
        """Record a new role (with the instant it began)."""
        with self._lock:
            if not self._registered:
                self.register(role)
                return
            now = self.clock.now_us()
            self._role = role
            with writing(self.engine) as connection:
                connection.execute(
                    update(instances)
                    .where(instances.c.id == self.instance)
                    .values(role=role.value, role_since=now, last_seen=now, stopped_at=None)
                )

    def beat(self) -> None:
        """Record that this instance is still here (shown as ``last_seen``)."""
        with self._lock:
            if not self._registered:
                return
            now = self.clock.now_us()
            with writing(self.engine) as connection:
                # Every beat moves it, even on a clock that stood still (a test's, a
                # stepped-back one): a standby reads an unmoved value as a stuck holder.
                connection.execute(
                    update(instances)
                    .where(instances.c.id == self.instance)
                    .values(
                        last_seen=case(
                            (instances.c.last_seen >= now, instances.c.last_seen + 1),
                            else_=now,
                        )
                    )
                )

    def try_lease(self) -> bool:
        """Take the ticker's lease if no live instance holds it; tell whether this one does."""
        with self._lock:
            if self._holds_lease():
                return True
            if self.dialect is Dialect.POSTGRESQL:
                self.register()
                self._ensure_session()  # again after a cut connection
                assert self._session is not None
                with guarded():
                    taken = self._session.execute(
                        text("SELECT pg_try_advisory_lock(:k)"), {"k": _LEASE_KEY}
                    ).scalar()
                    if taken:
                        pid = self._session.execute(text("SELECT pg_backend_pid()")).scalar_one()
                        self._lease_pid = int(pid)
                self._lease_taken = bool(taken)
                return self._lease_taken
            assert self._database_path is not None
            path = self._database_path
            handle = open(path.with_name(path.name + ".ticker.lock"), "ab")  # noqa: SIM115
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                return False
            self._lease_file = handle
            return True

    def holds_lease(self) -> bool:
        """Tell whether this instance still holds the lease (PostgreSQL: its session is up)."""
        with self._lock:
            return self._holds_lease()

    def _holds_lease(self) -> bool:
        if self.dialect is Dialect.SQLITE:
            return self._lease_file is not None
        if self._session is None or not self._lease_taken:
            return False
        try:
            with guarded():
                self._session.execute(text("SELECT 1"))
        except Exception:  # the session is gone, and the lease with it
            self._lease_taken = False
            self._drop_session()
            return False
        return True

    def is_leading(self, connection: Connection) -> bool:
        """Tell, inside ``connection``'s transaction, whether this instance holds the lease.

        PostgreSQL: the session that took the lease still holds it (a deposed or cut one does
        not, even before this process notices). SQLite: its ``flock`` is held.
        """
        if self.dialect is Dialect.SQLITE:
            return self._lease_file is not None
        if self._lease_pid is None:
            return False
        high, low = _LEASE_KEY >> 32, _LEASE_KEY & 0xFFFFFFFF
        held = connection.execute(
            text(
                "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 "
                "AND granted AND classid::bigint = :high AND objid::bigint = :low "
                "AND pid = :pid AND database = "
                "(SELECT oid FROM pg_database WHERE datname = current_database())"
            ),
            {"high": high, "low": low, "pid": self._lease_pid},
        ).first()
        return held is not None

    def lease_holder(self) -> HolderBeat | None:
        """Return who holds the lease and its last beat (PostgreSQL; None when unknown)."""
        if self.dialect is Dialect.SQLITE:
            return None
        high, low = _LEASE_KEY >> 32, _LEASE_KEY & 0xFFFFFFFF
        with reading(self.engine) as connection:
            row = connection.execute(
                text(
                    "SELECT i.id, i.last_seen FROM pg_locks l "
                    "JOIN pg_stat_activity a ON a.pid = l.pid "
                    "JOIN instances i ON i.id = a.application_name "
                    "WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted "
                    "AND l.classid::bigint = :high AND l.objid::bigint = :low "
                    "AND a.datname = current_database()"
                ),
                {"high": high, "low": low},
            ).first()
        if row is None or row.id == self.instance:
            return None
        return HolderBeat(instance=str(row.id), last_seen=int(row.last_seen))

    def depose_if_stuck(self, *, at: float, after_seconds: float) -> str | None:
        """Depose the lease holder if its beat has not moved for ``after_seconds``.

        ``at`` is the caller's monotonic reading: the wait is measured here, from when this
        instance first saw the beat, never by comparing two machines' clocks. Return the
        deposed instance's id, or None.
        """
        beat = self.lease_holder()
        watched = self._watched
        if beat is None or watched is None or watched[0] != beat:
            self._watched = None if beat is None else (beat, at)
            return None
        if at - watched[1] < after_seconds:
            return None
        self._watched = None
        return beat.instance if self.depose(beat) else None

    def depose(self, holder: HolderBeat) -> int:
        """End every session of a stuck holder whose beat is still ``holder.last_seen``.

        Its lease and its liveness lock go with its sessions, and every transaction it had
        open is rolled back (a claim half done holds no lock any more). Return how many
        sessions were ended: 0 when it beat meanwhile, or is gone already. PostgreSQL only;
        ending another role's session needs ``pg_signal_backend`` (``StoreError``).
        """
        if self.dialect is Dialect.SQLITE or holder.instance == self.instance:
            return 0
        with reading(self.engine) as connection:
            # Conditional on the beat still being the one seen: a holder that woke up and
            # beat in between is left alone.
            ended = connection.execute(
                text(
                    "SELECT count(*) FILTER (WHERE pg_terminate_backend(a.pid)) "
                    "FROM pg_stat_activity a WHERE a.application_name = :id "
                    "AND a.datname = current_database() AND a.pid <> pg_backend_pid() "
                    "AND EXISTS (SELECT 1 FROM instances i WHERE i.id = :id "
                    "AND i.last_seen = :seen)"
                ),
                {"id": holder.instance, "seen": holder.last_seen},
            ).scalar()
        return int(ended or 0)

    def stop(self) -> None:
        """Record a clean stop and let go of the locks."""
        with self._lock:
            if self._registered:
                with contextlib.suppress(Exception), writing(self.engine) as connection:
                    connection.execute(
                        update(instances)
                        .where(instances.c.id == self.instance)
                        .values(stopped_at=self.clock.now_us())
                    )
            self._registered = False
            self._lease_taken = False
            self._drop_session()
            if self._lease_file is not None:
                self._lease_file.close()
                self._lease_file = None

    def _drop_session(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            with contextlib.suppress(Exception):
                session.invalidate()  # never back to the pool with our locks
            with contextlib.suppress(Exception):
                session.close()

    # -- every instance -----------------------------------------------------------------------

    def alive(self, connection: Connection, ids: set[str]) -> set[str]:
        """Return which of the instances ``ids`` are alive (this one always is)."""
        others = ids - {self.instance}
        found = {self.instance} & ids
        if not others:
            return found
        rows = connection.execute(
            select(instances.c.id, instances.c.place, instances.c.stopped_at).where(
                instances.c.id.in_(sorted(others))
            )
        ).all()
        if self.dialect is Dialect.POSTGRESQL:
            held = _held_advisory_keys(connection)
            found |= {r.id for r in rows if r.stopped_at is None and _key(r.id) in held}
        else:
            found |= {r.id for r in rows if r.stopped_at is None and _is_running(r.place)}
        return found

    def all(self) -> list[Instance]:
        """Return every instance on the store, the most recently seen first."""
        with reading(self.engine) as connection:
            rows = connection.execute(
                select(instances).order_by(instances.c.last_seen.desc(), instances.c.id)
            ).all()
            living = self.alive(connection, {r.id for r in rows})
        return [
            Instance(
                id=r.id,
                role=InstanceRole(r.role),
                started_at=int(r.started_at),
                role_since=int(r.role_since),
                last_seen=int(r.last_seen),
                stopped_at=None if r.stopped_at is None else int(r.stopped_at),
                place=json.loads(r.place),
                alive=r.id in living,
            )
            for r in rows
        ]


def _held_advisory_keys(connection: Connection) -> set[int]:
    # A bigint advisory key shows in pg_locks as classid (high half) and objid (low half).
    rows = connection.execute(
        text(
            "SELECT classid::bigint, objid::bigint FROM pg_locks WHERE locktype = 'advisory' "
            "AND objsubid = 1 AND granted AND database = "
            "(SELECT oid FROM pg_database WHERE datname = current_database())"
        )
    ).all()
    return {(int(high) << 32) | int(low) for high, low in rows}


def _is_running(place_text: str) -> bool:
    try:
        place = json.loads(place_text)
        pid = int(place["pid"])
    except (ValueError, KeyError, TypeError):
        return False
    if place.get("host") != _HOST:
        return True  # another machine's process: SQLite cannot tell; never reap it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
