"""``dgxmm schedules``: a deployment's sleep and wake schedules, and pausing them all.

Always on the server: its runner carries them out. Days are names and ranges (``mon-fri``,
``sat,sun``, ``all``) or the API's mask (Monday 1 ... Sunday 64). Nothing of the decider is
imported here: its package loads the proposals' model, seconds the command would wait for.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from dgxmm.cli.common import Answer, Switch, SwitchArgument, Target, command, table
from dgxmm.cli.fleet.deployments import DeploymentArgument, deployment_id
from dgxmm.errors import InvalidInput

__all__ = ["app", "days_mask"]

app = typer.Typer(help="Deployment schedules (on the server).", no_args_is_help=True)

_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def days_mask(text: str) -> int:
    """Return the days mask of ``mon-fri``, ``sat,sun``, ``all`` or a number 1-127."""
    spoken = text.strip().lower()
    if spoken.isdigit():
        return int(spoken)  # the service says when it is out of range
    if spoken in ("all", "every day", "daily"):
        return 127
    weekdays: list[int] = []
    for part in spoken.split(","):
        first, _, last = part.strip().partition("-")
        try:
            start = _DAYS.index(first[:3])
            end = _DAYS.index(last[:3]) if last else start
        except ValueError:
            raise InvalidInput(
                "days", f"{text!r} is not days like mon-fri, sat,sun, all or a mask 1-127"
            ) from None
        weekdays.extend(
            range(start, end + 1) if start <= end else [*range(start, 7), *range(end + 1)]
        )
    return sum(1 << weekday for weekday in set(weekdays))  # the API's mask: Monday is bit 0


ScheduleArgument = Annotated[int, typer.Argument(help="The schedule's id.")]
ActionOption = Annotated[str | None, typer.Option("--action", help="sleep or wake.")]
DaysOption = Annotated[str | None, typer.Option("--days", help="mon-fri, sat,sun, all, ...")]
TimeOption = Annotated[str | None, typer.Option("--time", help="Local time, HH:MM.")]
ZoneOption = Annotated[
    str | None, typer.Option("--zone", help="IANA zone (default: the deployment's).")
]
EnabledOption = Annotated[bool | None, typer.Option("--enabled/--disabled")]


@command(app, "list", offline=False)
def list_schedules(where: Target, deployment: DeploymentArgument) -> Answer:
    """List a deployment's schedules."""
    with where.client() as api:
        answer = api.get(f"/api/deployments/{deployment_id(api, deployment)}/schedules")
    lines = [
        (s["id"], s["action"], s["days_text"], s["time"], s["time_zone"], s["enabled"],
         s["lead"]["says"] if s.get("lead") else "-", s["last_result"], s["paused_reason"])
        for s in answer["schedules"]
    ]  # fmt: skip
    headers = ("ID", "ACTION", "DAYS", "TIME", "ZONE", "ENABLED", "LEAD", "LAST RESULT", "PAUSED")
    text = table(headers, lines, f"no schedules for {deployment}")
    if answer["paused_all"]:
        text += "\n(every schedule is paused: dgxmm schedules pause-all off)"
    return Answer(value=answer, text=text)


@command(app, "create", offline=False)
def create(
    where: Target,
    deployment: DeploymentArgument,
    action: Annotated[str, typer.Option("--action", help="sleep or wake.")],
    days: Annotated[str, typer.Option("--days", help="mon-fri, sat,sun, all, ...")],
    time: Annotated[str, typer.Option("--time", help="Local time, HH:MM.")],
    zone: ZoneOption = None,
    enabled: Annotated[bool, typer.Option("--enabled/--disabled")] = True,
) -> Answer:
    """Create a schedule: sleep or wake a deployment on some days at a local time."""
    body: dict[str, Any] = {"action": action, "days": days_mask(days), "time": time,
                            "enabled": enabled}  # fmt: skip
    if zone is not None:
        body["time_zone"] = zone
    with where.client() as api:
        made = api.post(f"/api/deployments/{deployment_id(api, deployment)}/schedules", body)
    return Answer(value=made, text=f"created schedule {made['id']}: {_says(made)}")


@command(app, "update", offline=False)
def update(
    where: Target,
    deployment: DeploymentArgument,
    schedule: ScheduleArgument,
    action: ActionOption = None,
    days: DaysOption = None,
    time: TimeOption = None,
    zone: ZoneOption = None,
    enabled: EnabledOption = None,
) -> Answer:
    """Change some fields of a schedule."""
    body: dict[str, Any] = {
        "action": action, "days": None if days is None else days_mask(days), "time": time,
        "time_zone": zone, "enabled": enabled,
    }  # fmt: skip
    changes = {key: value for key, value in body.items() if value is not None}
    if not changes:
        raise InvalidInput("schedule", "give at least one field to change")
    with where.client() as api:
        key = deployment_id(api, deployment)
        changed = api.patch(f"/api/deployments/{key}/schedules/{schedule}", changes)
    return Answer(value=changed, text=f"schedule {changed['id']}: {_says(changed)}")


@command(app, "delete", offline=False)
def delete(where: Target, deployment: DeploymentArgument, schedule: ScheduleArgument) -> Answer:
    """Remove a schedule."""
    with where.client() as api:
        key = deployment_id(api, deployment)
        done = api.delete(f"/api/deployments/{key}/schedules/{schedule}")
    return Answer(value=done, text=f"deleted schedule {schedule}")


@command(app, "pause-all", offline=False)
def pause_all(where: Target, switch: SwitchArgument) -> Answer:
    """Pause every schedule (on) or let them run again (off)."""
    with where.client() as api:
        done = api.put("/api/schedules/paused-all", {"paused_all": switch is Switch.ON})
    text = "every schedule is paused" if done["paused_all"] else "schedules run again"
    return Answer(value=done, text=text)


@command(app, "forecast-only", offline=False)
def forecast_only(where: Target, switch: SwitchArgument) -> Answer:
    """Let the decider only forecast (on): its idle steps and proposals become events."""
    with where.client() as api:
        done = api.put("/api/schedules/forecast-only", {"forecast_only": switch is Switch.ON})
    text = (
        "forecast only: the decider records what it would do, and does none of it"
        if done["forecast_only"]
        else "the decider acts again"
    )
    return Answer(value=done, text=text)


def _says(schedule: dict[str, Any]) -> str:
    state = "" if schedule["enabled"] else " (disabled)"
    return (
        f"{schedule['action']} {schedule['days_text']} at {schedule['time']} "
        f"{schedule['time_zone']}{state}"
    )
