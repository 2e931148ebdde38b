"""``dgxmm insights`` (list, dismiss), ``dgxmm audit`` (list) and ``dgxmm proposals`` (list,
show, accept, dismiss): what the server noticed, who did what, and schedules it proposes."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from dgxmm.cli.common import Answer, Target, command, table
from dgxmm.cli.deployments import DeploymentArgument, deployment_id
from dgxmm.errors import InvalidInput

__all__ = ["audit_app", "insights_app", "proposals_app"]

insights_app = typer.Typer(help="What a person should know (on the server).", no_args_is_help=True)
audit_app = typer.Typer(help="Who did what, newest first (admins).", no_args_is_help=True)
proposals_app = typer.Typer(
    help="Schedules proposed from a deployment's traffic.", no_args_is_help=True
)


@command(insights_app, "list", offline=False)
def list_insights(
    where: Target,
    include_dismissed: Annotated[bool, typer.Option("--all", help="Dismissed ones too.")] = False,
    deployment: Annotated[
        str | None, typer.Option("--deployment", help="Only this deployment's (name or id).")
    ] = None,
) -> Answer:
    """List the open insights, newest first."""
    with where.client() as api:
        key = None if deployment is None else deployment_id(api, deployment)
        rows = api.get_all(
            "/api/insights",
            "insights",
            include_dismissed=include_dismissed or None,
            deployment_id=key,
        )["insights"]
    lines = [
        (i["id"], i["created_at"], i["severity"], i["kind"], i["deployment"], i["message"])
        for i in rows
    ]
    headers = ("ID", "AT", "SEVERITY", "KIND", "DEPLOYMENT", "MESSAGE")
    return Answer(value=rows, text=table(headers, lines, "no insights"))


@command(insights_app, "dismiss", offline=False)
def dismiss_insight(where: Target, insight: Annotated[int, typer.Argument()]) -> Answer:
    """Dismiss an insight."""
    with where.client() as api:
        done = api.post(f"/api/insights/{insight}/dismiss")
    return Answer(value=done, text=f"dismissed insight {insight}")


@command(audit_app, "list", offline=False)
def list_audit(
    where: Target,
    limit: Annotated[int, typer.Option("--limit", min=1, help="How many rows at most.")] = 50,
    actor: Annotated[str | None, typer.Option("--actor", help="Only this actor's.")] = None,
    subject: Annotated[
        str | None, typer.Option("--subject", help="Only rows about this kind of thing.")
    ] = None,
    action: Annotated[str | None, typer.Option("--action", help="Only this action.")] = None,
) -> Answer:
    """List the audit log, newest first."""
    with where.client() as api:
        rows = api.get_all(
            "/api/audit", "audit", most=limit, actor=actor, subject=subject, action=action
        )["audit"]
    lines = [
        (r["at"], r["actor"], r["action"], r["subject"], r.get("subject_id"), r.get("detail"))
        for r in rows
    ]
    headers = ("AT", "ACTOR", "ACTION", "SUBJECT", "ID", "DETAIL")
    return Answer(value=rows, text=table(headers, lines, "the audit log is empty"))


ProposalArgument = Annotated[int, typer.Argument(help="The proposal's id.")]


@command(proposals_app, "list", offline=False)
def list_proposals(
    where: Target,
    deployment: DeploymentArgument,
    status: Annotated[
        str | None, typer.Option("--status", help="open, accepted or dismissed.")
    ] = None,
) -> Answer:
    """List a deployment's proposals, newest first."""
    with where.client() as api:
        key = deployment_id(api, deployment)
        rows = api.get(f"/api/deployments/{key}/proposals", status=status)["proposals"]
    lines = [
        (p["id"], p["status"], f"sleep {p['sleep']['days_text']} {p['sleep']['time']}",
         f"wake {p['wake']['days_text']} {p['wake']['time']}", p["time_zone"], p["confidence"],
         p["description"])
        for p in rows
    ]  # fmt: skip
    headers = ("ID", "STATUS", "SLEEP", "WAKE", "ZONE", "CONFIDENCE", "WHY")
    return Answer(value=rows, text=table(headers, lines, f"no proposals for {deployment}"))


@command(proposals_app, "show", offline=False)
def show_proposal(where: Target, proposal: ProposalArgument) -> Answer:
    """Show one proposal with its evidence."""
    with where.client() as api:
        row = api.get(f"/api/proposals/{proposal}")
    lines = [f"{key}: {value}" for key, value in row.items() if key != "backtest"]
    lines += _backtest_lines(row.get("backtest"))
    return Answer(value=row, text="\n".join(lines))


def _backtest_lines(backtest: dict[str, Any] | None) -> list[str]:
    """Say a proposal's backtest, a week a line (the API's ``backtest``)."""
    if backtest is None:
        return ["backtest: none (too little traffic on record to hold a week out)"]
    kind = "held out" if backtest["held_out"] else "in sample"
    lines = [f"backtest ({kind}): {len(backtest['weeks'])} week(s) of traffic replayed with it"]
    for number, week in enumerate(backtest["weeks"], start=1):
        waited = (
            f"{week['cold']} of {week['requests']} request(s) would have waited "
            f"(p50 {week['wait_p50_s']:.1f} s, p99 {week['wait_p99_s']:.1f} s)"
            if week["cold"]
            else f"none of {week['requests']} request(s) would have waited"
        )
        lines.append(
            f"  week {number}: frees {week['freed_gib_h']:.0f} GiB-h more than the schedules "
            f"in force; {waited}"
        )
    return lines


@command(proposals_app, "accept", offline=False)
def accept(
    where: Target,
    proposal: ProposalArgument,
    yes: Annotated[
        bool, typer.Option("--yes", help="Accept even when its backtest has requests waiting.")
    ] = False,
) -> Answer:
    """Accept a proposal: its sleep and wake schedules are created.

    When its backtest found requests that would have waited, it asks first (``--yes``
    answers for a script).
    """
    with where.client() as api:
        row = api.get(f"/api/proposals/{proposal}")
        tested = row.get("backtest")
        # Only an open one is asked about: the server refuses the others, and says why.
        cold = 0 if tested is None or row["status"] != "open" else int(tested["cold"])
        question = (
            f"In its backtest, {cold} request(s) would have waited for the deployment to wake. "
            "Accept it anyway?"
        )
        if cold and not yes and not (sys.stdin.isatty() and typer.confirm(question)):
            raise InvalidInput(
                "yes", f"{cold} request(s) would have waited in its backtest: give --yes to accept"
            )
        done = api.post(f"/api/proposals/{proposal}/accept")
    ids = ", ".join(str(s["id"]) for s in done["schedules"])
    return Answer(value=done, text=f"accepted proposal {proposal}: schedules {ids} created")


@command(proposals_app, "dismiss", offline=False)
def dismiss_proposal(where: Target, proposal: ProposalArgument) -> Answer:
    """Dismiss a proposal: it is not made again for 7 days."""
    with where.client() as api:
        done = api.post(f"/api/proposals/{proposal}/dismiss")
    return Answer(value=done, text=f"dismissed proposal {proposal}")
