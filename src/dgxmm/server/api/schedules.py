"""Deployment schedules over HTTP: list (viewers), create, change, delete, pause all (admins).

A wake or start schedule's JSON carries its ``lead``: how early its action begins and where
the figure came from (``{"seconds": 42.0, "says": "begins 42 s early: p95 of the last 20
level-1 wakes"}``), as the runner reckons it now (``lead_now``); a sleep or stop's is null.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from dgxmm.decider.schedules import Schedule, ScheduleAction, ScheduleService
from dgxmm.decider.schedules.lead import Lead
from dgxmm.decider.schedules.runner import lead_now
from dgxmm.errors import NotFound
from dgxmm.fleet import Fleet
from dgxmm.server.access.redaction import schedule_shown_to
from dgxmm.server.edge.bodies import Body
from dgxmm.server.edge.deps import Admin, FleetDep, PathId, SchedulesDep, Viewer
from dgxmm.server.edge.openapi import answers
from dgxmm.time_units import SECOND_US

__all__ = ["router", "schedule_json"]

router = APIRouter(tags=["schedules"])


def schedule_json(schedule: Schedule, lead: Lead | None) -> dict[str, Any]:
    """Return a schedule's JSON with its ``lead`` (null for a sleep or stop)."""
    shown = None
    if not schedule.action.quiets and lead is not None:  # a wake or start: the lead moves it
        shown = {"seconds": lead.us / SECOND_US, "says": lead.says}
    return {**schedule.to_json(), "lead": shown}


def _lead(fleet: Fleet, deployment_id: int) -> Lead:
    """Return the lead of the deployment's wakes and starts now (404 for no deployment)."""
    return lead_now(fleet, fleet.deployments.get(deployment_id))


class NewSchedule(Body):
    """A schedule: what, which days (Monday 1 ... Sunday 64), at what local time, in which zone."""

    action: ScheduleAction = Field(strict=False)
    days: int
    time: str = Field(max_length=10)
    time_zone: str | None = Field(default=None, max_length=100)  # default: the deployment's
    enabled: bool = True


class ScheduleChange(Body):
    """The fields of a schedule to change."""

    action: ScheduleAction | None = Field(default=None, strict=False)
    days: int | None = None
    time: str | None = Field(default=None, max_length=10)
    time_zone: str | None = Field(default=None, max_length=100)
    enabled: bool | None = None


class PausedAll(Body):
    """``{"paused_all": true|false}``."""

    paused_all: bool


class ForecastOnly(Body):
    """``{"forecast_only": true|false}``."""

    forecast_only: bool


@router.get("/api/deployments/{deployment_id}/schedules", responses=answers(404))
def list_schedules(
    deployment_id: PathId, schedules: SchedulesDep, fleet: FleetDep, who: Viewer
) -> dict[str, Any]:
    """A deployment's schedules, each wake and start with its lead; whether all are paused."""
    rows = schedules.list(deployment_id)
    lead = _lead(fleet, deployment_id)
    return {
        "paused_all": schedules.paused_all(),
        "schedules": [schedule_json(schedule_shown_to(s, who), lead) for s in rows],
    }


@router.post(
    "/api/deployments/{deployment_id}/schedules", status_code=201, responses=answers(400, 404)
)
def create_schedule(
    deployment_id: PathId, body: NewSchedule, schedules: SchedulesDep, fleet: FleetDep, who: Admin
) -> dict[str, Any]:
    """Create a schedule; bad input answers 400 naming the field."""
    created = schedules.create(
        deployment_id,
        action=body.action,
        days=body.days,
        time=body.time,
        time_zone=body.time_zone,
        enabled=body.enabled,
        actor=who.actor,
    )
    return schedule_json(created, _lead(fleet, deployment_id))


@router.patch(
    "/api/deployments/{deployment_id}/schedules/{schedule_id}", responses=answers(400, 404)
)
def change_schedule(
    deployment_id: PathId,
    schedule_id: PathId,
    *,
    body: ScheduleChange,
    schedules: SchedulesDep,
    fleet: FleetDep,
    who: Admin,
) -> dict[str, Any]:
    """Change some fields of a schedule."""
    _owned(schedules, deployment_id, schedule_id)
    changes = body.model_dump(exclude_none=True)
    changed = schedules.update(schedule_id, actor=who.actor, **changes)
    return schedule_json(changed, _lead(fleet, deployment_id))


@router.delete("/api/deployments/{deployment_id}/schedules/{schedule_id}", responses=answers(404))
def delete_schedule(
    deployment_id: PathId, schedule_id: PathId, schedules: SchedulesDep, who: Admin
) -> dict[str, Any]:
    """Remove a schedule."""
    _owned(schedules, deployment_id, schedule_id)
    schedules.delete(schedule_id, actor=who.actor)
    return {"deleted": schedule_id}


@router.get("/api/schedules/paused-all")
def get_paused_all(schedules: SchedulesDep, _: Viewer) -> dict[str, Any]:
    """Whether every schedule is paused."""
    return {"paused_all": schedules.paused_all()}


@router.put("/api/schedules/paused-all")
def put_paused_all(body: PausedAll, schedules: SchedulesDep, who: Admin) -> dict[str, Any]:
    """Pause or resume every schedule."""
    schedules.set_paused_all(body.paused_all, actor=who.actor)
    return {"paused_all": schedules.paused_all()}


@router.get("/api/schedules/forecast-only")
def get_forecast_only(schedules: SchedulesDep, _: Viewer) -> dict[str, Any]:
    """Whether the decider only forecasts (records its idle steps and proposals, acts on none)."""
    return {"forecast_only": schedules.forecast_only()}


@router.put("/api/schedules/forecast-only")
def put_forecast_only(body: ForecastOnly, schedules: SchedulesDep, who: Admin) -> dict[str, Any]:
    """Switch forecast-only mode on or off (the schedules in force act either way)."""
    schedules.set_forecast_only(body.forecast_only, actor=who.actor)
    return {"forecast_only": schedules.forecast_only()}


def _owned(schedules: ScheduleService, deployment_id: int, schedule_id: int) -> None:
    if schedules.get(schedule_id).deployment_id != deployment_id:
        raise NotFound("schedule", schedule_id)
