"""The playground's store: saved queries and user jobs in SQLite (Pyodide's ``sqlite3``).

The browser has no files, so the database lives in memory; it holds the catalog (saved queries,
job definitions) and whatever tables the saved queries make. A definition is checked here with
every wrong field listed, as the server's store does (``DefinitionError.errors``); a backup job
is refused, since there is no directory to back up into.

Standard library only, besides ``dgxmm.jobs``: this module is imported inside the browser,
where SQLAlchemy, alembic and psycopg are not loaded.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

from dgxmm.errors import DefinitionError, NotFound
from dgxmm.jobs import CatchUp, CronSchedule, JobLimits, Overlap, RetryPolicy
from dgxmm.jobs.keys import (
    Refusals,
    check_catch_up,
    check_enabled,
    check_name,
    check_overlap,
    check_pause_note,
    check_positive,
    check_retry,
    check_schedule,
    check_time_zone,
)

__all__ = ["NO_FILES", "PARAM_TYPES", "Catalog", "JobSpec", "SavedQuery", "split_statements"]

NO_FILES = "the playground has no files: a backup job cannot be defined here"
PARAM_TYPES: dict[str, type | tuple[type, ...]] = {
    "int": int,
    "float": (int, float),
    "string": str,
    "bool": bool,
}
_ACTIONS = ("query", "checkpoint", "backup")
_KEYS = (
    "name",
    "schedule",
    "action",
    "query",
    "args",
    "path",
    "enabled",
    "timeout_ms",
    "description",
    "time_zone",
    "pause_note",
    "retries",
    "retry_backoff_s",
    "retry_backoff_max_s",
    "catchup_window_s",
    "coalesce",
    "overlap",
)
_TIMEOUT_MS_MAX = 365 * 24 * 3600 * 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class SavedQuery:
    """A named SQL body with typed ``:name`` parameters."""

    name: str
    params: dict[str, str]
    body: str

    def to_json(self) -> dict[str, Any]:
        """Return the query as JSON values."""
        return {"name": self.name, "params": self.params, "body": self.body}


@dataclass(frozen=True, slots=True, kw_only=True)
class JobSpec:
    """A checked user job of the playground."""

    name: str
    schedule: CronSchedule
    action: str
    query: str | None = None
    args: dict[str, object] = field(default_factory=dict)
    enabled: bool = True
    limits: JobLimits = field(default_factory=JobLimits)
    time_zone: ZoneInfo | None = None  # None: the browser's zone
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    catch_up: CatchUp | None = None  # None: the spec's rule
    overlap: Overlap = Overlap.SKIP
    definition: dict[str, Any] = field(default_factory=dict)


def split_statements(body: str) -> list[str]:
    """Split SQL into statements, as SQLite itself reads them (semicolons inside text stay)."""
    statements: list[str] = []
    current = ""
    for piece in body.split(";"):
        current += piece + ";"
        if sqlite3.complete_statement(current):
            if current.strip(" \n\t;"):
                statements.append(current.strip())
            current = ""
    if current.strip(" \n\t;"):
        statements.append(current.strip())
    return statements


class Catalog:
    """Saved queries and job definitions in one in-memory SQLite database."""

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:", isolation_level=None)
        self.db.execute(
            "CREATE TABLE dgxmm_queries (name TEXT PRIMARY KEY, params TEXT, body TEXT)"
        )
        self.db.execute("CREATE TABLE dgxmm_jobs (name TEXT PRIMARY KEY, definition TEXT)")
        self.version = 0  # bumped on every change, so the engine knows to sync its scheduler

    # -- saved queries ------------------------------------------------------------------------

    def define_query(self, name: object, params: object, body: object) -> SavedQuery:
        """Define or replace a saved query; ``DefinitionError`` naming the field."""
        checked_name = check_name(name, kind="saved query")
        if params is None:
            params = {}
        if not isinstance(params, Mapping) or any(
            not isinstance(kind, str) or kind not in PARAM_TYPES for kind in params.values()
        ):
            raise DefinitionError(
                "params", f"expected {{name: type}} with types {', '.join(PARAM_TYPES)}"
            )
        if not isinstance(body, str) or not split_statements(body):
            raise DefinitionError("body", "a saved query needs SQL")
        declared = set(params)
        used = set(re.findall(r"(?<!:):([A-Za-z_]\w*)", body))
        if used - declared:
            raise DefinitionError(
                "params", f"{', '.join(sorted(used - declared))}: used in the SQL, not declared"
            )
        query = SavedQuery(name=checked_name, params=dict(params), body=body)
        self.db.execute(
            "INSERT OR REPLACE INTO dgxmm_queries VALUES (?, ?, ?)",
            (query.name, json.dumps(query.params), query.body),
        )
        self.version += 1
        return query

    def queries(self) -> list[SavedQuery]:
        """Return every saved query, by name."""
        rows = self.db.execute("SELECT name, params, body FROM dgxmm_queries ORDER BY name")
        return [SavedQuery(name=n, params=json.loads(p), body=b) for n, p, b in rows]

    def query(self, name: str) -> SavedQuery | None:
        """Return a saved query, or None."""
        return next((q for q in self.queries() if q.name == name), None)

    # -- jobs ---------------------------------------------------------------------------------

    def define_job(self, keys: object, *, reserved: set[str]) -> JobSpec:
        """Check and keep a job; ``DefinitionError`` lists every wrong field in ``errors``."""
        spec = self.check_job(keys, reserved=reserved)
        self.db.execute(
            "INSERT OR REPLACE INTO dgxmm_jobs VALUES (?, ?)",
            (spec.name, json.dumps(spec.definition)),
        )
        self.version += 1
        return spec

    def drop_job(self, name: str) -> None:
        """Remove a job (``NotFound``)."""
        if self.db.execute("DELETE FROM dgxmm_jobs WHERE name = ?", (name,)).rowcount == 0:
            raise NotFound("job", name)
        self.version += 1

    def jobs(self) -> list[JobSpec]:
        """Return every user job, by name (each definition was checked when it was kept)."""
        rows = self.db.execute("SELECT definition FROM dgxmm_jobs ORDER BY name").fetchall()
        return [self.check_job(json.loads(text), reserved=set()) for (text,) in rows]

    def check_job(self, keys: object, *, reserved: set[str]) -> JobSpec:
        """Read a definition into a ``JobSpec``, or raise naming every wrong field."""
        if not isinstance(keys, Mapping):
            raise DefinitionError("definition", "expected an object of job keys")
        refusals = Refusals()
        checked = refusals.check
        name = checked(lambda: _job_name(keys, reserved))
        action = checked(lambda: _action(keys))
        checked(lambda: _known_keys(keys))
        schedule = checked(lambda: check_schedule(keys))
        enabled = checked(lambda: check_enabled(keys))
        timeout_ms = checked(
            lambda: check_positive(keys, "timeout_ms", _TIMEOUT_MS_MAX, "365 days")
        )
        time_zone = checked(lambda: check_time_zone(keys))
        retry = check_retry(keys, refusals)
        catch_up = check_catch_up(keys, refusals)
        overlap = checked(lambda: check_overlap(keys))
        checked(
            lambda: check_pause_note(
                keys.get("pause_note"), field="pause_note", enabled=enabled is True
            )
        )
        args: dict[str, object] | None = {}
        if action == "query":
            args = checked(lambda: self._query_args(keys))
        refusals.raise_any()
        assert name is not None
        assert action is not None
        assert schedule is not None
        assert enabled is not None
        assert args is not None
        return JobSpec(
            name=name,
            schedule=schedule,
            action=action,
            query=keys.get("query") if action == "query" else None,
            args=args,
            enabled=enabled,
            limits=JobLimits(
                timeout=None if timeout_ms is None else timedelta(milliseconds=timeout_ms)
            ),
            time_zone=time_zone,
            retry=retry or RetryPolicy(),
            catch_up=catch_up,
            overlap=overlap or Overlap.SKIP,
            definition=dict(keys),
        )

    def _query_args(self, keys: Mapping[str, Any]) -> dict[str, object]:
        name = check_name(keys.get("query"), field="query", kind="saved query")
        query = self.query(name)
        if query is None:
            raise DefinitionError("query", f"no saved query named {name!r}")
        return check_args(keys.get("args", {}), query.params)


def check_args(args: object, params: Mapping[str, str]) -> dict[str, object]:
    """Check arguments against a query's parameters (``DefinitionError`` on ``args``)."""
    if not isinstance(args, Mapping):
        raise DefinitionError("args", "expected an object of {parameter: value}")
    missing = sorted(set(params) - set(args))
    if missing:
        raise DefinitionError("args", f"missing {', '.join(missing)} (the query needs it)")
    extra = sorted(set(args) - set(params))
    if extra:
        raise DefinitionError("args", f"{', '.join(extra)}: the query has no such parameter")
    for name, kind in params.items():
        value = args[name]
        wrong_bool = isinstance(value, bool) and kind != "bool"
        if wrong_bool or not isinstance(value, PARAM_TYPES[kind]):
            raise DefinitionError("args", f"{name}: expected {kind}, got {value!r}")
    return dict(args)


def _job_name(keys: Mapping[str, Any], reserved: set[str]) -> str:
    name = check_name(keys.get("name"))
    if name in reserved:
        raise DefinitionError("name", f"{name} is a system job's name")
    return name


def _action(keys: Mapping[str, Any]) -> str:
    action = keys.get("action")
    if action == "backup":
        raise DefinitionError("path", NO_FILES)
    if action not in _ACTIONS:
        raise DefinitionError("action", f"{action!r} is not an action (query, checkpoint)")
    assert isinstance(action, str)
    return action


def _known_keys(keys: Mapping[str, Any]) -> None:
    unknown = [str(key) for key in keys if key not in _KEYS]
    if unknown:
        raise DefinitionError(unknown[0], f"not a job key (keys: {', '.join(_KEYS)})")
