"""The catalog's records: a saved query, and a user job as stored."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from dgxmm.store.catalog.bounds import MAX_DEPTH, json_text
from dgxmm.store.catalog.effects import Request, effects_to_json
from dgxmm.store.catalog.params import ParamType

__all__ = [
    "JobChanges",
    "JobDefinition",
    "SavedQuery",
    "definition_text",
    "job_json",
    "query_from_row",
    "query_json",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class SavedQuery:
    """A named, parameterized SQL body."""

    name: str
    params: dict[str, ParamType]
    body: str
    description: str | None
    version: int
    defined_by: str | None
    defined_at: int

    def to_json(self) -> dict[str, Any]:
        """Return the query as plain JSON values."""
        return {
            "name": self.name,
            "params": {name: kind.value for name, kind in self.params.items()},
            "body": self.body,
            "description": self.description,
            "version": self.version,
            "defined_by": self.defined_by,
            "defined_at": self.defined_at,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class JobDefinition:
    """A user job as stored: its definition as written, its effects, and whether it is served."""

    name: str
    definition: dict[str, Any]
    effects: tuple[Request, ...]
    version: int
    defined_by: str | None
    defined_at: int
    reason: str | None  # why this instance does not run it; None when it does

    @property
    def served(self) -> bool:
        """Tell whether this instance schedules the job."""
        return self.reason is None

    @property
    def action(self) -> str | None:
        """The action as written."""
        value = self.definition.get("action")
        return value if isinstance(value, str) else None

    @property
    def schedule(self) -> str | None:
        """The schedule as written."""
        value = self.definition.get("schedule")
        return value if isinstance(value, str) else None

    @property
    def enabled(self) -> bool:
        """Whether the definition is switched on."""
        return self.definition.get("enabled", True) is not False

    @property
    def pause_note(self) -> str | None:
        """Why it is switched off, as written when it was; None without a note or while on."""
        note = self.definition.get("pause_note")
        return note if isinstance(note, str) and not self.enabled else None

    def to_json(self) -> dict[str, Any]:
        """Return the job as plain JSON values."""
        return {
            "name": self.name,
            "definition": self.definition,
            "effects": effects_to_json(self.effects),
            "served": self.served,
            "reason": self.reason,
            "version": self.version,
            "defined_by": self.defined_by,
            "defined_at": self.defined_at,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class JobChanges:
    """The user jobs changed since a catalog version, read in one snapshot.

    ``names``: the jobs changed, dropped ones too; None when the whole catalog is to be read
    again (something else changed, or many jobs did). ``jobs``: those of ``names`` that
    exist, by name.
    """

    version: int  # the catalog's version in that snapshot
    names: set[str] | None
    jobs: list[JobDefinition]


def query_from_row(row: Any) -> SavedQuery:
    return SavedQuery(
        name=row.name,
        params={name: ParamType(kind) for name, kind in json.loads(row.params).items()},
        body=row.body,
        description=row.description,
        version=row.version,
        defined_by=row.defined_by,
        defined_at=row.defined_at,
    )


def query_json(query: SavedQuery) -> dict[str, Any]:
    return {
        "params": {name: kind.value for name, kind in query.params.items()},
        "body": query.body,
        "description": query.description,
    }


def job_json(job: JobDefinition) -> dict[str, Any]:
    return {"definition": job.definition, "effects": effects_to_json(job.effects)}


def definition_text(definition: dict[str, Any]) -> str:
    """Return a definition as JSON text; refuse a value out of the catalog's bounds, naming its key.

    Each value is checked alone first, so the refusal names the key (``jobs[2].future``).
    """
    for key, value in definition.items():
        json_text(value, str(key))
    return json_text(definition, "definition", depth=MAX_DEPTH + 1)
