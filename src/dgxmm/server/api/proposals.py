"""Schedule proposals over HTTP.

Viewers read a deployment's proposals and the decision model's settings; admins accept and
dismiss proposals, and change the settings. Profiles are ``api/traffic.py``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from dgxmm.decider.proposals import ModelKind, Proposal, ProposalStatus
from dgxmm.lab.backtest import shown_backtest
from dgxmm.server.edge.bodies import Body
from dgxmm.server.edge.deps import Admin, PathId, PriceDep, ProposalsDep, Viewer
from dgxmm.server.edge.openapi import answers

__all__ = ["router"]

router = APIRouter(tags=["proposals"])


class EndpointBody(Body):
    """The openai model's endpoint: a base URL or a managed deployment's name."""

    base_url: str | None = Field(default=None, max_length=500)
    deployment: str | None = Field(default=None, max_length=100)
    model: str | None = Field(default=None, max_length=200)
    timeout_s: float | None = None


class ModelBody(Body):
    """The decision model's settings; a key left out takes its default."""

    enabled: bool | None = None
    model: ModelKind | None = Field(default=None, strict=False)
    threshold: float | None = None
    endpoint: EndpointBody | None = None


@router.get("/api/deployments/{deployment_id}/proposals", responses=answers(400, 404))
def list_proposals(
    deployment_id: PathId,
    proposals: ProposalsDep,
    _: Viewer,
    price: PriceDep,
    status: ProposalStatus | None = None,
) -> dict[str, Any]:
    """A deployment's proposals, newest first (``?status=open|accepted|dismissed``).

    Each backtest week's cost and saving at ``?price=`` (default 0.1).
    """
    found = proposals.list(deployment_id, status=status)
    return {"proposals": [_shown(p, price) for p in found]}


def _shown(proposal: Proposal, price: float) -> dict[str, Any]:
    """Return a proposal as the API gives it: its backtest's weeks priced."""
    return {**proposal.to_json(), "backtest": shown_backtest(proposal.backtest, price)}


@router.get("/api/proposals/model")
def get_model(proposals: ProposalsDep, _: Viewer) -> dict[str, Any]:
    """The decision model's settings, and whether it can be asked now."""
    readiness = proposals.model_status()
    return {
        "settings": proposals.settings().to_json(),
        "ready": readiness.ready,
        "reason": readiness.reason,
    }


@router.put("/api/proposals/model", responses=answers(400))
def put_model(body: ModelBody, proposals: ProposalsDep, who: Admin) -> dict[str, Any]:
    """Replace the decision model's settings; a wrong value answers 400 naming the field."""
    value = body.model_dump(exclude_none=True)
    settings = proposals.set_settings(value, actor=who.actor)
    return {"settings": settings.to_json()}


@router.get("/api/proposals/{proposal_id}", responses=answers(400, 404))
def get_proposal(
    proposal_id: PathId, proposals: ProposalsDep, _: Viewer, price: PriceDep
) -> dict[str, Any]:
    """One proposal with its evidence, its backtest's weeks priced at ``?price=``."""
    return _shown(proposals.get(proposal_id), price)


@router.post("/api/proposals/{proposal_id}/accept", responses=answers(404, 409))
def accept(proposal_id: PathId, proposals: ProposalsDep, who: Admin) -> dict[str, Any]:
    """Create the proposal's sleep and wake schedules (the admin is their creator)."""
    proposal, schedules = proposals.accept(proposal_id, actor=who.actor)
    return {"proposal": proposal.to_json(), "schedules": [s.to_json() for s in schedules]}


@router.post("/api/proposals/{proposal_id}/dismiss", responses=answers(404, 409))
def dismiss(proposal_id: PathId, proposals: ProposalsDep, who: Admin) -> dict[str, Any]:
    """Dismiss the proposal: it is not made again for 7 days."""
    return {"proposal": proposals.dismiss(proposal_id, actor=who.actor).to_json()}
