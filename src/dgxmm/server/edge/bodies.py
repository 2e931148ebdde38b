"""Request bodies of the API, checked by pydantic at the edge (wrong types answer 422).

Strict: a number in quotes or a string for a boolean is a wrong type, and unknown fields are
refused, each naming the field. Enum fields take their values (``Field(strict=False)``: in
strict mode pydantic wants an enum instance, which JSON cannot carry); ``/openapi.json``
lists the values. What the engine checks (a cron text, a known action, the
arguments against the query's parameters) answers 400 with the field.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from dgxmm.store import JobAction, RunOn, json_depth

__all__ = [
    "AtticBody",
    "BackupBody",
    "Body",
    "DefineJob",
    "DefineQuery",
    "EnableJob",
    "NameBody",
    "RestoreBody",
    "RollbackBody",
    "RunQuery",
    "ScheduleJob",
]


# How deep a body's JSON may nest. The catalog keeps no value deeper than 32 levels
# (store/catalog/bounds.py); past a few hundred, pydantic's own serializer raises
# (``model_dump``: "Maximum serialization depth exceeded"), which answered 500.
MAX_BODY_DEPTH = 64


class Body(BaseModel):
    """The base of every request body: strict types, unknown fields refused, bounded depth."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _bounded_depth(cls, data: Any) -> Any:
        if json_depth(data, MAX_BODY_DEPTH) > MAX_BODY_DEPTH:
            raise ValueError(f"the body nests deeper than {MAX_BODY_DEPTH} levels")
        return data


class NameBody(Body):
    """A body naming one thing."""

    name: str = Field(min_length=1, max_length=200)


class DefineJob(Body):
    """The keys of ``define_job``, as the spec lists them."""

    name: str = Field(min_length=1, max_length=200)
    schedule: str = Field(max_length=200)
    action: JobAction = Field(strict=False)  # an enum's value is a JSON string
    query: str | None = Field(default=None, max_length=200)
    args: dict[str, Any] | None = None
    path: str | None = Field(default=None, max_length=4096)
    enabled: bool | None = None
    timeout_ms: int | None = None
    memory_limit: int | None = None
    run_on: RunOn | None = Field(default=None, strict=False)
    description: str | None = Field(default=None, max_length=10_000)
    time_zone: str | None = Field(default=None, max_length=100)  # IANA; None: the server's
    pause_note: str | None = Field(default=None, max_length=10_000)  # with enabled: false
    # Checked by the engine (400 naming the field): counts, seconds, retries need a wait.
    retries: int | None = None
    retry_backoff_s: int | float | None = None
    retry_backoff_max_s: int | float | None = None
    # Checked by the engine too (400 naming the field): a positive window, a known choice.
    catchup_window_s: int | float | None = None
    coalesce: str | None = Field(default=None, max_length=40)
    overlap: str | None = Field(default=None, max_length=40)


class EnableJob(Body):
    """``{name, enabled, note?}``: ``note``, why it is switched off (checked by the engine)."""

    name: str = Field(min_length=1, max_length=200)
    enabled: bool
    note: str | None = Field(default=None, max_length=10_000)


class ScheduleJob(Body):
    """``{name, schedule}``: a system job's schedule, null for the built-in one."""

    name: str = Field(min_length=1, max_length=200)
    schedule: str | None = Field(max_length=200)


class DefineQuery(Body):
    """A saved query: typed parameters and an SQL body with ``:name`` parameters."""

    name: str = Field(min_length=1, max_length=200)
    params: dict[str, str] = Field(default_factory=dict)
    body: str = Field(min_length=1, max_length=100_000)
    description: str | None = Field(default=None, max_length=10_000)


class RunQuery(Body):
    """``{name, args?, channel?}``: a saved query that only reads, to run now.

    ``channel`` is where the statistics count it: ``api`` unless the CLI says it is the CLI.
    """

    name: str = Field(min_length=1, max_length=200)
    args: dict[str, Any] | None = None
    channel: Literal["api", "cli"] = "api"


class BackupBody(Body):
    """``{directory}``: where the backup goes (relative to the data directory if not absolute)."""

    directory: str = Field(min_length=1, max_length=4096)


class RestoreBody(Body):
    """``{directory, target}``: the backup to read and the new database to build."""

    directory: str = Field(min_length=1, max_length=4096)
    target: str = Field(min_length=1, max_length=4096)


class AtticBody(Body):
    """``{kind, name, id?}``: an entry of the attic, the most recently dropped unless ``id``."""

    kind: Literal["query", "job"]
    name: str = Field(min_length=1, max_length=200)
    id: int | None = Field(default=None, ge=1, le=2**63 - 1)


class RollbackBody(Body):
    """``{version}``: the catalog version to put the definitions back as they were at."""

    version: int = Field(ge=0, le=2**63 - 1)
