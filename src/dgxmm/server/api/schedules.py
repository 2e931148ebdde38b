"""Deployment schedules over HTTP: list (viewers), create, change, delete, pause all (admins)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from dgxmm.decider.schedules import ScheduleAction, ScheduleService
from dgxmm.errors import NotFound
from dgxmm.server.bodies import Body
from dgxmm.server.deps import Admin, PathId, SchedulesDep, Viewer
from dgxmm.server.openapi import answers
from dgxmm.server.redaction import schedule_shown_to

__all__ = ["router"]

router = APIRouter(tags=["schedules"])


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


@router.get("/api/deployments/{deployment_id}/schedules", responses=answers(404))
def list_schedules(deployment_id: PathId, schedules: SchedulesDep, who: Viewer) -> dict[str, Any]:
    """A deployment's schedules, and whether all schedules are paused."""
    return {
        "paused_all": schedules.paused_all(),
        "schedules": [schedule_shown_to(s, who).to_json() for s in schedules.list(deployment_id)],
    }


@router.post(
    "/api/deployments/{deployment_id}/schedules", status_code=201, responses=answers(400, 404)
)
def create_schedule(
    deployment_id: PathId, body: NewSchedule, schedules: SchedulesDep, who: Admin
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
    return created.to_json()


@router.patch(
    "/api/deployments/{deployment_id}/schedules/{schedule_id}", responses=answers(400, 404)
)
def change_schedule(
    deployment_id: PathId,
    schedule_id: PathId,
    body: ScheduleChange,
    schedules: SchedulesDep,
    who: Admin,
) -> dict[str, Any]:
    """Change some fields of a schedule."""
    _owned(schedules, deployment_id, schedule_id)
    changes = body.model_dump(exclude_none=True)
    return schedules.update(schedule_id, actor=who.actor, **changes).to_json()


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


def _owned(schedules: ScheduleService, deployment_id: int, schedule_id: int) -> None:
    if schedules.get(schedule_id).deployment_id != deployment_id:
        raise NotFound("schedule", schedule_id)
