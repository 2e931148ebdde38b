"""Traffic profiles and schedule proposals over HTTP.

Viewers read a deployment's profile and proposals and the decision model's settings; admins
rebuild profiles, accept and dismiss proposals, and change the settings. The service is
``app.state.proposals`` (a ``ProposalService``; its ``profiles`` builds the profiles).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field

from dgxmm.decider.proposal_rows import ProposalStatus
from dgxmm.decider.proposals import ProposalService
from dgxmm.server.deps import MAX_ID, Admin, PathId, Viewer

__all__ = ["router"]

router = APIRouter(tags=["proposals"])


def get_proposals(request: Request) -> ProposalService:
    """Return the app's proposal service."""
    service: ProposalService = request.app.state.proposals
    return service


Proposals = Annotated[ProposalService, Depends(get_proposals)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Rebuild(_Body):
    """Rebuild one deployment's profile (or all), and then make proposals if asked."""

    deployment_id: int | None = Field(default=None, ge=1, le=MAX_ID)
    propose: bool = False


class EndpointBody(_Body):
    """The openai model's endpoint: a base URL or a managed deployment's name."""

    base_url: str | None = Field(default=None, max_length=500)
    deployment: str | None = Field(default=None, max_length=100)
    model: str | None = Field(default=None, max_length=200)
    timeout_s: float | None = None


class ModelBody(_Body):
    """The decision model's settings; a key left out takes its default."""

    enabled: bool | None = None
    model: str | None = Field(default=None, max_length=40)
    threshold: float | None = None
    endpoint: EndpointBody | None = None


@router.get("/api/deployments/{deployment_id}/traffic")
def get_traffic(deployment_id: PathId, proposals: Proposals, _: Viewer) -> dict[str, Any]:
    """A deployment's traffic profile: 168 local hours of the week (none before a build)."""
    return proposals.profiles.profile(deployment_id).to_json()


@router.post("/api/traffic/rebuild")
def rebuild(body: Rebuild, proposals: Proposals, _: Admin) -> dict[str, Any]:
    """Rebuild profiles now (from the last 30 days of rollups); then propose, if asked."""
    rebuilt = proposals.profiles.rebuild(body.deployment_id)
    answer: dict[str, Any] = {"rebuilt": rebuilt}
    if body.propose:
        answer["proposals"] = proposals.propose(body.deployment_id).to_json()
    return answer


@router.get("/api/deployments/{deployment_id}/proposals")
def list_proposals(
    deployment_id: PathId, proposals: Proposals, _: Viewer, status: ProposalStatus | None = None
) -> dict[str, Any]:
    """A deployment's proposals, newest first (``?status=open|accepted|dismissed``)."""
    return {"proposals": [p.to_json() for p in proposals.list(deployment_id, status=status)]}


@router.get("/api/proposals/model")
def get_model(proposals: Proposals, _: Viewer) -> dict[str, Any]:
    """The decision model's settings, and whether it can be asked now."""
    readiness = proposals.model_status()
    return {
        "settings": proposals.settings().to_json(),
        "ready": readiness.ready,
        "reason": readiness.reason,
    }


@router.put("/api/proposals/model")
def put_model(body: ModelBody, proposals: Proposals, who: Admin) -> dict[str, Any]:
    """Replace the decision model's settings; a wrong value answers 400 naming the field."""
    value = body.model_dump(exclude_none=True)
    settings = proposals.set_settings(value, actor=who.actor)
    return {"settings": settings.to_json()}


@router.get("/api/proposals/{proposal_id}")
def get_proposal(proposal_id: PathId, proposals: Proposals, _: Viewer) -> dict[str, Any]:
    """One proposal with its evidence."""
    return proposals.get(proposal_id).to_json()


@router.post("/api/proposals/{proposal_id}/accept")
def accept(proposal_id: PathId, proposals: Proposals, who: Admin) -> dict[str, Any]:
    """Create the proposal's sleep and wake schedules (the admin is their creator)."""
    proposal, schedules = proposals.accept(proposal_id, actor=who.actor)
    return {"proposal": proposal.to_json(), "schedules": [s.to_json() for s in schedules]}


@router.post("/api/proposals/{proposal_id}/dismiss")
def dismiss(proposal_id: PathId, proposals: Proposals, who: Admin) -> dict[str, Any]:
    """Dismiss the proposal: it is not made again for 7 days."""
    return {"proposal": proposals.dismiss(proposal_id, actor=who.actor).to_json()}
