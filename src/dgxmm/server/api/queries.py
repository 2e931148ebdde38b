"""Saved queries: list, define, drop, and run one that only reads."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from dgxmm.errors import LimitExceeded, StoreError
from dgxmm.jobs import Channel
from dgxmm.server.edge.bodies import DefineQuery, NameBody, RunQuery
from dgxmm.server.edge.deps import Admin, HostDep, Viewer
from dgxmm.server.edge.openapi import answers

__all__ = ["router"]

router = APIRouter(prefix="/api/queries", tags=["queries"])


@router.get("")
def list_queries(host: HostDep, _: Viewer) -> dict[str, Any]:
    """Every saved query, by name."""
    return {"queries": [query.to_json() for query in host.store.queries()]}


@router.post("/define", responses=answers(400, 409))
def define_query(body: DefineQuery, host: HostDep, who: Admin) -> dict[str, Any]:
    """Define or replace a saved query; a refused one answers 400 naming the field."""
    query = host.store.define_query(
        body.name, body.params, body.body, body.description, actor=who.actor
    )
    host.sync()  # a job using it may now write more: its runs are refused until redefined
    return query.to_json()


@router.post("/drop", responses=answers(404, 409))
def drop_query(body: NameBody, host: HostDep, who: Admin) -> dict[str, Any]:
    """Remove a saved query; 409 naming the jobs that still use it."""
    host.store.drop_query(body.name, actor=who.actor)
    return {"dropped": body.name}


@router.post("/run", responses=answers(400, 404, 409))
def run_query(body: RunQuery, host: HostDep, who: Admin) -> dict[str, Any]:
    """Run a saved query that only reads, now; counted under its channel (``api``, ``cli``).

    A query that ran and failed (the database refused it, a limit stopped it) answers 200
    with ``outcome: failed`` and the error, as ``/api/jobs/run`` does; a refused one 400.
    """
    channel = Channel(body.channel)
    try:
        detail = host.store.run_query(body.name, body.args, channel=channel, actor=who.actor)
    except (StoreError, LimitExceeded) as failed:  # the query ran and failed, as a job's run
        return {"name": body.name, "outcome": "failed", "detail": None, "error": str(failed)}
    return {"name": body.name, "outcome": "succeeded", "detail": detail, "error": None}
