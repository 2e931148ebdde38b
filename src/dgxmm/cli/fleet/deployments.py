"""``dgxmm deployments``: list, show, create, update, remove; start, stop, sleep, wake; plan,
events and the server log. Always on the server: only it owns the model servers' processes.

A deployment is named by its name or its id (``dgxmm deployments start llama`` or ``... 3``).
Its idle ladder's steps are given in seconds, or ``off`` (an update clears the step):
``dgxmm deployments update llama --idle-sleep-after 300 --idle-stop-after off``. Its aliases,
the other names requests may give as its model, are ``--alias`` each (an update's replace
them all; ``--no-aliases`` drops them).
"""

from __future__ import annotations

import math
import shlex
import time
from collections.abc import Mapping
from typing import Annotated, Any

import typer

from dgxmm.cli.client import Client
from dgxmm.cli.common import Answer, Target, command, table
from dgxmm.errors import InvalidInput, NotFound

__all__ = ["DeploymentArgument", "app", "deployment_id"]

app = typer.Typer(help="Model-serving deployments (on the server).", no_args_is_help=True)

DeploymentArgument = Annotated[str, typer.Argument(help="The deployment's name or id.")]


def deployment_id(api: Client, ref: str) -> int:
    """Return the id of the deployment ``ref`` names (its name, or its id); ``NotFound``."""
    found = api.get_all("/api/deployments", "deployments")["deployments"]
    for row in found:
        if row["name"] == ref:
            return int(row["id"])
    if ref.isdigit() and any(row["id"] == int(ref) for row in found):
        return int(ref)
    raise NotFound("deployment", ref)


@command(app, "list", offline=False)
def list_deployments(where: Target) -> Answer:
    """List the deployments with their state and what they hold."""
    with where.client() as api:
        answer = api.get_all("/api/deployments", "deployments")
    lines = [
        (d["id"], d["name"], d["state"], d["backend"], d["model"],
         ",".join(str(g) for g in d["gpus"]) or "-", d["held_gib"], d["priority"])
        for d in answer["deployments"]
    ]  # fmt: skip
    headers = ("ID", "NAME", "STATE", "BACKEND", "MODEL", "GPUS", "HELD GIB", "PRIORITY")
    return Answer(value=answer, text=table(headers, lines, "no deployments"))


@command(app, "show", offline=False)
def show(where: Target, deployment: DeploymentArgument) -> Answer:
    """Show one deployment, every field."""
    with where.client() as api:
        row = api.get(f"/api/deployments/{deployment_id(api, deployment)}")
    width = max(len(key) for key in row)
    lines = [f"{key.ljust(width)}  {_shown(key, value)}" for key, value in row.items()]
    return Answer(value=row, text="\n".join(lines))


NameOption = Annotated[str | None, typer.Option("--name", help="A new name.")]
ModelOption = Annotated[str | None, typer.Option("--model", help="The model it serves.")]
AliasOption = Annotated[
    list[str] | None,
    typer.Option("--alias", help="Another name requests may give as its model (repeat)."),
]
NoAliasesOption = Annotated[
    bool, typer.Option("--no-aliases", help="Drop every alias (an update's --alias replaces).")
]
BackendOption = Annotated[
    str | None, typer.Option("--backend", help="process (dgxmm runs it), external or ray.")
]
CommandOption = Annotated[
    str | None, typer.Option("--command", help="The server's command line, quoted as one.")
]
PortOption = Annotated[int | None, typer.Option("--port", help="The port it listens on.")]
EnvOption = Annotated[
    list[str] | None, typer.Option("--env", help="KEY=VALUE for its environment (repeat).")
]
BaseUrlOption = Annotated[str | None, typer.Option("--base-url", help="An external server's URL.")]
GpusOption = Annotated[str | None, typer.Option("--gpus", help="GPU indexes, e.g. 0,1.")]
AwakeOption = Annotated[
    float | None, typer.Option("--memory-awake", help="GiB per GPU while it runs.")
]
AsleepOption = Annotated[
    float | None, typer.Option("--memory-asleep", help="GiB per GPU while it sleeps.")
]
PriorityOption = Annotated[int | None, typer.Option("--priority", help="0-100; higher stays.")]
ZoneOption = Annotated[
    str | None, typer.Option("--zone", help="IANA zone of its schedules (default: the server's).")
]
TimeoutOption = Annotated[
    float | None, typer.Option("--startup-timeout", help="Seconds its start-up may take.")
]
SleepTimeoutOption = Annotated[
    float | None, typer.Option("--sleep-timeout", help="Seconds a sleep may take.")
]
SleepLevelOption = Annotated[
    int | None, typer.Option("--sleep-level", help="1 (weights offloaded) or 2 (discarded).")
]
WakeOnRequestOption = Annotated[
    bool | None,
    typer.Option("--wake-on-request/--no-wake-on-request", help="Wake it for a request."),
]
MaxConcurrentOption = Annotated[
    str | None,
    typer.Option(
        "--max-concurrent",
        help="Requests the proxy passes to it at once (the rest wait, then 429), or off.",
    ),
]
MaxQueuedOption = Annotated[
    int | None,
    typer.Option("--max-queued", help="Past --max-concurrent, how many wait for a slot."),
]
LoadingProgressOption = Annotated[
    bool | None,
    typer.Option(
        "--loading-progress/--no-loading-progress",
        help="Send a held stream progress chunks while it wakes.",
    ),
]
RayAddressOption = Annotated[
    str | None, typer.Option("--ray-address", help="Backend ray: the cluster's address.")
]
RayNodeOption = Annotated[str | None, typer.Option("--ray-node", help="Backend ray: the node.")]
NumGpusOption = Annotated[
    int | None, typer.Option("--num-gpus", help="Backend ray: the GPUs its actor asks for.")
]
IdleSleepOption = Annotated[
    str | None,
    typer.Option(
        "--idle-sleep-after", help="Seconds without requests before it sleeps at level 1, or off."
    ),
]
IdleDeepenOption = Annotated[
    str | None,
    typer.Option(
        "--idle-deepen-after", help="Seconds without requests before it sleeps at level 2, or off."
    ),
]
IdleStopOption = Annotated[
    str | None,
    typer.Option("--idle-stop-after", help="Seconds without requests before it stops, or off."),
]
IdlePolicyOption = Annotated[
    str | None,
    typer.Option(
        "--idle-policy",
        help="ladder (the steps as given), histogram (learned) or priced (break-even rungs).",
    ),
]
WakeLeadOption = Annotated[
    str | None,
    typer.Option(
        "--wake-lead", help="How early scheduled wakes and starts begin: off, measured, seconds."
    ),
]
WaitBudgetOption = Annotated[
    str | None,
    typer.Option(
        "--wait-budget",
        help="The priced policy's wait budget: mean_ms=50,p99_s=5 (either or both), or off.",
    ),
]


# Each option of ``create`` and ``update`` and the API field it fills, where the two differ
# in more than their name; ``command_line``, ``env`` and ``gpus`` are parsed by ``_fields``.
_API_FIELDS = {
    "name": "name", "model": "model", "backend": "backend", "port": "port",
    "base_url": "base_url", "memory_awake": "memory_gib_awake",
    "memory_asleep": "memory_gib_asleep", "priority": "priority", "zone": "time_zone",
    "startup_timeout": "startup_timeout_s", "sleep_timeout": "sleep_timeout_s",
    "sleep_level": "sleep_level", "wake_on_request": "wake_on_request",
    "ray_address": "ray_address", "ray_node": "ray_node", "num_gpus": "num_gpus",
    "idle_policy": "idle_policy", "max_queued": "max_queued_requests",
    "loading_progress": "loading_progress",
}  # fmt: skip
# The idle ladder's options: seconds, or ``off`` (sent as null: an update clears the step).
_IDLE_STEPS = {
    "idle_sleep_after": "idle_sleep_after_s",
    "idle_deepen_after": "idle_deepen_after_s",
    "idle_stop_after": "idle_stop_after_s",
}
_OFF = "off"


def _fields(options: Mapping[str, Any]) -> dict[str, Any]:
    """Return the API's fields for the options given (those left out are not sent).

    ``options`` is a command's ``locals()``: typer reads the options from the command's
    signature, so the command has them as parameters, and both commands share this one list.
    """
    keys: dict[str, Any] = {field: options[option] for option, field in _API_FIELDS.items()}
    command_line: str | None = options["command_line"]
    env: list[str] | None = options["env"]
    gpus: str | None = options["gpus"]
    alias: list[str] | None = options["alias"]
    if alias and options.get("no_aliases"):
        raise InvalidInput("alias", "give --alias or --no-aliases, not both")
    if alias:
        keys["aliases"] = alias
    elif options.get("no_aliases"):
        keys["aliases"] = []
    if command_line is not None:
        keys["command"] = shlex.split(command_line)
    if env is not None:
        pairs = [entry.partition("=") for entry in env]
        if any(not key or not sep for key, sep, _ in pairs):
            raise InvalidInput("env", "give each variable as KEY=VALUE")
        keys["environment"] = {key: value for key, _, value in pairs}
    if gpus is not None:
        try:
            keys["gpus"] = [int(part) for part in gpus.split(",") if part.strip()]
        except ValueError:
            raise InvalidInput("gpus", f"{gpus!r} is not a list of GPU indexes like 0,1") from None
    wake_lead: str | None = options["wake_lead"]
    if wake_lead is not None:
        # off and measured go as they are, seconds as a number; anything else goes as text,
        # for the server to refuse naming wake_lead.
        keys["wake_lead"] = _number(wake_lead) if wake_lead not in (_OFF, "measured") else wake_lead
    given = {key: value for key, value in keys.items() if value is not None}
    budget: str | None = options["wait_budget"]
    if budget is not None:  # off: sent as null, no budget
        given["idle_wait_budget"] = None if budget.strip() == _OFF else _budget(budget)
    limit: str | None = options["max_concurrent"]
    if limit is not None:  # a number, or off (sent as null: no limit)
        given["max_concurrent_requests"] = None if limit.strip() == _OFF else _whole(limit)
    for option, field in _IDLE_STEPS.items():
        text: str | None = options[option]
        if text is not None:
            given[field] = None if text.strip() == _OFF else _seconds(text, field)
    return given


def _budget(text: str) -> dict[str, float | str]:
    """Return ``mean_ms=50,p99_s=5`` as the API's object; the server checks the keys and
    values (a value that is not a number goes as text, for it to refuse naming the key)."""
    found: dict[str, float | str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise InvalidInput(
                "idle_wait_budget", f"{part!r} is not key=value, as in mean_ms=50,p99_s=5"
            )
        found[key.strip()] = _number(value.strip())
    return found


def _number(text: str) -> float | str:
    """Return ``text`` as a number when it is a finite one, else as it is."""
    try:
        found = float(text)
    except ValueError:
        return text
    return found if math.isfinite(found) else text


def _whole(text: str) -> int | str:
    """Return ``text`` as a whole number when it is one, else as it is (the server names it)."""
    try:
        return int(text)
    except ValueError:
        return text


def _seconds(text: str, field: str) -> float:
    """Read an idle step's seconds (``InvalidInput`` naming ``field`` for another text)."""
    found = _number(text)
    if isinstance(found, str):
        raise InvalidInput(field, f"{text!r} is not a number of seconds or 'off'")
    return found


@command(app, "create", offline=False)
def create(
    where: Target,
    name: Annotated[str, typer.Argument(help="Its name.")],
    model: Annotated[str, typer.Option("--model", help="The model it serves.")],
    backend: Annotated[str, typer.Option("--backend", help="process, external or ray.")],
    alias: AliasOption = None,
    command_line: CommandOption = None,
    port: PortOption = None,
    env: EnvOption = None,
    base_url: BaseUrlOption = None,
    gpus: GpusOption = None,
    memory_awake: AwakeOption = None,
    memory_asleep: AsleepOption = None,
    priority: PriorityOption = None,
    zone: ZoneOption = None,
    startup_timeout: TimeoutOption = None,
    sleep_timeout: SleepTimeoutOption = None,
    sleep_level: SleepLevelOption = None,
    wake_on_request: WakeOnRequestOption = None,
    max_concurrent: MaxConcurrentOption = None,
    max_queued: MaxQueuedOption = None,
    loading_progress: LoadingProgressOption = None,
    ray_address: RayAddressOption = None,
    ray_node: RayNodeOption = None,
    num_gpus: NumGpusOption = None,
    idle_sleep_after: IdleSleepOption = None,
    idle_deepen_after: IdleDeepenOption = None,
    idle_stop_after: IdleStopOption = None,
    idle_policy: IdlePolicyOption = None,
    wake_lead: WakeLeadOption = None,
    wait_budget: WaitBudgetOption = None,
) -> Answer:
    """Create a deployment (stopped): a process (--command, --port), --base-url, or ray."""
    keys = _fields(locals())
    with where.client() as api:
        row = api.post("/api/deployments", keys)
    return Answer(value=row, text=f"created deployment {row['name']} (id {row['id']}), stopped")


@command(app, "update", offline=False)
def update(
    where: Target,
    deployment: DeploymentArgument,
    name: NameOption = None,
    model: ModelOption = None,
    alias: AliasOption = None,
    no_aliases: NoAliasesOption = False,
    backend: BackendOption = None,
    command_line: CommandOption = None,
    port: PortOption = None,
    env: EnvOption = None,
    base_url: BaseUrlOption = None,
    gpus: GpusOption = None,
    memory_awake: AwakeOption = None,
    memory_asleep: AsleepOption = None,
    priority: PriorityOption = None,
    zone: ZoneOption = None,
    startup_timeout: TimeoutOption = None,
    sleep_timeout: SleepTimeoutOption = None,
    sleep_level: SleepLevelOption = None,
    wake_on_request: WakeOnRequestOption = None,
    max_concurrent: MaxConcurrentOption = None,
    max_queued: MaxQueuedOption = None,
    loading_progress: LoadingProgressOption = None,
    ray_address: RayAddressOption = None,
    ray_node: RayNodeOption = None,
    num_gpus: NumGpusOption = None,
    idle_sleep_after: IdleSleepOption = None,
    idle_deepen_after: IdleDeepenOption = None,
    idle_stop_after: IdleStopOption = None,
    idle_policy: IdlePolicyOption = None,
    wake_lead: WakeLeadOption = None,
    wait_budget: WaitBudgetOption = None,
) -> Answer:
    """Change some fields; what it runs changes only while it is stopped or failed."""
    keys = _fields(locals())
    if not keys:
        raise InvalidInput("deployment", "give at least one field to change")
    with where.client() as api:
        row = api.patch(f"/api/deployments/{deployment_id(api, deployment)}", keys)
    return Answer(value=row, text=f"updated deployment {row['name']} (id {row['id']})")


@command(app, "remove", offline=False)
def remove(where: Target, deployment: DeploymentArgument) -> Answer:
    """Remove a deployment: its process is stopped, its rows and schedules go."""
    with where.client() as api:
        done = api.delete(f"/api/deployments/{deployment_id(api, deployment)}")
    return Answer(value=done, text=f"removed deployment {done['name']} (id {done['removed']})")


PlanOption = Annotated[
    bool, typer.Option("--plan/--no-plan", help="Evict what /plan shows to make room.")
]


@command(app, "start", offline=False)
def start(where: Target, deployment: DeploymentArgument, plan: PlanOption = True) -> Answer:
    """Start it and wait for its start-up gate."""
    return _act(where, deployment, "start", plan)


@command(app, "wake", offline=False)
def wake(where: Target, deployment: DeploymentArgument, plan: PlanOption = True) -> Answer:
    """Wake it and wait for its start-up gate."""
    return _act(where, deployment, "wake", plan)


@command(app, "stop", offline=False)
def stop(where: Target, deployment: DeploymentArgument) -> Answer:
    """Stop it."""
    return _act(where, deployment, "stop", None)


@command(app, "sleep", offline=False)
def sleep(where: Target, deployment: DeploymentArgument) -> Answer:
    """Put it to sleep once its requests in flight finish."""
    return _act(where, deployment, "sleep", None)


def _act(where: Target, deployment: str, action: str, plan: bool | None) -> Answer:
    with where.client() as api:
        key = deployment_id(api, deployment)
        body = None if plan is None else {"plan": plan}
        result = api.post(f"/api/deployments/{key}/{action}", body)
    after = result["deployment"]
    lines = [
        f"{action} {after['name']}: {result['outcome']}, now {after['state']}"
        + (f" ({result['detail']})" if result["detail"] else "")
    ]
    lines += [
        f"  evicted {e['deployment']['name']}: {e['action']} {e['outcome']}"
        for e in result["evictions"]
    ]
    return Answer(
        value=result, text="\n".join(lines), code=0 if result["outcome"] != "failed" else 1
    )


@command(app, "plan", offline=False)
def plan(where: Target, deployment: DeploymentArgument) -> Answer:
    """Say what a start or wake would evict to make room, before it runs."""
    with where.client() as api:
        answer = api.get(f"/api/deployments/{deployment_id(api, deployment)}/plan")
    if answer["fits_now"]:
        text = "it fits now: nothing would be evicted"
    elif answer["feasible"]:
        steps = [f"{e['name']} ({e['action']})" for e in answer["evictions"]]
        text = "to make room it would evict: " + ", ".join(steps)
    else:
        text = f"it cannot fit: {answer['reason']}"
    return Answer(value=answer, text=text)


@command(app, "events", offline=False)
def events(
    where: Target,
    deployment: DeploymentArgument,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000)] = 20,
) -> Answer:
    """Its events, newest first."""
    with where.client() as api:
        key = deployment_id(api, deployment)
        rows = api.get(f"/api/deployments/{key}/events", limit=limit)["events"]
    lines = [(e["at"], e["action"], e["outcome"], e.get("actor"), e.get("detail")) for e in rows]
    headers = ("AT", "ACTION", "OUTCOME", "ACTOR", "DETAIL")
    return Answer(value=rows, text=table(headers, lines, f"no events of {deployment}"))


@command(app, "log", offline=False)
def log(
    where: Target,
    deployment: DeploymentArgument,
    size: Annotated[
        int, typer.Option("--bytes", help="How much of its end to show.", min=1, max=256 * 1024)
    ] = 16 * 1024,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing what it writes (Ctrl-C ends).")
    ] = False,
) -> Answer:
    """Print the tail of a process deployment's server log (admins)."""
    with where.client() as api:
        path = f"/api/deployments/{deployment_id(api, deployment)}/log"
        chunk = api.get(path, limit=size)
        if not follow:
            return Answer(value=chunk, text=chunk["text"].rstrip("\n"))
        typer.echo(chunk["text"], nl=False)
        try:
            while True:  # the console's way too: ask for what came after the last end
                time.sleep(1.0)
                chunk = api.get(path, offset=chunk["end"])
                typer.echo(chunk["text"], nl=False)
        except KeyboardInterrupt:
            return Answer(value=chunk, text="")


def _shown(key: str, value: Any) -> str:
    """Return a field of ``show`` as text: an idle step that is not set is ``off``."""
    if value is None and key in _IDLE_STEPS.values():
        return _OFF
    return _text(value)


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(_text(item) for item in value) or "-"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_text(v)}" for k, v in value.items()) or "-"
    return "-" if value is None else str(value)
