"""The store page: the database, its recent journal, its operations, rollback and the attic."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.server.api.attic import entry_row
from dgxmm.server.edge.deps import HostDep
from dgxmm.server.lists.jobs import iso
from dgxmm.server.pages.render import render_page

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/store", response_class=HTMLResponse)
def store_page(request: Request, host: HostDep) -> Response:
    """The store and its operations."""
    store = host.store
    version = store.catalog_version()
    return render_page(
        request,
        "store.html",
        store=store,
        version=version,
        journal=[
            {**entry.to_json(), "at": iso(entry.at_us, host)}
            for entry in reversed(store.journal(after_version=max(0, version - 20)))
        ],
        attic=[entry_row(entry, host) for entry in store.attic()],
        # Only a job that still exists has a page to link to.
        live_jobs={job.name for job in host.definitions()},
    )
