"""``dgxmm alerts``: channels, rules, a test send and the delivery log (admins, on the server).

``add-channel`` and ``new-secret`` print the channel's secret: the one time it is shown.
``test CHANNEL`` queues an example message and waits for the sender's first try: exit 0
when the receiver took it, 1 when it did not (the sender goes on retrying it).
"""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from dgxmm.cli.client import Client
from dgxmm.cli.common import Answer, Target, command, table
from dgxmm.errors import InvalidInput, NotFound
from dgxmm.words import counted

__all__ = ["app"]

app = typer.Typer(help="Alert channels and rules (admins, on the server).", no_args_is_help=True)

ChannelArgument = Annotated[str, typer.Argument(help="The channel's name or id.")]
_POLL_S = 0.25


def channel_id(api: Client, given: str) -> int:
    """Return the id of the channel named (or numbered) ``given``."""
    for channel in api.get("/api/alerts/channels")["channels"]:
        if given in (channel["name"], str(channel["id"])):
            return int(channel["id"])
    raise NotFound("channel", given)


@command(app, "channels", offline=False)
def list_channels(where: Target) -> Answer:
    """List the channels (their URLs as scheme and host; secrets are never shown again)."""
    with where.client() as api:
        rows = api.get("/api/alerts/channels")["channels"]
    lines = [(c["id"], c["name"], c["format"], c["url"], c["failures"]) for c in rows]
    headers = ("ID", "NAME", "FORMAT", "URL", "FAILURES")
    return Answer(value=rows, text=table(headers, lines, "no channels"))


@command(app, "add-channel", offline=False)
def add_channel(
    where: Target,
    name: Annotated[str, typer.Argument()],
    webhook: Annotated[str, typer.Argument(metavar="URL", help="http:// or https://")],
    body_format: Annotated[
        str, typer.Option("--format", help="generic, slack (text) or teams.")
    ] = "generic",
) -> Answer:
    """Add a webhook channel; print its secret (shown only this once)."""
    with where.client() as api:
        made = api.post(
            "/api/alerts/channels", {"name": name, "url": webhook, "format": body_format}
        )
    text = (
        f"added channel {name} ({made['channel']['format']}, {made['channel']['url']})\n"
        f"its secret, shown only now: {made['secret']}"
    )
    return Answer(value=made, text=text)


@command(app, "new-secret", offline=False)
def new_secret(where: Target, channel: ChannelArgument) -> Answer:
    """Replace a channel's secret; print the new one (shown only this once)."""
    with where.client() as api:
        made = api.post(f"/api/alerts/channels/{channel_id(api, channel)}/secret")
    return Answer(value=made, text=f"the new secret of {channel}, shown only now: {made['secret']}")


@command(app, "remove-channel", offline=False)
def remove_channel(where: Target, channel: ChannelArgument) -> Answer:
    """Remove a channel, its place in rules and its deliveries."""
    with where.client() as api:
        done = api.delete(f"/api/alerts/channels/{channel_id(api, channel)}")
    return Answer(value=done, text=f"removed channel {channel}")


@command(app, "rotate-key", offline=False)
def rotate_key(where: Target) -> Answer:
    """Make a new sealing key (alerts.key) and seal every channel's URL and secret again."""
    with where.client() as api:
        done = api.post("/api/alerts/key/rotate")
    text = (
        f"the alerts' sealing key is new; {counted(done['channels'], 'channel')} sealed again "
        "under it (other instances on this database need the new alerts.key)"
    )
    return Answer(value=done, text=text)


@command(app, "test", offline=False)
def send_test(
    where: Target,
    channel: ChannelArgument,
    wait: Annotated[
        float, typer.Option("--wait", min=0, max=600, help="Seconds to wait for the first try.")
    ] = 30.0,
) -> Answer:
    """Send one example message to a channel and say how its first try went."""
    with where.client() as api:
        delivery = api.post(f"/api/alerts/channels/{channel_id(api, channel)}/test")["delivery"]
        found = _first_try(api, int(delivery), wait)
    if not found["log"]:
        return Answer(
            value=found, text=f"test {delivery} queued; not tried within {wait:g} s", code=1
        )
    first = found["log"][0]
    if first["outcome"] == "sent":
        return Answer(
            value=found, text=f"test {delivery} sent to {channel}: {first['status_code']}"
        )
    why = first["error"] or f"answered {first['status_code']}"
    text = f"test {delivery} to {channel} failed: {why} ({found['state']}: retried later)"
    return Answer(value=found, text=text, code=1)


def _first_try(api: Client, delivery: int, wait: float) -> Any:
    deadline = time.monotonic() + wait
    while True:
        found = api.get(f"/api/alerts/deliveries/{delivery}")
        if found["log"] or time.monotonic() >= deadline:
            return found
        time.sleep(_POLL_S)


@command(app, "rules", offline=False)
def list_rules(where: Target) -> Answer:
    """List the rules with their channels."""
    with where.client() as api:
        rows = api.get("/api/alerts/rules")["rules"]
    lines = [
        (r["id"], r["name"], r["condition"], r["threshold"], r["window_minutes"],
         r["quiet_minutes"], ", ".join(r["channels"]), "on" if r["enabled"] else "off")
        for r in rows
    ]  # fmt: skip
    headers = ("ID", "NAME", "CONDITION", "N", "MINUTES", "QUIET", "CHANNELS", "")
    return Answer(value=rows, text=table(headers, lines, "no rules"))


@command(app, "add-rule", offline=False)
def add_rule(
    where: Target,
    name: Annotated[str, typer.Argument()],
    condition: Annotated[str, typer.Argument(help="job_failed, deployment_failed, ...")],
    channels: Annotated[list[str], typer.Option("--channel", help="A channel (repeat it).")],
    threshold: Annotated[int | None, typer.Option("--threshold", help="N.")] = None,
    minutes: Annotated[int | None, typer.Option("--minutes", help="M, or X.")] = None,
    quiet: Annotated[int | None, typer.Option("--quiet", help="Quiet period (minutes).")] = None,
) -> Answer:
    """Add a rule that tells its channels when its condition holds."""
    body: dict[str, Any] = {"name": name, "condition": condition, "channels": channels}
    for key, value in (
        ("threshold", threshold),
        ("window_minutes", minutes),
        ("quiet_minutes", quiet),
    ):
        if value is not None:
            body[key] = value
    with where.client() as api:
        made = api.post("/api/alerts/rules", body)
    return Answer(
        value=made, text=f"added rule {name} ({condition} -> {', '.join(made['channels'])})"
    )


RuleArgument = Annotated[str, typer.Argument(help="The rule's name or id.")]


def rule_id(api: Client, given: str) -> int:
    """Return the id of the rule named (or numbered) ``given``."""
    for rule in api.get("/api/alerts/rules")["rules"]:
        if given in (rule["name"], str(rule["id"])):
            return int(rule["id"])
    raise NotFound("rule", given)


@command(app, "remove-rule", offline=False)
def remove_rule(where: Target, rule: RuleArgument) -> Answer:
    """Remove a rule."""
    with where.client() as api:
        done = api.delete(f"/api/alerts/rules/{rule_id(api, rule)}")
    return Answer(value=done, text=f"removed rule {rule}")


@command(app, "switch-rule", offline=False)
def switch_rule(
    where: Target,
    rule: RuleArgument,
    state: Annotated[str, typer.Argument(metavar="on|off")],
) -> Answer:
    """Switch a rule on or off (off: its open incidents close without a message)."""
    if state not in ("on", "off"):
        raise InvalidInput("state", f"{state!r} is not on or off")
    with where.client() as api:
        done = api.post(
            f"/api/alerts/rules/{rule_id(api, rule)}/enabled", {"enabled": state == "on"}
        )
    return Answer(value=done, text=f"rule {rule} is {state}")


@command(app, "log", offline=False)
def log(
    where: Target, limit: Annotated[int, typer.Option("--limit", min=1, max=1000)] = 50
) -> Answer:
    """List the deliveries, newest first, with each attempt's outcome and status code."""
    with where.client() as api:
        rows = api.get("/api/alerts/deliveries", limit=limit)["deliveries"]
    lines = [
        (d["id"], d["created_at"], d["channel"], d["message"]["kind"], d["state"],
         " ".join(f"{a['outcome']}:{a['status_code'] or '-'}" for a in d["log"]),
         d["message"]["title"])
        for d in rows
    ]  # fmt: skip
    headers = ("ID", "MADE", "CHANNEL", "KIND", "STATE", "ATTEMPTS", "MESSAGE")
    return Answer(value=rows, text=table(headers, lines, "nothing sent yet"))
