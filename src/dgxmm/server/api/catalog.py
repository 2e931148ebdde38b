"""The catalog file over HTTP: export the saved queries and jobs as one document, import one.

``dgxmm catalog export`` and ``import`` use these; the document is the file's (see
``store/catalog/file.py``), so a file written offline imports here and the other way round.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi import Body as Document

from dgxmm.server.edge.deps import Admin, HostDep, Viewer
from dgxmm.server.edge.openapi import answers

__all__ = ["router"]

router = APIRouter(prefix="/api/catalog", tags=["catalog"])


@router.get("")
def export(host: HostDep, _: Viewer) -> dict[str, Any]:
    """The catalog as a catalog file's document."""
    return host.store.export_catalog()


@router.post("/import", responses=answers(400, 409))
def import_(
    document: Annotated[dict[str, Any], Document()],
    host: HostDep,
    who: Admin,
    replace: Annotated[bool, Query()] = False,
) -> dict[str, Any]:
    """Import a catalog document, all or nothing; ``?replace=true`` drops what it does not hold."""
    result = host.store.import_catalog(document, actor=who.actor, replace=replace)
    host.sync()
    return {
        "version": result.version,
        "queries": result.queries,
        "jobs": result.jobs,
        "dropped": result.dropped,
        "attic": result.attic,
    }
