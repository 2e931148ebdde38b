"""The fit check and eviction plans of ray deployments: per node, pure functions.

On Ray a deployment's actor holds whole GPUs (``num_gpus``) from its start to its stop,
asleep or awake: Ray's reservation does not shrink when the server sleeps. So here a GPU is
either free or held by one deployment, and what a node can take is counted in GPUs:

- a start fits on a live node that the deployment's ``ray_node`` allows and that has
  ``num_gpus`` free GPUs, each with at least its awake memory; among those, the node with
  the fewest free GPUs (the tightest fit, leaving whole nodes for big deployments), then
  by node id;
- a wake always fits: its actor still holds its GPUs;
- a plan, when no node fits, picks one node and stops deployments of strictly lower
  priority there, the lowest first (among equals, the one idle longest), until enough
  GPUs are free, then keeps again what turned out not to be needed (the highest priority
  first). Putting one to sleep would free no GPU, so a plan on Ray only stops. The node
  chosen is the one whose plan stops the least: the lowest highest priority stopped, then
  the fewest stops, then by node id. A plan never touches another node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dgxmm.fleet.backends.protocol import BackendKind
from dgxmm.fleet.deployments.deployment import AWAKE_STATES, Deployment, DeploymentState
from dgxmm.fleet.placement.cluster import ClusterInventory, RayNode
from dgxmm.fleet.placement.fit import (
    Eviction,
    EvictionAction,
    Fit,
    GpuFit,
    Holding,
    Plan,
    eviction_order,
)
from dgxmm.words import counted

__all__ = ["check_node_fit", "make_node_plan", "node_holdings"]

_HOLDING_STATES = AWAKE_STATES | {DeploymentState.SLEEPING}
_EVICTABLE = (DeploymentState.RUNNING, DeploymentState.SLEEPING)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Room:
    node: RayNode
    usable: tuple[int, ...]  # its GPUs with enough memory for the target
    held: dict[int, Deployment]  # GPU index -> the ray deployment holding it

    @property
    def free(self) -> list[int]:
        return [index for index in self.usable if index not in self.held]


def node_holdings(
    cluster: ClusterInventory, deployments: Sequence[Deployment]
) -> dict[str, dict[int, list[Holding]]]:
    """Return, per node id and GPU index, what each ray deployment holds there now."""
    found: dict[str, dict[int, list[Holding]]] = {
        node.node_id: {gpu.index: [] for gpu in node.gpus} for node in cluster.nodes
    }
    for deployment, node_id in _placed(deployments):
        for index in deployment.gpus:
            found.setdefault(node_id, {}).setdefault(index, []).append(Holding.of(deployment))
    return found


def check_node_fit(
    cluster: ClusterInventory,
    deployments: Sequence[Deployment],
    target: Deployment,
    state: DeploymentState,
) -> Fit:
    """Return whether ``target`` fits in ``state`` on some node, which one, and why."""
    if target.placement is not None and target.state in _HOLDING_STATES:
        node = cluster.node(target.placement.node_id)
        where = node.name if node is not None else target.placement.node_id[:8]
        return Fit(
            fits=True,
            reason=f"fits: its Ray actor holds its GPUs on node {where}",
            node=target.placement.node_id,
        )
    rooms, refused = _rooms(cluster, deployments, target)
    if not rooms:
        return Fit(fits=False, reason=refused)
    needed = target.num_gpus or 0
    fitting = [room for room in rooms if len(room.free) >= needed]
    if fitting:
        room = min(fitting, key=lambda r: (len(r.free), r.node.node_id))
        return Fit(
            fits=True,
            reason=f"fits on node {room.node.name}: needs {counted(needed, 'GPU')}, "
            f"{len(room.free)} free there",
            gpus=_gpu_fits(room, target, state),
            node=room.node.node_id,
        )
    parts = [_shortage(room, target) for room in rooms]
    return Fit(fits=False, reason="; ".join(parts))


def make_node_plan(
    cluster: ClusterInventory,
    deployments: Sequence[Deployment],
    target: Deployment,
    state: DeploymentState,
) -> Plan:
    """Return the stops on one node that make ``target`` fit (see the module docstring)."""
    fit = check_node_fit(cluster, deployments, target, state)
    if fit.fits:
        return Plan.fitting(target, state, fit)
    rooms, _ = _rooms(cluster, deployments, target)
    needed = target.num_gpus or 0
    best: tuple[tuple[int, int, str], _Room, list[Deployment]] | None = None
    for room in rooms:
        stops = _stops_on(room, target, needed)
        if stops is None:
            continue
        score = (max(d.priority for d in stops), len(stops), room.node.node_id)
        if best is None or score < best[0]:
            best = (score, room, stops)
    if best is None:
        return Plan.infeasible(
            target,
            state,
            fit,
            f"on no node would stopping deployments of lower priority than {target.priority} "
            f"free {counted(needed, 'GPU')}",
        )
    _, room, stops = best
    evictions = tuple(Eviction.of(d, EvictionAction.STOP, d.held_gib) for d in stops)
    return Plan.making_room(
        target,
        state,
        fit,
        evictions,
        where=f" on node {room.node.name}",
        node=room.node.node_id,
    )


def _placed(deployments: Sequence[Deployment]) -> list[tuple[Deployment, str]]:
    return [
        (d, d.placement.node_id)
        for d in deployments
        if d.backend is BackendKind.RAY and d.placement is not None and d.state in _HOLDING_STATES
    ]


def _rooms(
    cluster: ClusterInventory, deployments: Sequence[Deployment], target: Deployment
) -> tuple[list[_Room], str]:
    """Return the nodes the target may use, with their GPUs; or why there is none."""
    alive = cluster.alive
    if not alive:
        return [], f"the Ray cluster at {cluster.address} has no live node"
    allowed = [node for node in alive if node.matches(target.ray_node)]
    if not allowed:
        return [], (
            f"no live node of the Ray cluster matches ray_node {target.ray_node!r} "
            "(a resource the node declares, or the start of its node id)"
        )
    held: dict[str, dict[int, Deployment]] = {}
    for deployment, node_id in _placed(deployments):
        if deployment.id != target.id:
            for index in deployment.gpus:
                held.setdefault(node_id, {})[index] = deployment
    rooms = [
        _Room(
            node=node,
            usable=tuple(
                gpu.index for gpu in node.gpus if gpu.memory_gib >= target.memory_gib_awake
            ),
            held=held.get(node.node_id, {}),
        )
        for node in allowed
    ]
    return rooms, ""


def _stops_on(room: _Room, target: Deployment, needed: int) -> list[Deployment] | None:
    """Return the deployments to stop on this node, or None when stopping cannot do it."""
    if len(room.usable) < needed:
        return None
    holders = {d.id: d for d in room.held.values()}
    candidates = sorted(
        (
            d
            for d in holders.values()
            if d.priority < target.priority
            and d.state in _EVICTABLE
            and set(d.gpus) & set(room.usable)
        ),
        key=eviction_order,
    )

    def free_with(stopped: list[Deployment]) -> int:
        gone = {index for d in stopped for index in d.gpus}
        return sum(1 for index in room.usable if index not in room.held or index in gone)

    chosen: list[Deployment] = []
    for d in candidates:
        if free_with(chosen) >= needed:
            break
        chosen.append(d)
    if free_with(chosen) < needed:
        return None
    for d in sorted(chosen, key=lambda d: (-d.priority, d.id)):  # keep what is not needed
        rest = [other for other in chosen if other.id != d.id]
        if free_with(rest) >= needed:
            chosen = rest
    return chosen


def _gpu_fits(room: _Room, target: Deployment, state: DeploymentState) -> tuple[GpuFit, ...]:
    gpus = {gpu.index: gpu for gpu in room.node.gpus}
    return tuple(
        GpuFit(
            index=index,
            name=gpus[index].name,
            memory_gib=gpus[index].memory_gib,
            held_by_others_gib=0.0,
            needed_gib=target.gib_in(state),
        )
        for index in room.free[: target.num_gpus or 0]
    )


def _shortage(room: _Room, target: Deployment) -> str:
    needed = target.num_gpus or 0
    node = room.node
    if len(room.usable) < needed:
        big = f" with {target.memory_gib_awake:g} GiB" if target.memory_gib_awake else ""
        note = f"; {node.note}" if node.note else ""
        gpus = counted(len(room.usable), "GPU")
        return f"node {node.name} has {gpus}{big}, {needed} needed{note}"
    holders = sorted({d.name for d in room.held.values()})
    return (
        f"node {node.name}: {len(room.free)} of {counted(len(room.usable), 'GPU')} free, {needed} "
        f"needed (held by {', '.join(holders)})"
    )
