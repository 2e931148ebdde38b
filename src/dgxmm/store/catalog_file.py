"""The catalog file: saved queries and user jobs as one JSON document, to export and import.

::

    {"format": 1, "kind": "dgxmm-catalog", "catalog_version": 12, "exported_at_us": ...,
     "queries": [{"name", "params", "body", "description"}, ...],
     "jobs": [<each job's definition exactly as written>, ...]}

Effects are not in the file: they are the rights of whoever defined a job here, so an import
asks the importer's authorizer again. An import is one catalog change (one version, a journal
row per thing changed) and all or nothing: the first refused entry raises a
``DefinitionError`` whose field names it (``jobs[2].args``) and nothing changes. A job this
version cannot read (written by a newer dgxmm) is imported as written and not served. With
``replace=True`` the catalog becomes exactly the file: queries and jobs missing from it are
dropped.
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
from dgxmm.store.catalog import Catalog
from dgxmm.store.database import CHANGE_BUSY_MS, reading, writing
from dgxmm.store.effects import Authorizer
from dgxmm.store.files import write_atomic
from dgxmm.store.journal import current_version, next_version

__all__ = ["ImportResult", "export_catalog", "import_catalog"]

_FORMAT = 1
_KIND = "dgxmm-catalog"


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportResult:
    """What an import did."""

    version: int
    queries: int  # defined or replaced
    jobs: int
    dropped: int  # removed because the file does not hold them (replace=True)


def export_catalog(
    catalog: Catalog, engine: Engine, *, path: Path | None, now_us: int
) -> dict[str, Any]:
    """Return the catalog as a document; write it to ``path`` (atomically) when given."""
    with reading(engine) as connection:
        version = current_version(connection)
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
    if not isinstance(queries, list) or not isinstance(jobs, list):
        raise DefinitionError("catalog", "queries and jobs must be lists")
    query_names = {q.get("name") for q in queries if isinstance(q, Mapping)}
    job_names = {j.get("name") for j in jobs if isinstance(j, Mapping)}
    dropped = 0
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
        for index, entry in enumerate(jobs):
            with _entry(f"jobs[{index}]"):
                catalog.put_job(
                    connection, version, entry, actor=actor, authorizer=authorizer, lenient=True
                )
        if replace:
            for query in catalog.queries_in(connection):
                if query not in query_names:
                    catalog.remove_query(connection, version, query, actor)
                    dropped += 1
    return ImportResult(version=version, queries=len(queries), jobs=len(jobs), dropped=dropped)


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
    if document.get("format") != _FORMAT:
        raise DefinitionError(
            "catalog", f"format {document.get('format')!r}: this version reads format {_FORMAT}"
        )
    return document


@contextmanager
def _entry(where: str) -> Iterator[None]:
    """Name the entry in a refused definition's field: ``jobs[2].args``."""
    try:
        yield
    except DefinitionError as error:
        field = f"{where}.{error.field}" if error.field else where
        raise DefinitionError(field, error.message) from error
