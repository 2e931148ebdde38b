"""A deployment as the store holds it: one typed row, and the states it moves through.

A deployment holds GPU memory by its state: awake (``running``, and ``starting`` or
``stopping`` while an action is under way) it holds ``memory_gib_awake`` on each of its GPUs,
asleep ``memory_gib_asleep``; ``stopped`` and ``failed`` hold nothing, because dgxmm stops
what is left of a process whose deployment failed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import Row

from dgxmm.fleet.backends.protocol import BackendKind
from dgxmm.fleet.deployments.idle import (
    LEAD_OFF,
    IdleLadder,
    IdlePolicy,
    LeadKind,
    WaitBudget,
    WakeLead,
    parse_wait_budget,
    parse_wake_lead,
)
from dgxmm.time_units import SECOND_US

NO_LADDER = IdleLadder()

__all__ = [
    "AWAKE_STATES",
    "DEFAULT_SLEEP_LEVEL",
    "DEFAULT_SLEEP_TIMEOUT_S",
    "SLEEP_LEVELS",
    "Deployment",
    "DeploymentState",
    "Placement",
    "wake_lead_column",
    "wake_lead_of",
]

# vLLM's sleep levels: 1 moves the weights to CPU memory and drops the KV cache (a wake
# copies them back); 2 drops both (a wake reloads the weights from disk).
SLEEP_LEVELS = (1, 2)
DEFAULT_SLEEP_LEVEL = 1
# A sleep (mode=wait) first lets the requests in flight finish, minutes for long
# generations, then copies the weights out: seconds to a minute for a large model.
DEFAULT_SLEEP_TIMEOUT_S = 300.0


class DeploymentState(StrEnum):
    """Where a deployment is in its life."""

    STOPPED = "stopped"
    STARTING = "starting"  # launched, waiting for the start-up gate
    RUNNING = "running"
    SLEEPING = "sleeping"
    STOPPING = "stopping"
    FAILED = "failed"  # its server is gone or never got healthy; see last_error

    @property
    def is_awake(self) -> bool:
        """Tell whether a deployment in this state holds its awake memory."""
        return self in AWAKE_STATES


AWAKE_STATES = frozenset(
    {DeploymentState.STARTING, DeploymentState.RUNNING, DeploymentState.STOPPING}
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    """Where a ray deployment's actor runs: its node and the URL its server answers on."""

    node_id: str  # Ray's node id (hex)
    node_address: str
    url: str

    def to_json(self) -> dict[str, str]:
        """Return the placement as JSON values."""
        return {"node_id": self.node_id, "node_address": self.node_address, "url": self.url}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Placement:
        """Read a placement written by ``to_json``."""
        return cls(
            node_id=str(data["node_id"]), node_address=str(data["node_address"]), url=data["url"]
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Deployment:
    """One deployment: what it runs, where, what it holds, and its state."""

    id: int
    name: str
    model: str
    backend: BackendKind
    command: tuple[str, ...] | None  # process, ray: argv, "{port}" replaced by the port
    port: int | None  # process; ray: None lets the actor pick a free port on its node
    environment: Mapping[str, str]  # process, ray: added to the environment it inherits
    base_url: str | None  # external
    # process: GPU indices of the inventory; ray: those Ray gave its actor on its node
    gpus: tuple[int, ...]
    memory_gib_awake: float  # per GPU it holds
    memory_gib_asleep: float  # per GPU, asleep
    priority: int  # 0-100; plans evict lower priorities only
    time_zone: str
    startup_timeout_s: float  # starts and wakes: the server, its health and the post-wake check
    state: DeploymentState
    state_since: int  # microseconds since the epoch
    last_error: str | None
    last_request_at: int | None  # the last sample that saw request activity
    created_at: int
    updated_at: int
    wake_on_request: bool = True  # a request through the proxy wakes it when it sleeps
    # Defaulted so that a row of a dgxmm before them, built by hand in a test, still reads.
    sleep_timeout_s: float = DEFAULT_SLEEP_TIMEOUT_S  # how long a sleep may take
    sleep_level: int = DEFAULT_SLEEP_LEVEL  # 1 or 2, as vLLM's POST /sleep?level=
    ray_address: str | None = None  # ray: the cluster (host:port of its GCS)
    ray_node: str | None = None  # ray: only a node with this resource or id prefix
    num_gpus: int | None = None  # ray: the GPUs its actor asks Ray for
    placement: Placement | None = None  # ray: where its actor runs, while it lives
    idle: IdleLadder = NO_LADDER  # its idle ladder (all steps off by default)
    idle_policy: IdlePolicy = IdlePolicy.LADDER
    wake_lead: WakeLead = LEAD_OFF  # how early its scheduled wakes and starts begin
    idle_wait_budget: WaitBudget | None = None  # what the priced policy may spend (issue 42)
    asleep_level: int | None = None  # while sleeping: the level it sleeps at (1 or 2)
    idle_paused: str | None = None  # why its idle policy is paused (a step failed), or None
    aliases: tuple[str, ...] = ()  # other names a request may give as its model
    max_concurrent_requests: int | None = None  # the proxy's limit at once; None: no limit
    max_queued_requests: int = 100  # past the limit, how many wait for a slot (then 429)
    loading_progress: bool = False  # a held stream gets progress chunks while it wakes

    @property
    def sleeps_at(self) -> int:
        """Return the level it sleeps at now (its configured level for a row of before)."""
        return self.asleep_level or self.sleep_level

    @property
    def url(self) -> str:
        """Return the URL its server answers on (a process listens on the loopback).

        A ray deployment's is the one its actor reported, and empty while it has no actor.
        """
        if self.base_url is not None:
            return self.base_url
        if self.backend is BackendKind.RAY:
            return self.placement.url if self.placement is not None else ""
        return f"http://127.0.0.1:{self.port}"

    @property
    def gpu_count(self) -> int:
        """Return how many GPUs its memory is held on (a ray deployment's: those it asks for)."""
        if self.backend is BackendKind.RAY:
            return self.num_gpus or 0
        return len(self.gpus)

    @property
    def held_gib(self) -> float:
        """Return the memory it holds on each of its GPUs in its current state."""
        return self.gib_in(self.state)

    def gib_in(self, state: DeploymentState) -> float:
        """Return the memory it would hold on each of its GPUs in ``state``."""
        if state.is_awake:
            return self.memory_gib_awake
        if state is DeploymentState.SLEEPING:
            return self.memory_gib_asleep
        return 0.0

    def to_json(self) -> dict[str, Any]:
        """Return the row as JSON values (instants as microseconds)."""
        return {
            "id": self.id,
            "name": self.name,
            "model": self.model,
            "aliases": list(self.aliases),
            "backend": self.backend.value,
            "command": list(self.command) if self.command is not None else None,
            "port": self.port,
            "environment": dict(self.environment),
            "base_url": self.base_url,
            "url": self.url,
            "gpus": list(self.gpus),
            "memory_gib_awake": self.memory_gib_awake,
            "memory_gib_asleep": self.memory_gib_asleep,
            "priority": self.priority,
            "time_zone": self.time_zone,
            "startup_timeout_s": self.startup_timeout_s,
            "wake_on_request": self.wake_on_request,
            "max_concurrent_requests": self.max_concurrent_requests,
            "max_queued_requests": self.max_queued_requests,
            "loading_progress": self.loading_progress,
            "sleep_timeout_s": self.sleep_timeout_s,
            "sleep_level": self.sleep_level,
            "state": self.state.value,
            "state_since_us": self.state_since,
            "last_error": self.last_error,
            "last_request_at_us": self.last_request_at,
            "created_at_us": self.created_at,
            "updated_at_us": self.updated_at,
            "ray_address": self.ray_address,
            "ray_node": self.ray_node,
            "num_gpus": self.num_gpus,
            "placement": self.placement.to_json() if self.placement is not None else None,
            "idle_sleep_after_s": _seconds(self.idle.sleep_after_us),
            "idle_deepen_after_s": _seconds(self.idle.deepen_after_us),
            "idle_stop_after_s": _seconds(self.idle.stop_after_us),
            "idle_policy": self.idle_policy.value,
            "wake_lead": self.wake_lead.to_json(),
            "idle_wait_budget": (
                None if self.idle_wait_budget is None else self.idle_wait_budget.to_json()
            ),
            "asleep_level": self.asleep_level,
            "idle_paused": self.idle_paused,
        }

    @classmethod
    def from_row(cls, row: Row[Any]) -> Deployment:
        """Read a ``deployments`` row."""
        return cls(
            id=int(row.id),
            name=row.name,
            model=row.model,
            aliases=tuple(json.loads(row.aliases)),
            backend=BackendKind(row.backend),
            command=tuple(json.loads(row.command)) if row.command is not None else None,
            port=row.port,
            environment=json.loads(row.environment) if row.environment else {},
            base_url=row.base_url,
            gpus=tuple(json.loads(row.gpus)),
            memory_gib_awake=float(row.memory_gib_awake),
            memory_gib_asleep=float(row.memory_gib_asleep),
            priority=int(row.priority),
            time_zone=row.time_zone,
            startup_timeout_s=float(row.startup_timeout_s),
            wake_on_request=bool(row.wake_on_request),
            max_concurrent_requests=row.max_concurrent_requests,
            max_queued_requests=int(row.max_queued_requests),
            loading_progress=bool(row.loading_progress),
            sleep_timeout_s=float(row.sleep_timeout_s),
            sleep_level=int(row.sleep_level),
            state=DeploymentState(row.state),
            state_since=int(row.state_since),
            last_error=row.last_error,
            last_request_at=row.last_request_at,
            created_at=int(row.created_at),
            updated_at=int(row.updated_at),
            ray_address=row.ray_address,
            ray_node=row.ray_node,
            num_gpus=row.num_gpus,
            placement=Placement.from_json(json.loads(row.placement)) if row.placement else None,
            idle=IdleLadder(
                sleep_after_us=_micros(row.idle_sleep_after_s),
                deepen_after_us=_micros(row.idle_deepen_after_s),
                stop_after_us=_micros(row.idle_stop_after_s),
            ),
            idle_policy=IdlePolicy(row.idle_policy),
            wake_lead=wake_lead_of(row.wake_lead),
            idle_wait_budget=(
                parse_wait_budget(json.loads(row.idle_wait_budget))
                if row.idle_wait_budget
                else None
            ),
            asleep_level=row.asleep_level,
            idle_paused=row.idle_paused,
        )


def wake_lead_of(text: str) -> WakeLead:
    """Read the ``wake_lead`` column: ``off``, ``measured`` or a number of seconds."""
    if text in (LeadKind.OFF.value, LeadKind.MEASURED.value):
        return parse_wake_lead(text)
    return parse_wake_lead(float(text))


def wake_lead_column(lead: WakeLead) -> str:
    """Return the ``wake_lead`` column's text for a setting (``wake_lead_of`` reads it)."""
    shown = lead.to_json()
    return shown if isinstance(shown, str) else repr(shown)


def _seconds(us: int | None) -> float | None:
    return None if us is None else us / SECOND_US


def _micros(seconds: float | None) -> int | None:
    return None if seconds is None else round(seconds * SECOND_US)
