"""Deployments in the store: create, change, read; and the state changes the deployer makes.

Creating and changing a deployment are audited and leave a deployment event. What dgxmm runs
(backend, command, port, environment, base URL, GPUs) changes only while the deployment is
stopped or failed; its name, model, memory, priority, zone, start-up and sleep timeouts change
any time and count from the next action; its sleep level changes while it is not asleep.
A model name picks one deployment: an alias taken by another deployment (as its model or an
alias), or a model another deployment has as an alias, is a ``Conflict`` naming the name.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from enum import Enum
from typing import Any, Final

from sqlalchemy import Connection, Engine, bindparam, insert, select, text, update

from dgxmm.clock import Clock
from dgxmm.errors import Conflict, DefinitionError, NotFound
from dgxmm.fleet.backends.protocol import BackendKind
from dgxmm.fleet.deployments.audit import Audit, AuditAction, AuditSubject
from dgxmm.fleet.deployments.definition import (
    IDLE_FIELDS,
    RUN_FIELDS,
    check_backend,
    check_definition,
    columns_of,
    current_keys,
)
from dgxmm.fleet.deployments.deployment import Deployment, DeploymentState, Placement
from dgxmm.fleet.deployments.events import EventAction, EventOutcome, Events
from dgxmm.fleet.deployments.tables import deployments
from dgxmm.fleet.placement.inventory import GpuInventory
from dgxmm.store import Dialect, reading, writing

__all__ = ["KEEP", "DeploymentRepo", "Keep"]

_LIST = select(deployments).order_by(deployments.c.name)


class Keep(Enum):
    """A typed "leave it as it is", for a field that may also be set to None."""

    KEEP = "keep"


KEEP: Final = Keep.KEEP
_AT_REST = (DeploymentState.STOPPED, DeploymentState.FAILED)
_RAY_FIELDS = ("ray_address", "ray_node", "num_gpus")
# Arbitrary, fixed: the PostgreSQL advisory lock held while a write checks the names taken.
_NAMES_LOCK = 0x64677878_6D6D0003 & 0x7FFFFFFFFFFFFFFF


class DeploymentRepo:
    """The ``deployments`` table, typed."""

    def __init__(
        self, engine: Engine, *, clock: Clock, inventory: GpuInventory, events: Events, audit: Audit
    ) -> None:
        self._engine = engine
        self._clock = clock
        self._inventory = inventory
        self._events = events
        self._audit = audit
        # The deployments the last ``list`` read, by their row's values: a row read again
        # unchanged gives the same (frozen) deployment instead of being parsed again.
        self._listed: dict[tuple[Any, ...], Deployment] = {}

    @property
    def engine(self) -> Engine:
        """Return the store's engine, for a caller that writes state in its transaction."""
        return self._engine

    # -- reading ------------------------------------------------------------------------------

    def get(self, deployment_id: int, *, connection: Connection | None = None) -> Deployment:
        """Return one deployment (``NotFound``)."""
        query = select(deployments).where(deployments.c.id == deployment_id)
        if connection is not None:
            row = connection.execute(query).first()
        else:
            with reading(self._engine) as owned:
                row = owned.execute(query).first()
        if row is None:
            raise NotFound("deployment", deployment_id)
        return Deployment.from_row(row)

    def exists(self, deployment_id: int, *, connection: Connection | None = None) -> bool:
        """Tell whether the deployment exists (inside ``connection``'s transaction if given)."""
        query = select(deployments.c.id).where(deployments.c.id == deployment_id)
        if connection is not None:
            return connection.execute(query).first() is not None
        with reading(self._engine) as owned:
            return owned.execute(query).first() is not None

    def by_name(self, name: str) -> Deployment:
        """Return the deployment with this name (``NotFound``)."""
        with reading(self._engine) as connection:
            row = connection.execute(select(deployments).where(deployments.c.name == name)).first()
        if row is None:
            raise NotFound("deployment", name)
        return Deployment.from_row(row)

    def list(self) -> builtins.list[Deployment]:
        """Return every deployment, by name."""
        with reading(self._engine) as connection:
            rows = connection.execute(_LIST).all()
        # The idle pulse lists every deployment each second, and the pages, the runner and the
        # metrics pass do too: at 1,000 deployments, parsing each row again (JSON columns,
        # enums, a frozen dataclass of forty fields) was most of the Deployments page's time
        # (issue 28). Only the rows that changed since the last list are parsed.
        before, listed = self._listed, {}
        for row in rows:
            values = tuple(row)
            listed[values] = before.get(values) or Deployment.from_row(row)
        self._listed = listed
        return builtins.list(listed.values())

    def names(self) -> dict[int, str]:
        """Return every deployment's name by its id (one narrow query)."""
        with reading(self._engine) as connection:
            rows = connection.execute(select(deployments.c.id, deployments.c.name))
            return {int(row.id): str(row.name) for row in rows}

    # -- definitions --------------------------------------------------------------------------

    def create(self, *, actor: str, **keys: Any) -> Deployment:
        """Create a stopped deployment; ``DefinitionError`` names a field it refuses."""
        values = check_definition(keys, self._inventory)
        now = self._clock.now_us()
        with writing(self._engine) as connection:
            self._refuse_taken(connection, values, None)
            inserted = connection.execute(
                insert(deployments).values(
                    **values,
                    state=DeploymentState.STOPPED.value,
                    state_since=now,
                    created_at=now,
                    updated_at=now,
                )
            ).inserted_primary_key
            assert inserted is not None
            created = self.get(int(inserted[0]), connection=connection)
            self._events.record(
                created.id,
                EventAction.CREATE,
                actor=actor,
                outcome=EventOutcome.DONE,
                connection=connection,
            )
            self._audit.record(
                actor=actor,
                action=AuditAction.DEPLOYMENT_CREATE,
                subject=AuditSubject.DEPLOYMENT,
                subject_id=created.id,
                detail={"after": created.to_json()},
                connection=connection,
            )
            return created

    def update(
        self,
        deployment_id: int,
        actor: str,
        *,
        connection: Connection | None = None,
        **keys: Any,
    ) -> Deployment:
        """Change some fields; ``Conflict`` for what it runs while it is not at rest.

        Inside ``connection``'s transaction when one is given (accepting a proposal sets the
        wake lead beside the schedules it creates).
        """
        if connection is None:
            with writing(self._engine) as owned:
                return self._update(owned, deployment_id, actor, keys)
        return self._update(connection, deployment_id, actor, keys)

    def _update(
        self, connection: Connection, deployment_id: int, actor: str, keys: dict[str, Any]
    ) -> Deployment:
        before = self.get(deployment_id, connection=connection)
        current = current_keys(before)
        merged = {**current, **keys}
        if "backend" in keys and check_backend(keys["backend"]) is not before.backend:
            # A new backend drops the other backend's fields unless they were given.
            for field in ("command", "port", "environment", "base_url", *_RAY_FIELDS):
                if field not in keys:
                    merged[field] = None
            if check_backend(keys["backend"]) is BackendKind.RAY and "gpus" not in keys:
                merged["gpus"] = []  # Ray gives it GPUs
        values = check_definition(merged, self._inventory)
        old = columns_of(before)
        changed = sorted(field for field in values if values[field] != old[field])
        if not changed:
            return before
        running = [field for field in changed if field in RUN_FIELDS]
        if running and before.state not in _AT_REST:
            raise Conflict(
                f"deployment {before.name!r} is {before.state.value}: stop it before "
                f"changing {', '.join(running)}"
            )
        if "sleep_level" in changed and before.state is DeploymentState.SLEEPING:
            # Its wake must match the sleep it is in: a level-2 sleeper needs its
            # weights reloaded, which a level-1 wake does not do.
            raise Conflict(
                f"deployment {before.name!r} sleeps at level {before.sleep_level}: wake "
                "it before changing sleep_level"
            )
        self._refuse_taken(connection, values, deployment_id)
        written = {field: values[field] for field in changed}
        if IDLE_FIELDS & set(changed):
            written["idle_paused"] = None  # a person changed the policy: it acts again
        connection.execute(
            update(deployments)
            .where(deployments.c.id == deployment_id)
            .values(**written, updated_at=self._now())
        )
        after = self.get(deployment_id, connection=connection)
        self._events.record(
            deployment_id,
            EventAction.UPDATE,
            actor=actor,
            outcome=EventOutcome.DONE,
            detail=f"changed {', '.join(changed)}",
            connection=connection,
        )
        self._audit.record(
            actor=actor,
            action=AuditAction.DEPLOYMENT_UPDATE,
            subject=AuditSubject.DEPLOYMENT,
            subject_id=deployment_id,
            detail={"changed": changed, "before": before.to_json(), "after": after.to_json()},
            connection=connection,
        )
        return after

    def _refuse_taken(
        self, connection: Connection, values: dict[str, Any], deployment_id: int | None
    ) -> None:
        """Refuse a name, a port or a model name another deployment has (nothing written).

        A model name (a model or an alias) picks one deployment: an alias may not be another
        deployment's model or alias, nor a model another's alias. (Two deployments of one
        model stay allowed: the proxy prefers the awake one.)
        """
        if Dialect(connection.dialect.name) is Dialect.POSTGRESQL:
            # Two writers checking at once would each see the other's names free: serialize
            # the check (SQLite's write lock does so already).
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _NAMES_LOCK})
        c = deployments.c
        others = select(c.id, c.name, c.port, c.model, c.aliases)
        if deployment_id is not None:
            others = others.where(c.id != deployment_id)
        aliases: builtins.list[str] = json.loads(values["aliases"])
        for row in connection.execute(others):
            if row.name == values["name"]:
                raise Conflict(f"a deployment named {values['name']!r} exists already")
            if values["port"] is not None and row.port == values["port"]:
                raise DefinitionError(
                    "port", f"{values['port']} is the port of deployment {row.name!r}"
                )
            theirs = json.loads(row.aliases)
            if values["model"] in theirs:
                raise Conflict(
                    f"{values['model']!r} is an alias of deployment {row.name!r}", field="model"
                )
            for alias in aliases:
                if alias == row.model:
                    raise Conflict(
                        f"{alias!r} is the model of deployment {row.name!r}", field="aliases"
                    )
                if alias in theirs:
                    raise Conflict(
                        f"{alias!r} is an alias of deployment {row.name!r}", field="aliases"
                    )

    # -- state, for the deployer and the metrics ----------------------------------------------

    def set_state(
        self,
        connection: Connection,
        deployment_id: int,
        state: DeploymentState,
        *,
        error: str | Keep | None = KEEP,
        asleep_level: int | None = None,
    ) -> Deployment:
        """Move a deployment to ``state`` (now); ``error`` sets or clears ``last_error``.

        ``asleep_level``: the level a sleep left it at (its configured one when not given);
        any other state clears it.
        """
        values: dict[str, Any] = {"state": state.value, "state_since": self._now()}
        if state is DeploymentState.SLEEPING:
            if asleep_level is not None:
                values["asleep_level"] = asleep_level
        else:
            values["asleep_level"] = None
        if error is not KEEP:
            values["last_error"] = error
        if state in _AT_REST:
            values["placement"] = None  # no actor any more: a ray deployment is nowhere
        connection.execute(
            update(deployments).where(deployments.c.id == deployment_id).values(**values)
        )
        if state in _AT_REST:
            self._free_ray_gpus(connection, deployment_id)
        return self.get(deployment_id, connection=connection)

    def set_idle_paused(self, connection: Connection, deployment_id: int, reason: str) -> None:
        """Pause a deployment's idle policy, saying why (an edit of its idle fields lifts it)."""
        connection.execute(
            update(deployments).where(deployments.c.id == deployment_id).values(idle_paused=reason)
        )

    def set_placement(
        self,
        connection: Connection,
        deployment_id: int,
        placement: Placement | None,
        gpus: Sequence[int] = (),
    ) -> Deployment:
        """Record where a ray deployment's actor runs and the GPUs Ray gave it (or clear it)."""
        connection.execute(
            update(deployments)
            .where(deployments.c.id == deployment_id)
            .values(
                placement=json.dumps(placement.to_json()) if placement is not None else None,
                gpus=json.dumps(list(gpus)),
            )
        )
        return self.get(deployment_id, connection=connection)

    def _free_ray_gpus(self, connection: Connection, deployment_id: int) -> None:
        connection.execute(
            update(deployments)
            .where(deployments.c.id == deployment_id)
            .where(deployments.c.backend == BackendKind.RAY.value)
            .values(gpus="[]")
        )

    def note_requests(self, connection: Connection, seen: dict[int, int]) -> None:
        """Move each deployment's ``last_request_at`` forward to its instant (never back)."""
        if not seen:
            return
        column = deployments.c.last_request_at
        connection.execute(
            update(deployments)
            .where(deployments.c.id == bindparam("b_id"))
            .where(column.is_(None) | (column < bindparam("b_at")))
            .values(last_request_at=bindparam("b_at")),
            [{"b_id": deployment_id, "b_at": at_us} for deployment_id, at_us in seen.items()],
        )

    def _now(self) -> int:
        return self._clock.now_us()
