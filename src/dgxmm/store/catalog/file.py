"""The catalog file: saved queries and user jobs as one JSON document, to export and import.

::

    {"format": 2, "kind": "dgxmm-catalog", "catalog_version": 12, "exported_at_us": ...,
     "queries": [{"name", "params", "body", "description"}, ...],
     "jobs": [<each job's definition exactly as written>, ...],
     "attic": [{"kind", "name", "item", "defined_version", "defined_by", "defined_at",
                "dropped_version", "dropped_by", "dropped_at", "why"}, ...]}

Format 2 added the attic; a file of format 1 (no attic) still imports. The attic's entries
are added to this store's attic unless it holds the same entry already (importing a file
twice adds nothing); their versions are those of the store that exported them. An attic
job's effects travel with it as a record only: a restore asks the authorizer again.

Effects are not in the file: they are the rights of whoever defined a job here, so an import
asks the importer's authorizer again. An import is one catalog change (one version, a journal
row per thing changed) and all or nothing: the first refused entry raises a
``DefinitionError`` whose field names it (``jobs[2].args``) and nothing changes. A job this
version cannot read (written by a newer dgxmm) is imported as written and not served. With
``replace=True`` the catalog becomes exactly the file: queries and jobs missing from it are
dropped (into the attic, like every drop).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from dgxmm.errors import DefinitionError, InvalidInput
from dgxmm.store.catalog.attic import add_entry, read_attic
from dgxmm.store.catalog.catalog import Catalog
from dgxmm.store.catalog.effects import Authorizer
from dgxmm.store.catalog.job_writes import JobWrites
from dgxmm.store.catalog.journal import current_version, next_version
from dgxmm.store.database import CHANGE_BUSY_MS, reading, writing
from dgxmm.store.files import write_atomic

__all__ = ["ImportResult", "export_catalog", "import_catalog"]

_FORMAT = 2
_READS = (1, 2)  # format 1: before the attic
_KIND = "dgxmm-catalog"


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportResult:
    """What an import did."""

    version: int
    queries: int  # defined or replaced
    jobs: int
    dropped: int  # removed because the file does not hold them (replace=True)
    attic: int = 0  # attic entries added


def export_catalog(
    catalog: Catalog, engine: Engine, *, path: Path | None, now_us: int
) -> dict[str, Any]:
    """Return the catalog as a document; write it to ``path`` (atomically) when given."""
    with reading(engine) as connection:
        version = current_version(connection)
        attic = read_attic(connection)
    document = {
        "format": _FORMAT,
        "kind": _KIND,
        "catalog_version": version,
        "exported_at_us": now_us,
        "queries": [
            {
                "name": q.name,
                "params": {name: kind.value for name, kind in q.params.items()},
                "body": q.body,
                "description": q.description,
            }
            for q in catalog.queries()
        ],
        "jobs": [job.definition for job in catalog.jobs()],
        "attic": [
            {key: value for key, value in entry.to_json().items() if key != "id"}
            for entry in reversed(attic)  # oldest first, as they were dropped
        ],
    }
    if path is not None:
        text = json.dumps(document, ensure_ascii=False, indent=2) + "\n"
        write_atomic(path, text.encode())
    return document


def import_catalog(
    catalog: Catalog,
    engine: Engine,
    source: Path | Mapping[str, Any],
    *,
    actor: str | None,
    authorizer: Authorizer | None,
    replace: bool,
) -> ImportResult:
    """Import a catalog file or document as one change; all or nothing."""
    document = _read(source)
    queries = document.get("queries", [])
    jobs = document.get("jobs", [])
    attic = document.get("attic", [])
    if not isinstance(queries, list) or not isinstance(jobs, list) or not isinstance(attic, list):
        raise DefinitionError("catalog", "queries, jobs and attic must be lists")
    query_names, job_names = _names(queries), _names(jobs)
    dropped = added = 0
    with writing(engine, busy_ms=CHANGE_BUSY_MS) as connection:
        version = next_version(connection)
        if replace:
            for job in catalog.jobs():
                if job.name not in job_names:
                    catalog.remove_job(connection, version, job.name, actor)
                    dropped += 1
        for index, entry in enumerate(queries):
            with _entry(f"queries[{index}]"):
                if not isinstance(entry, Mapping):
                    raise DefinitionError("", "expected an object")
                catalog.put_query(
                    connection,
                    version,
                    name=entry.get("name"),  # type: ignore[arg-type]
                    params=entry.get("params"),
                    body=entry.get("body"),  # type: ignore[arg-type]
                    description=entry.get("description"),
                    actor=actor,
                )
        writes = JobWrites(found=catalog.found_jobs(connection, job_names))
        for index, entry in enumerate(jobs):
            with _entry(f"jobs[{index}]"):
                catalog.put_job(
                    connection, version, entry, actor=actor, authorizer=authorizer,
                    lenient=True, writes=writes,
                )  # fmt: skip
        writes.flush(connection)
        if replace:
            for query in catalog.queries_in(connection):
                if query not in query_names:
                    catalog.remove_query(connection, version, query, actor)
                    dropped += 1
        for index, entry in enumerate(attic):
            with _entry(f"attic[{index}]"):
                added += add_entry(connection, entry)
    return ImportResult(
        version=version, queries=len(queries), jobs=len(jobs), dropped=dropped, attic=added
    )


def _read(source: Path | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(source, Mapping):
        document = source
    else:
        try:
            document = json.loads(Path(source).read_text())
        except FileNotFoundError:
            raise InvalidInput("path", f"no catalog file at {source}") from None
        except ValueError as error:
            raise DefinitionError("catalog", f"{source} is not JSON: {error}") from None
    if not isinstance(document, Mapping) or document.get("kind") != _KIND:
        raise DefinitionError("catalog", "not a dgxmm catalog file")
    if document.get("format") not in _READS:
        raise DefinitionError(
            "catalog",
            f"format {document.get('format')!r}: this version reads formats 1 and {_FORMAT}",
        )
    return document


def _names(entries: list[Any]) -> set[str]:
    """Return the names the file's entries give, to keep them when replacing.

    An entry named by anything but text (a list, an object) is refused when it is defined,
    naming its field; here it only must not be taken for a name.
    """
    return {
        entry["name"]
        for entry in entries
        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str)
    }


@contextmanager
def _entry(where: str) -> Iterator[None]:
    """Name the entry in a refused definition's field: ``jobs[2].args``."""
    try:
        yield
    except DefinitionError as error:
        field = f"{where}.{error.field}" if error.field else where
        raise DefinitionError(field, error.message) from error
