"""The fit check and eviction plans: pure functions of the inventory and the deployments.

A deployment holds memory on each GPU it lists, by its state (``Deployment.gib_in``). It
fits in a target state when, on every one of its GPUs, what the others hold plus what it
would hold is within the GPU's memory. A plan says which lower-priority deployments to put
to sleep or stop so that it fits:

1. only deployments of strictly lower priority that hold memory on a GPU that is short;
2. the lowest priority first (among equals, the one idle longest first);
3. sleeping before stopping: every candidate that can sleep is put to sleep, in that
   order, until it fits; only then are candidates stopped, in the same order;
4. then what turned out not to be needed is dropped again (the highest priority first),
   and a stop that a sleep would do is made a sleep.

One model serves this machine and a Ray cluster's nodes (``nodes.py``): the same ``Holding``,
``GpuFit``, ``Fit``, ``Eviction`` and ``Plan``, built by the same constructors here
(``Plan.fitting``, ``Plan.infeasible``, ``Plan.making_room``, ``Eviction.of``), and the same
order of candidates (``eviction_order``). What differs is what a GPU holds: here memory, which
a sleep shrinks; on Ray a whole GPU, which only a stop gives back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from dgxmm.fleet.backends.protocol import BackendKind
from dgxmm.fleet.deployments.deployment import Deployment, DeploymentState
from dgxmm.fleet.placement.inventory import GpuInventory

__all__ = [
    "Eviction",
    "EvictionAction",
    "Fit",
    "GpuFit",
    "Holding",
    "Plan",
    "check_fit",
    "eviction_order",
    "gpu_holdings",
    "make_plan",
]

_EPSILON = 1e-6  # GiB: float sums must not refuse an exact fit


class EvictionAction(StrEnum):
    """What a plan does to a deployment in its way."""

    SLEEP = "sleep"
    STOP = "stop"


@dataclass(frozen=True, slots=True, kw_only=True)
class Holding:
    """Memory one deployment holds on one GPU."""

    deployment_id: int
    name: str
    state: DeploymentState
    gib: float

    @classmethod
    def of(cls, deployment: Deployment) -> Holding:
        """What ``deployment`` holds on each of its GPUs in its state now."""
        return cls(
            deployment_id=deployment.id,
            name=deployment.name,
            state=deployment.state,
            gib=deployment.held_gib,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuFit:
    """One GPU, seen from the deployment being placed."""

    index: int
    name: str
    memory_gib: float
    held_by_others_gib: float
    needed_gib: float

    @property
    def free_gib(self) -> float:
        """Return what the others leave free."""
        return self.memory_gib - self.held_by_others_gib

    @property
    def short_gib(self) -> float:
        """Return how much is missing (0 when it fits)."""
        short = self.needed_gib - self.free_gib
        return short if short > _EPSILON else 0.0

    def to_json(self) -> dict[str, Any]:
        """Return the GPU's figures as JSON values."""
        return {
            "index": self.index,
            "name": self.name,
            "memory_gib": self.memory_gib,
            "held_by_others_gib": self.held_by_others_gib,
            "needed_gib": self.needed_gib,
            "free_gib": self.free_gib,
            "short_gib": self.short_gib,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Fit:
    """Whether a deployment fits in a state, and why (which GPU, how many GiB short)."""

    fits: bool
    reason: str
    gpus: tuple[GpuFit, ...] = ()
    node: str | None = None  # ray: the node it fits on (or, for a plan, the node chosen)

    def to_json(self) -> dict[str, Any]:
        """Return the fit as JSON values."""
        return {
            "fits": self.fits,
            "reason": self.reason,
            "gpus": [g.to_json() for g in self.gpus],
            "node": self.node,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Eviction:
    """One step of a plan: put a deployment to sleep or stop it."""

    deployment_id: int
    name: str
    priority: int
    state: DeploymentState  # its state now
    action: EvictionAction
    frees_gib: float  # on each of its GPUs

    @classmethod
    def of(cls, deployment: Deployment, action: EvictionAction, frees_gib: float) -> Eviction:
        """The step that puts ``deployment`` to sleep or stops it, freeing ``frees_gib``."""
        return cls(
            deployment_id=deployment.id,
            name=deployment.name,
            priority=deployment.priority,
            state=deployment.state,
            action=action,
            frees_gib=frees_gib,
        )

    def to_json(self) -> dict[str, Any]:
        """Return the step as JSON values."""
        return {
            "deployment_id": self.deployment_id,
            "name": self.name,
            "priority": self.priority,
            "state": self.state.value,
            "action": self.action.value,
            "frees_gib": self.frees_gib,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """What would make a deployment fit: the evictions, shown before anything runs."""

    deployment_id: int
    target: DeploymentState
    fit: Fit  # as things are now
    feasible: bool  # False: even every eviction allowed would not make it fit
    evictions: tuple[Eviction, ...]
    reason: str
    node: str | None = None  # ray: the node it makes room on; evictions are all there

    @classmethod
    def fitting(cls, target: Deployment, state: DeploymentState, fit: Fit) -> Plan:
        """The plan of a deployment that fits as things are: nothing to evict."""
        return cls(
            deployment_id=target.id,
            target=state,
            fit=fit,
            feasible=True,
            evictions=(),
            reason=fit.reason,
            node=fit.node,
        )

    @classmethod
    def infeasible(cls, target: Deployment, state: DeploymentState, fit: Fit, why: str) -> Plan:
        """The plan of a deployment no allowed eviction makes fit, and why not."""
        return cls(
            deployment_id=target.id,
            target=state,
            fit=fit,
            feasible=False,
            evictions=(),
            reason=f"{fit.reason}; {why}",
        )

    @classmethod
    def making_room(
        cls,
        target: Deployment,
        state: DeploymentState,
        fit: Fit,
        evictions: tuple[Eviction, ...],
        *,
        where: str = "",
        node: str | None = None,
    ) -> Plan:
        """The plan whose ``evictions`` make room for ``target`` (``where``: on which node)."""
        steps = ", ".join(f"{e.action.value} {e.name} (priority {e.priority})" for e in evictions)
        return cls(
            deployment_id=target.id,
            target=state,
            fit=fit,
            feasible=True,
            evictions=evictions,
            reason=f"{fit.reason}; to make room{where}: {steps}",
            node=node,
        )

    @property
    def fits_now(self) -> bool:
        """Tell whether it fits without evicting anything."""
        return self.fit.fits

    def to_json(self) -> dict[str, Any]:
        """Return the plan as JSON values."""
        return {
            "deployment_id": self.deployment_id,
            "target": self.target.value,
            "fits_now": self.fits_now,
            "feasible": self.feasible,
            "evictions": [e.to_json() for e in self.evictions],
            "reason": self.reason,
            "fit": self.fit.to_json(),
            "node": self.node,
        }


def gpu_holdings(
    inventory: GpuInventory, deployments: Sequence[Deployment]
) -> dict[int, list[Holding]]:
    """Return, per GPU index of the inventory, what each deployment holds on it now."""
    found: dict[int, list[Holding]] = {gpu.index: [] for gpu in inventory.gpus}
    for deployment in _on_this_machine(deployments):
        if deployment.held_gib <= 0:
            continue
        for index in deployment.gpus:
            found.setdefault(index, []).append(Holding.of(deployment))
    return found


def check_fit(
    inventory: GpuInventory,
    deployments: Sequence[Deployment],
    target: Deployment,
    state: DeploymentState,
    *,
    states: Mapping[int, DeploymentState] | None = None,
) -> Fit:
    """Return whether ``target`` fits in ``state`` beside the others (``states`` overrides)."""
    changed = states or {}
    deployments = _on_this_machine(deployments)
    needed = target.gib_in(state)
    known = {gpu.index: gpu for gpu in inventory.gpus}
    missing = [index for index in target.gpus if index not in known]
    if missing:
        have = ", ".join(str(i) for i in sorted(known)) or "none"
        return Fit(
            fits=False,
            reason=f"GPU {missing[0]} is not in this machine's inventory (GPUs: {have})",
        )
    gpus = []
    for index in target.gpus:
        held = 0.0
        for other in deployments:
            if other.id != target.id and index in other.gpus:
                held += other.gib_in(changed.get(other.id, other.state))
        gpu = known[index]
        gpus.append(
            GpuFit(
                index=index,
                name=gpu.name,
                memory_gib=gpu.memory_gib,
                held_by_others_gib=held,
                needed_gib=needed,
            )
        )
    short = [g for g in gpus if g.short_gib > 0]
    if not short:
        if not gpus or needed == 0:
            return Fit(fits=True, reason="fits: it holds no GPU memory", gpus=tuple(gpus))
        free = ", ".join(f"GPU {g.index}: {_gib(g.free_gib)} GiB free" for g in gpus)
        return Fit(fits=True, reason=f"fits: needs {_gib(needed)} GiB; {free}", gpus=tuple(gpus))
    parts = [
        f"GPU {g.index} ({g.name}, {_gib(g.memory_gib)} GiB) has {_gib(g.free_gib)} GiB free "
        f"and {target.name} needs {_gib(needed)} GiB {_state_word(state)}: "
        f"{_gib(g.short_gib)} GiB short" + _holders(deployments, target, g.index, changed)
        for g in short
    ]
    return Fit(fits=False, reason="; ".join(parts), gpus=tuple(gpus))


def make_plan(
    inventory: GpuInventory,
    deployments: Sequence[Deployment],
    target: Deployment,
    state: DeploymentState,
) -> Plan:
    """Return the evictions that make ``target`` fit in ``state``, following the rules above."""
    deployments = _on_this_machine(deployments)
    fit = check_fit(inventory, deployments, target, state)
    if fit.fits:
        return Plan.fitting(target, state, fit)
    short = {g.index for g in fit.gpus if g.short_gib > 0}
    candidates = sorted(
        (
            d
            for d in deployments
            if d.id != target.id
            and d.priority < target.priority
            and d.state in (DeploymentState.RUNNING, DeploymentState.SLEEPING)
            and d.held_gib > 0
            and short & set(d.gpus)
        ),
        key=eviction_order,
    )
    states: dict[int, DeploymentState] = {}

    def fits() -> bool:
        return check_fit(inventory, deployments, target, state, states=states).fits

    for d in candidates:  # sleeping before stopping
        if fits():
            break
        if d.state is DeploymentState.RUNNING and d.memory_gib_asleep < d.memory_gib_awake:
            states[d.id] = DeploymentState.SLEEPING
    for d in candidates:
        if fits():
            break
        states[d.id] = DeploymentState.STOPPED
    if not fits():
        return Plan.infeasible(
            target,
            state,
            fit,
            f"even evicting every deployment of lower priority than {target.priority} would "
            "not make room"
            if candidates
            else f"no deployment of lower priority than {target.priority} holds memory there "
            "to evict",
        )
    for d in reversed(candidates):  # drop what is not needed, the highest priority first
        chosen = states.pop(d.id, None)
        if chosen is None or fits():
            continue
        if chosen is DeploymentState.STOPPED and d.state is DeploymentState.RUNNING:
            states[d.id] = DeploymentState.SLEEPING
            if fits():
                continue
        states[d.id] = chosen
    evictions = tuple(
        Eviction.of(
            d,
            EvictionAction.STOP
            if states[d.id] is DeploymentState.STOPPED
            else EvictionAction.SLEEP,
            d.held_gib - d.gib_in(states[d.id]),
        )
        for d in candidates
        if d.id in states
    )
    return Plan.making_room(target, state, fit, evictions)


def eviction_order(deployment: Deployment) -> tuple[int, int, int]:
    """Order candidates for eviction: the lowest priority, then the one idle longest, first."""
    return (deployment.priority, deployment.last_request_at or 0, deployment.id)


def _on_this_machine(deployments: Sequence[Deployment]) -> list[Deployment]:
    # A ray deployment's GPUs are on a node of its cluster, counted by placement.py.
    return [d for d in deployments if d.backend is not BackendKind.RAY]


def _holders(
    deployments: Sequence[Deployment],
    target: Deployment,
    index: int,
    states: Mapping[int, DeploymentState],
) -> str:
    held = []
    for other in deployments:
        state = states.get(other.id, other.state)
        if other.id != target.id and index in other.gpus and other.gib_in(state) > 0:
            held.append(f"{other.name} {_gib(other.gib_in(state))} GiB {_state_word(state)}")
    return f" (held: {', '.join(held)})" if held else ""


def _state_word(state: DeploymentState) -> str:
    return "asleep" if state is DeploymentState.SLEEPING else "awake"


def _gib(value: float) -> str:
    return f"{round(value, 2):g}"
