"""The deployments API: define, change, remove; start, stop, sleep, wake; plans and events.

Reads need any token, everything else an admin's; a viewer reads a deployment, its events
and its last error masked (``server/access/redaction.py``: no secrets, no model-server output).
Refused fields answer 400 naming the field, wrong types 422 (strict bodies), a start or wake
that does not fit 409 with the reason (which GPU, how many GiB short), a model server that
failed 502.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import FileResponse, Response
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from dgxmm.decider.idle.budgets import budget_status, read_choice
from dgxmm.errors import InvalidInput, NotFound
from dgxmm.fleet import (
    DEFAULT_TAIL,
    LOG_NAME,
    MAX_CHUNK,
    BackendKind,
    Deployment,
    DeploymentState,
    Fleet,
    GpuGauge,
    IdlePolicy,
    read_log,
)
from dgxmm.server.access.redaction import deployment_shown_to, event_shown_to
from dgxmm.server.access.tokens import Identity
from dgxmm.server.edge.bodies import Body
from dgxmm.server.edge.deps import (
    Admin,
    FleetDep,
    HostDep,
    PathId,
    QueryId,
    QueryInstant,
    ServicesDep,
    Viewer,
)
from dgxmm.server.edge.openapi import answers
from dgxmm.server.edge.paging import (
    CursorQuery,
    LimitQuery,
    make_cursor,
    page_after,
    read_cursor,
    read_limit,
)
from dgxmm.server.host import Host
from dgxmm.server.lists.jobs import iso
from dgxmm.server.model_check import MAX_PROMPT, CheckKind, ModelCheck, run_check
from dgxmm.store import reading
from dgxmm.time_units import DAY_US

__all__ = ["by_name", "deployment_json", "on_node", "router"]

router = APIRouter(prefix="/api/deployments", tags=["deployments"])


# The idle settings, the same in a new deployment and a change (issue 25).
SleepAfter = Annotated[
    float | None,
    Field(description="idle ladder: sleep at level 1 after this long without requests"),
]
DeepenAfter = Annotated[
    float | None,
    Field(description="idle ladder: deepen to level 2 after this long (after the sleep)"),
]
StopAfter = Annotated[float | None, Field(description="idle ladder: stop after this long idle")]
# Text checked by the domain (400 naming the field), its values listed for OpenAPI.
Policy = Annotated[str | None, Field(json_schema_extra={"enum": [p.value for p in IdlePolicy]})]
# Checked by the domain (400 naming the alias); bounded here so a body stays small.
Aliases = Annotated[
    list[Annotated[str, Field(max_length=1000)]] | None,
    Field(max_length=100, description="other names a request may give as its model"),
]
ConcurrencyLimit = Annotated[
    int | None,
    Field(description="requests the proxy passes to it at once (1-10,000); null: no limit"),
]
QueueBound = Annotated[
    int | None,
    Field(description="past the limit, how many requests wait for a slot (0-10,000; then 429)"),
]
Lead = Annotated[
    str | float | None,
    Field(description="how early scheduled wakes and starts begin: off, measured or seconds"),
]
# Any JSON, checked by the domain (400 naming idle_wait_budget or its key, never 422); set
# and cleared whole.
Budget = Annotated[
    Any,
    Field(
        description="the priced policy's wait budget: a mean added wait per request in ms "
        'and/or a p99 in s, e.g. {"mean_ms": 50, "p99_s": 5}; null: none'
    ),
]


class CreateDeployment(Body):
    """A new deployment: a process (command, port), an external server (base_url), or a
    command on a Ray cluster (command, ray_address, num_gpus, optionally ray_node)."""

    # Required, but checked by the domain beside every other field (400 listing them all),
    # not by pydantic alone before it (422 naming only what is missing).
    name: str | None = Field(default=None, max_length=200)
    model: str | None = Field(default=None, max_length=1000)
    aliases: Aliases = None
    backend: BackendKind = Field(strict=False)
    command: list[str] | None = None
    port: int | None = None
    environment: dict[str, str] | None = None
    base_url: str | None = Field(default=None, max_length=2000)
    gpus: list[int] = Field(default_factory=list)
    memory_gib_awake: float = 0.0
    memory_gib_asleep: float = 0.0
    priority: int = 50
    time_zone: str | None = Field(default=None, max_length=100)
    startup_timeout_s: float | None = None
    wake_on_request: bool = True
    max_concurrent_requests: ConcurrencyLimit = None
    max_queued_requests: QueueBound = None
    loading_progress: bool = False
    sleep_timeout_s: float | None = None
    sleep_level: int | None = None
    ray_address: str | None = Field(default=None, max_length=1000)
    ray_node: str | None = Field(default=None, max_length=1000)
    num_gpus: int | None = None
    idle_sleep_after_s: SleepAfter = None
    idle_deepen_after_s: DeepenAfter = None
    idle_stop_after_s: StopAfter = None
    idle_policy: Policy = None
    wake_lead: Lead = None
    idle_wait_budget: Budget = None


class UpdateDeployment(Body):
    """The fields to change; what is not given stays as it is."""

    name: str | None = Field(default=None, max_length=200)
    model: str | None = Field(default=None, max_length=1000)
    aliases: Aliases = None
    backend: BackendKind | None = Field(default=None, strict=False)
    command: list[str] | None = None
    port: int | None = None
    environment: dict[str, str] | None = None
    base_url: str | None = Field(default=None, max_length=2000)
    gpus: list[int] | None = None
    memory_gib_awake: float | None = None
    memory_gib_asleep: float | None = None
    priority: int | None = None
    time_zone: str | None = Field(default=None, max_length=100)
    startup_timeout_s: float | None = None
    wake_on_request: bool | None = None
    max_concurrent_requests: ConcurrencyLimit = None
    max_queued_requests: QueueBound = None
    loading_progress: bool | None = None
    sleep_timeout_s: float | None = None
    sleep_level: int | None = None
    ray_address: str | None = Field(default=None, max_length=1000)
    ray_node: str | None = Field(default=None, max_length=1000)
    num_gpus: int | None = None
    idle_sleep_after_s: SleepAfter = None
    idle_deepen_after_s: DeepenAfter = None
    idle_stop_after_s: StopAfter = None
    idle_policy: Policy = None
    wake_lead: Lead = None
    idle_wait_budget: Budget = None


class ActionBody(Body):
    """``{"plan": false}``: a start or wake that does not fit evicts nothing (409 instead)."""

    plan: bool | None = None


def by_name(deployment: Deployment) -> str:
    """Return the key the deployments are listed and paged by."""
    return deployment.name


def on_node(deployment: Deployment, node: str) -> bool:
    """Tell whether a deployment runs on ``node``: a Ray node's id or address, else local."""
    placement = deployment.placement
    if deployment.backend is not BackendKind.RAY:
        return node == "local"
    if placement is not None and node in (placement.node_id, placement.node_address):
        return True
    return deployment.ray_node == node


def deployment_json(deployment: Deployment, host: Host, who: Identity) -> dict[str, Any]:
    """Return a deployment as the API shows ``who`` it, with instants in the host's zone."""
    return {
        **deployment_shown_to(deployment, who).to_json(),
        "held_gib": deployment.held_gib,
        "state_since": iso(deployment.state_since, host),
        "last_request_at": iso(deployment.last_request_at, host),
        "created_at": iso(deployment.created_at, host),
        "updated_at": iso(deployment.updated_at, host),
    }


@router.get("", responses=answers(400))
def list_deployments(
    fleet: FleetDep,
    host: HostDep,
    who: Viewer,
    *,
    limit: LimitQuery = None,
    cursor: CursorQuery = None,
    state: DeploymentState | None = None,
    node: Annotated[
        str | None,
        Query(max_length=200, description="a Ray node's id or address, or local"),
    ] = None,
) -> dict[str, Any]:
    """The deployments by name, ``limit`` at a time (100), and each GPU with what the
    deployments hold on it; ``next_cursor`` pages on."""
    size = read_limit(limit)
    after = read_cursor(cursor, "deployments")
    if after is not None and not isinstance(after, str):
        raise InvalidInput("cursor", "is not a cursor of deployments: pass next_cursor as given")
    shown = [
        d
        for d in fleet.deployments.list()
        if (state is None or d.state is state) and (node is None or on_node(d, node))
    ]
    page, last = page_after(shown, by_name, after, size)
    gauges = fleet.gauges.read()
    return {
        "deployments": [deployment_json(d, host, who) for d in page],
        "next_cursor": None if last is None else make_cursor("deployments", last),
        "inventory": {"source": fleet.inventory.source.value, "note": fleet.inventory.note},
        # Beside what the deployments declare, what NVML measures now; None: not measured,
        # and ``measured_note`` says why.
        "measured_note": gauges.error,
        "gpus": [
            {
                "index": gpu.index,
                "name": gpu.name,
                "memory_gib": gpu.memory_gib,
                "held_gib": sum(h.gib for h in holdings),
                "holdings": [
                    {
                        "deployment_id": h.deployment_id,
                        "name": h.name,
                        "state": h.state.value,
                        "gib": h.gib,
                    }
                    for h in holdings
                ],
                "measured": _measured(gauges.of(gpu.index)),
            }
            for gpu, holdings in fleet.gpus()
        ],
        "ray_nodes": [
            {
                "node_id": node.node_id,
                "address": node.address,
                "alive": node.alive,
                "note": node.note,
                "gpus": [
                    {
                        "index": gpu.index,
                        "name": gpu.name,
                        "memory_gib": gpu.memory_gib,
                        "held_by": [h.name for h in holdings],
                    }
                    for gpu, holdings in gpus
                ],
            }
            for node, gpus in fleet.ray_nodes()
        ],
    }


def _measured(gauge: GpuGauge | None) -> dict[str, float | None] | None:
    """A GPU as NVML measures it, beside what is declared; None where it was not measured."""
    if gauge is None:
        return None
    return {
        "memory_used_gib": gauge.memory_used_gib,
        "utilization_pct": gauge.utilization_pct,
        "temperature_c": gauge.temperature_c,
    }


@router.post("", status_code=201, responses=answers(400, 409))
def create_deployment(
    body: CreateDeployment, fleet: FleetDep, host: HostDep, who: Admin
) -> dict[str, Any]:
    """Create a stopped deployment; a refused field answers 400 naming it."""
    keys = body.model_dump(exclude_unset=True)
    keys.setdefault("time_zone", host.time_zone.key)
    for defaulted in ("startup_timeout_s", "sleep_timeout_s", "sleep_level"):
        if keys.get(defaulted) is None:
            keys.pop(defaulted, None)
    return deployment_json(fleet.deployments.create(actor=who.actor, **keys), host, who)


@router.get("/{deployment_id}", responses=answers(404))
def get_deployment(
    deployment_id: PathId, fleet: FleetDep, host: HostDep, who: Viewer
) -> dict[str, Any]:
    """One deployment."""
    return deployment_json(fleet.deployments.get(deployment_id), host, who)


@router.patch("/{deployment_id}", responses=answers(400, 404, 409))
def update_deployment(
    deployment_id: PathId, body: UpdateDeployment, fleet: FleetDep, host: HostDep, who: Admin
) -> dict[str, Any]:
    """Change some fields; what it runs changes only while it is stopped or failed (409)."""
    keys = body.model_dump(exclude_unset=True)
    changed = fleet.deployments.update(deployment_id, who.actor, **keys)
    return deployment_json(changed, host, who)


@router.delete("/{deployment_id}", responses=answers(404, 409, 502))
def remove_deployment(deployment_id: PathId, fleet: FleetDep, who: Admin) -> dict[str, Any]:
    """Remove a deployment: its process is stopped, its rows and schedules go (audited)."""
    name = fleet.deployments.get(deployment_id).name
    fleet.remove(deployment_id, actor=who.actor)
    return {"removed": deployment_id, "name": name}


def _plans(body: ActionBody | None = None, plan: Annotated[bool | None, Query()] = None) -> bool:
    """Whether a start or wake may evict: the body's ``plan``, else ``?plan=``, else yes."""
    if body is not None and body.plan is not None:
        return body.plan
    return True if plan is None else plan


# A start and a wake take the same ``plan`` choice, read once here for both.
Plans = Annotated[bool, Depends(_plans)]


@router.post("/{deployment_id}/start", responses=answers(404, 409, 502))
def start_deployment(
    deployment_id: PathId, fleet: FleetDep, who: Admin, plans: Plans
) -> dict[str, Any]:
    """Start it and wait for the start-up gate; evicts what ``/plan`` shows unless plan=false."""
    return fleet.deployer.start(deployment_id, actor=who.actor, plans=plans).to_json()


@router.post("/{deployment_id}/wake", responses=answers(404, 409, 502))
def wake_deployment(
    deployment_id: PathId, fleet: FleetDep, who: Admin, plans: Plans
) -> dict[str, Any]:
    """Wake it and wait for the start-up gate; evicts what ``/plan`` shows unless plan=false."""
    return fleet.deployer.wake(deployment_id, actor=who.actor, plans=plans).to_json()


@router.post("/{deployment_id}/stop", responses=answers(404, 409, 502))
def stop_deployment(deployment_id: PathId, fleet: FleetDep, who: Admin) -> dict[str, Any]:
    """Stop it (SIGTERM, then SIGKILL after the grace period, for a process dgxmm owns)."""
    return fleet.deployer.stop(deployment_id, actor=who.actor).to_json()


@router.post("/{deployment_id}/sleep", responses=answers(404, 409, 502))
def sleep_deployment(deployment_id: PathId, fleet: FleetDep, who: Admin) -> dict[str, Any]:
    """Put it to sleep once its requests in flight finish."""
    return fleet.deployer.sleep(deployment_id, actor=who.actor).to_json()


@router.get("/{deployment_id}/plan", responses=answers(404))
def plan_deployment(deployment_id: PathId, fleet: FleetDep, _: Viewer) -> dict[str, Any]:
    """What a start or wake would evict to make room, before it runs."""
    return fleet.deployer.plan(deployment_id, DeploymentState.RUNNING).to_json()


@router.get("/{deployment_id}/wait-budget", responses=answers(404))
def wait_budget(deployment_id: PathId, fleet: FleetDep, host: HostDep, _: Viewer) -> dict[str, Any]:
    """What its wait budget chose and why (the daily wait_budgets job's record), and the price
    its priced policy decides at."""
    deployment = fleet.deployments.get(deployment_id)
    with reading(fleet.store.engine) as connection:
        status = budget_status(deployment, read_choice(connection, deployment_id))
    budget = deployment.idle_wait_budget
    return {
        "budget": None if budget is None else budget.to_json(),
        "state": status.state.value,
        "price": status.price,
        "says": status.says,
        "computed_at": None if status.choice is None else iso(status.choice.computed_at, host),
        "choice": None if status.choice is None else status.choice.to_json(),
    }


@router.get("/{deployment_id}/events", responses=answers(404))
def deployment_events(
    deployment_id: PathId,
    *,
    fleet: FleetDep,
    host: HostDep,
    who: Viewer,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    before: QueryId = None,
) -> dict[str, Any]:
    """Its events, newest first (``before`` an event id pages back)."""
    fleet.deployments.get(deployment_id)  # 404 for one that does not exist
    found = fleet.events.list(deployment_id, limit, before_id=before)
    events = [event_shown_to(e, who) for e in found]
    return {"events": [{**e.to_json(), "at": iso(e.at_us, host)} for e in events]}


@router.get("/{deployment_id}/rollups", responses=answers(404))
def deployment_rollups(
    deployment_id: PathId,
    fleet: FleetDep,
    host: HostDep,
    _: Viewer,
    since_us: QueryInstant = None,
    until_us: QueryInstant = None,
) -> dict[str, Any]:
    """Its per-minute rollups (default: the last day), oldest first."""
    fleet.deployments.get(deployment_id)
    until = host.clock.now_us() if until_us is None else until_us
    since = until - DAY_US if since_us is None else since_us
    rows = fleet.metrics.rollups(deployment_id, since, until)
    return {"rollups": [{**r.to_json(), "minute": iso(r.minute_us, host)} for r in rows]}


def _log_path(fleet: Fleet, deployment_id: int) -> Path:
    deployment = fleet.deployments.get(deployment_id)
    if deployment.backend is not BackendKind.PROCESS:
        raise NotFound("process deployment (with a server log)", deployment.name)
    return fleet.backends.run_dir(deployment_id) / LOG_NAME


@router.get("/{deployment_id}/log", responses=answers(404))
def deployment_log(
    deployment_id: PathId,
    fleet: FleetDep,
    _: Admin,
    offset: Annotated[int | None, Query(ge=0, le=2**62)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_CHUNK)] = DEFAULT_TAIL,
) -> dict[str, Any]:
    """A process deployment's server log: its tail, or what follows ``offset`` (bounded)."""
    # Admins only: a model server's output can carry what its requests held.
    return read_log(_log_path(fleet, deployment_id), offset=offset, limit=limit).to_json()


@router.get("/{deployment_id}/log/download", responses=answers(404))
def download_log(deployment_id: PathId, fleet: FleetDep, _: Admin) -> Response:
    """The whole server log as a text file (the backend rotates it past 64 MiB)."""
    path = _log_path(fleet, deployment_id)
    name = fleet.deployments.get(deployment_id).name
    if not path.exists():
        return Response("", media_type="text/plain; charset=utf-8")
    return FileResponse(path, media_type="text/plain; charset=utf-8", filename=f"{name}.log")


# -- a model check (issue 31): one chat or completion, its answer and its speed ---------------


class CheckBody(Body):
    """``{kind, prompt, max_tokens?}``: what to send (``server/model_check.py``)."""

    kind: CheckKind = Field(default=CheckKind.CHAT, strict=False)
    prompt: str = Field(max_length=MAX_PROMPT * 4)  # its own check names the bound
    max_tokens: int = 64


@router.post("/{deployment_id}/check", responses=answers(400, 404, 409, 502))
async def check_deployment(
    deployment_id: PathId, body: CheckBody, services: ServicesDep, _: Admin
) -> dict[str, Any]:
    """Send one chat or completion to a running deployment and answer its reply and speed.

    Through the proxy when one runs in this server, else straight to the server; never wakes
    anything (409 with the state). A failing or silent server answers 502 saying which;
    past the checks at once (``MAX_CHECKS``), 409. Async: a hung check holds no worker
    thread, so the other routes keep answering.
    """
    fleet = services.fleet
    assert fleet is not None
    check = ModelCheck(kind=body.kind, prompt=body.prompt, max_tokens=body.max_tokens)
    deployment = await run_in_threadpool(fleet.deployments.get, deployment_id)
    with services.model_checks.slot():
        result = await run_check(
            deployment,
            check,
            proxy_url=services.proxy_url,
            check_key=services.proxy_check_key,
        )
    return result.to_json()
