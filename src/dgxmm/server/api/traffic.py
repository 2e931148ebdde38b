"""Traffic profiles over HTTP: a deployment's week (viewers), rebuilding profiles (admins).

The service is the app's ``ProposalService`` (its ``profiles`` builds the profiles).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from dgxmm.server.edge.bodies import Body
from dgxmm.server.edge.deps import MAX_ID, Admin, PathId, ProposalsDep, Viewer
from dgxmm.server.edge.openapi import answers

__all__ = ["router"]

router = APIRouter(tags=["traffic"])


class Rebuild(Body):
    """Rebuild one deployment's profile (or all), and then make proposals if asked."""

    deployment_id: int | None = Field(default=None, ge=1, le=MAX_ID)
    propose: bool = False


@router.get("/api/deployments/{deployment_id}/traffic", responses=answers(404))
def get_traffic(deployment_id: PathId, proposals: ProposalsDep, _: Viewer) -> dict[str, Any]:
    """A deployment's traffic profile: 168 local hours of the week (none before a build)."""
    return proposals.profiles.profile(deployment_id).to_json()


@router.post("/api/traffic/rebuild", responses=answers(400, 404))
def rebuild(body: Rebuild, proposals: ProposalsDep, _: Admin) -> dict[str, Any]:
    """Rebuild profiles now (from the last 30 days of rollups); then propose, if asked."""
    rebuilt = proposals.profiles.rebuild(body.deployment_id)
    answer: dict[str, Any] = {"rebuilt": rebuilt}
    if body.propose:
        answer["proposals"] = proposals.propose(body.deployment_id).to_json()
    return answer
