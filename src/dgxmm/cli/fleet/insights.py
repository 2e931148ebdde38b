"""``dgxmm insights`` (list, dismiss), ``dgxmm audit`` (list) and ``dgxmm proposals`` (list,
show, accept, dismiss): what the server noticed, who did what, and schedules it proposes."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from dgxmm.cli.common import Answer, PriceOption, Target, command, local_time, table
from dgxmm.cli.fleet.deployments import DeploymentArgument, deployment_id
from dgxmm.errors import InvalidInput
from dgxmm.words import counted

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
        (local_time(r["at"]), r["actor"], r["action"], r["subject"], r.get("subject_id"),
         change_text(r.get("detail")))
        for r in rows
    ]  # fmt: skip
    headers = ("AT", "ACTOR", "ACTION", "SUBJECT", "ID", "WHAT")
    return Answer(value=rows, text=table(headers, lines, "the audit log is empty"))


# An audit row's detail is a whole record (a deployment's every field): a table says what
# changed in a line; --json keeps it all.
_WIDEST = 80


def change_text(detail: object) -> str:
    """Say an audit row's detail in one short line: what changed, else its keys and values."""
    if not isinstance(detail, dict) or not detail:
        return "-"
    before, after = detail.get("before"), detail.get("after")
    if isinstance(before, dict) and isinstance(after, dict):
        changed = [
            f"{key} {_value(before.get(key))} -> {_value(after.get(key))}"
            for key in after
            # When it was changed is the row's own time: the bookkeeping times are left out.
            if before.get(key) != after.get(key) and not key.endswith("_us")
        ]
        text = ", ".join(changed) or "nothing changed"
    elif isinstance(after, dict):
        text = f"new {_value(after.get('name', ''))}".rstrip()
    elif isinstance(before, dict):
        text = f"was {_value(before.get('name', ''))}".rstrip()
    else:
        text = ", ".join(f"{key} {_value(value)}" for key, value in detail.items())
    return text if len(text) <= _WIDEST else text[: _WIDEST - 3] + "..."


def _value(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), default=str)


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
def show_proposal(where: Target, proposal: ProposalArgument, price: PriceOption = None) -> Answer:
    """Show one proposal with its evidence; its backtest's saving at ``--price``."""
    with where.client() as api:
        row = api.get(f"/api/proposals/{proposal}", price=price)
    return Answer(value=row, text="\n".join(proposal_lines(row)))


def proposal_lines(row: dict[str, Any]) -> list[str]:
    """Say a proposal a fact a line, times local; its evidence as the windows it saw."""
    decided = row.get("decided_at_us")
    lines = [
        f"proposal {row['id']} ({row['status']}) for deployment {row['deployment_id']}",
        f"  sleep:      {_when(row['sleep'])}",
        f"  wake:       {_when(row['wake'])}",
        f"  zone:       {row['time_zone']}",
        f"  why:        {row['description']}",
        f"  source:     {row['source']}, confidence {row['confidence']:g}",
        f"  wake lead:  {row.get('wake_lead') or '-'}",
        f"  made:       {local_time(row.get('created_at_us'))}",
    ]
    if decided is not None:
        lines.append(f"  decided:    {local_time(decided)} by {row.get('decided_by') or '-'}")
    evidence = row.get("evidence")
    windows = evidence.get("windows") if isinstance(evidence, dict) else None
    for window in windows or ():
        lines.append(
            f"  window:     {window['start']} to {window['wake']}, {window['hours']} h, idle in "
            f"{window['weeks_idle']} of {window['weeks_observed']} weeks"
        )
    return lines + _backtest_lines(row.get("backtest"))


def _when(side: dict[str, Any]) -> str:
    return f"{side['days_text']} at {side['time']}"


def _backtest_lines(backtest: dict[str, Any] | None) -> list[str]:
    """Say a proposal's backtest, a week a line (the API's ``backtest``)."""
    if backtest is None:
        return ["backtest: none (too little traffic on record to hold a week out)"]
    kind = "held out" if backtest["held_out"] else "in sample"
    lines = [
        f"backtest ({kind}): {counted(len(backtest['weeks']), 'week')} of traffic replayed with it"
    ]
    for number, week in enumerate(backtest["weeks"], start=1):
        waited = (
            f"{week['cold']} of {counted(week['requests'], 'request')} would have waited "
            f"(p50 {week['wait_p50_s']:.1f} s, p99 {week['wait_p99_s']:.1f} s)"
            if week["cold"]
            else f"none of {counted(week['requests'], 'request')} would have waited"
        )
        partial = f" (partial: {round(week['days'], 1):g} of 7 days)" if week.get("partial") else ""
        lines.append(
            f"  week {number}{partial}: frees {week['freed_gib_h']:.0f} GiB-h more than the "
            "schedules in force"
        )
        lines.append(f"    {waited}")
        if week.get("saves") is not None:  # a backtest stored before the waits were kept: none
            lines.append(
                f"    added wait {week['wait_total_s']:.0f} request-s, mean "
                f"{week['wait_mean_s']:.3f} s, p99 of all {week['wait_p99_all_s']:.1f} s; "
                f"saves {week['saves']:.0f} GiB-h at {week['price']:g} GiB-h per request-s"
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
            f"In its backtest, {counted(cold, 'request')} would have waited for the deployment "
            "to wake. "
            "Accept it anyway?"
        )
        if cold and not yes and not (sys.stdin.isatty() and typer.confirm(question)):
            raise InvalidInput(
                "yes",
                f"{counted(cold, 'request')} would have waited in its backtest: "
                "give --yes to accept",
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
