"""Rollback: the catalog's definitions put back as they were at an earlier version.

What the catalog held at version V is read from the journal: each query's and job's state is
the ``after`` of its last row at or before V (None: it did not exist). A rollback compares
that with the catalog now and makes the difference **one** catalog change, forward: a new
version whose journal starts with a ``catalog`` row (``rollback``, before: the version it
left, after: the version it went back to), then a row per thing changed (``define``,
``replace``, ``drop``). The journal is never rewritten, so a rollback can itself be rolled
back. All or nothing: one transaction.

- Jobs and queries are compared by their definitions (a job's effects are not compared:
  they are the rights of whoever defined it).
- What a rollback replaces or removes goes to the attic, saying so.
- Every job it brings back (defined again or replaced) has its effects asked again of the
  authorizer, for the actor rolling back; one refused comes back switched off with the
  reason (``revival.bring_back_job``). A query it brings back passes every check of a
  definition; one refused (say, its table has been protected since) refuses the rollback.
- **Settings are not rolled back**: they are switches of the instance (``schedules.paused_all``),
  not definitions, and putting one back would silently pause or resume the schedules.
- The attic is not rolled back either: removing from it is for good.
- ``dry_run`` does the whole rollback in its transaction and rolls the transaction back, so
  a preview lists exactly what the rollback would then do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine

from dgxmm.errors import InvalidInput
from dgxmm.store.catalog.attic import keep
from dgxmm.store.catalog.catalog import Catalog
from dgxmm.store.catalog.effects import Authorizer
from dgxmm.store.catalog.journal import (
    Change,
    Subject,
    current_version,
    next_version,
    read_journal,
    write_entry,
)
from dgxmm.store.catalog.records import job_json, query_json
from dgxmm.store.catalog.revival import bring_back_job, bring_back_query
from dgxmm.store.database import CHANGE_BUSY_MS, writing

__all__ = ["RollbackResult", "RollbackStep", "catalog_at", "roll_back"]

_Key = tuple[Subject, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class RollbackStep:
    """One thing a rollback changes."""

    kind: Subject  # QUERY or JOB
    name: str
    change: Change  # DEFINE (it comes back), REPLACE, DROP (to the attic)
    switched_off: str | None = None  # why a job it brings back is off

    def to_json(self) -> dict[str, Any]:
        """Return the step as plain JSON values."""
        return {
            "kind": self.kind.value,
            "name": self.name,
            "change": self.change.value,
            "switched_off": self.switched_off,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class RollbackResult:
    """What a rollback did (or, with ``dry_run``, would do)."""

    to_version: int
    from_version: int
    version: int | None  # the new catalog version; None when nothing had to change
    steps: tuple[RollbackStep, ...]
    dry_run: bool

    def to_json(self) -> dict[str, Any]:
        """Return the result as plain JSON values."""
        return {
            "to_version": self.to_version,
            "from_version": self.from_version,
            "version": self.version,
            "dry_run": self.dry_run,
            "steps": [step.to_json() for step in self.steps],
        }


class _Discard(Exception):  # not an error: how a dry run rolls its transaction back
    def __init__(self, result: RollbackResult) -> None:
        super().__init__("dry run")
        self.result = result


def roll_back(
    catalog: Catalog,
    engine: Engine,
    *,
    to_version: Any,
    actor: str | None,
    authorizer: Authorizer | None,
    at_us: int,
    dry_run: bool,
) -> RollbackResult:
    """Put the catalog's definitions back as they were at ``to_version``, as one change."""
    try:
        with writing(engine, busy_ms=CHANGE_BUSY_MS) as connection:
            result = _roll_back(
                catalog,
                connection,
                to_version=to_version,
                actor=actor,
                authorizer=authorizer,
                at_us=at_us,
                dry_run=dry_run,
            )
            if dry_run:
                raise _Discard(result)
            return result
    except _Discard as discarded:
        return discarded.result


def catalog_at(connection: Connection, version: int) -> dict[_Key, dict[str, Any]]:
    """Return every query and job as the journal has them at ``version`` (absent: left out)."""
    state: dict[_Key, dict[str, Any] | None] = {}
    for entry in read_journal(connection):
        if entry.version > version:
            break
        # REMOVE rows are about the attic only; settings and catalog rows hold no definition.
        if entry.subject in (Subject.QUERY, Subject.JOB) and entry.change is not Change.REMOVE:
            state[(entry.subject, entry.name)] = entry.after
    return {key: value for key, value in state.items() if value is not None}


def _roll_back(
    catalog: Catalog,
    connection: Connection,
    *,
    to_version: Any,
    actor: str | None,
    authorizer: Authorizer | None,
    at_us: int,
    dry_run: bool,
) -> RollbackResult:
    now = current_version(connection)
    if not isinstance(to_version, int) or isinstance(to_version, bool):
        raise InvalidInput("version", f"expected a whole number, got {to_version!r}")
    if not 0 <= to_version <= now:
        raise InvalidInput("version", f"{to_version} is out of range 0-{now} (the catalog's)")
    target = catalog_at(connection, to_version)
    live = _catalog_now(catalog, connection)
    plan = _plan(target, live)
    if not plan:
        return RollbackResult(
            to_version=to_version, from_version=now, version=None, steps=(), dry_run=dry_run
        )
    version = next_version(connection)
    write_entry(
        connection,
        version=version,
        at_us=at_us,
        actor=actor,
        subject=Subject.CATALOG,
        name="catalog",
        change=Change.ROLLBACK,
        before={"version": now},
        after={"version": to_version},
    )
    why = f"taken out by a rollback to version {to_version}"
    steps: list[RollbackStep] = []
    for step in plan:  # in the order _plan gives: jobs out, queries in, jobs in, queries out
        kind, name = step.kind, step.name
        if step.change is Change.DROP:
            remove = catalog.remove_query if kind is Subject.QUERY else catalog.remove_job
            remove(connection, version, name, actor, why=why)
            steps.append(step)
            continue
        if step.change is Change.REPLACE:
            _keep_replaced(
                catalog, connection, step, version=version, actor=actor, at_us=at_us, why=why
            )
        if kind is Subject.QUERY:
            bring_back_query(
                catalog,
                connection,
                version,
                target[(kind, name)],
                name,
                actor=actor,
                change=step.change,
            )
            steps.append(step)
        else:
            _, reason = bring_back_job(
                catalog,
                connection,
                version,
                target[(kind, name)],
                name,
                actor=actor,
                authorizer=authorizer,
                change=step.change,
            )
            steps.append(
                RollbackStep(kind=kind, name=name, change=step.change, switched_off=reason)
            )
    return RollbackResult(
        to_version=to_version,
        from_version=now,
        version=version,
        steps=tuple(steps),
        dry_run=dry_run,
    )


def _catalog_now(catalog: Catalog, connection: Connection) -> dict[_Key, dict[str, Any]]:
    live: dict[_Key, dict[str, Any]] = {}
    for name in catalog.queries_in(connection):
        query = catalog.find_query(connection, name)
        assert query is not None
        live[(Subject.QUERY, name)] = query_json(query)
    for name in catalog.jobs_in(connection):
        job = catalog.find_job(connection, name)
        assert job is not None
        live[(Subject.JOB, name)] = job_json(job)
    return live


def _plan(
    target: Mapping[_Key, dict[str, Any]], live: Mapping[_Key, dict[str, Any]]
) -> list[RollbackStep]:
    """Return the steps, in an order every check accepts.

    Jobs leave first (so no query is still in use when it goes), then queries come back (so
    every job that comes back finds its query), then jobs come back, then queries leave.
    """
    changed: dict[_Key, Change] = {}
    for key in sorted(set(target) | set(live), key=lambda k: (k[0].value, k[1])):
        if key not in target:
            changed[key] = Change.DROP
        elif key not in live:
            changed[key] = Change.DEFINE
        elif _definition(key, target[key]) != _definition(key, live[key]):
            changed[key] = Change.REPLACE
    phases = [
        (Subject.JOB, (Change.DROP,)),
        (Subject.QUERY, (Change.DEFINE, Change.REPLACE)),
        (Subject.JOB, (Change.DEFINE, Change.REPLACE)),
        (Subject.QUERY, (Change.DROP,)),
    ]
    return [
        RollbackStep(kind=kind, name=name, change=change)
        for phase_kind, phase_changes in phases
        for (kind, name), change in changed.items()
        if kind is phase_kind and change in phase_changes
    ]


def _definition(key: _Key, state: Mapping[str, Any]) -> Any:
    if key[0] is Subject.JOB:
        return state.get("definition")
    return {k: state.get(k) for k in ("params", "body", "description")}


def _keep_replaced(
    catalog: Catalog,
    connection: Connection,
    step: RollbackStep,
    *,
    version: int,
    actor: str | None,
    at_us: int,
    why: str,
) -> None:
    find = catalog.find_query if step.kind is Subject.QUERY else catalog.find_job
    thing = find(connection, step.name)
    assert thing is not None
    keep(connection, thing, version=version, actor=actor, at_us=at_us, why=why)
