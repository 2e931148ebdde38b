"""The fit and eviction plan of one deployment beside every other, as the rows are now.

``fit.py`` and ``nodes.py`` answer for any set of deployments; ``Placer`` asks them of the
deployments' rows as read now, on this machine's GPUs or, for a ray deployment, on the
nodes of its cluster, and writes down the node a ray deployment's start chose. The
deployer asks it before an action and again under its start-up lock (an eviction or
another start may have moved things meanwhile).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection

from dgxmm.errors import NotFound
from dgxmm.fleet.backends.protocol import BackendKind
from dgxmm.fleet.deployments.deployment import Deployment, DeploymentState, Placement
from dgxmm.fleet.deployments.repo import DeploymentRepo
from dgxmm.fleet.placement.cluster import ClusterInventory
from dgxmm.fleet.placement.fit import Fit, Plan, check_fit, make_plan
from dgxmm.fleet.placement.inventory import GpuInventory
from dgxmm.fleet.placement.nodes import check_node_fit, make_node_plan

__all__ = ["Placer"]


class Placer:
    """Fits and plans on the live rows; ``clusters`` reads a Ray cluster's nodes by address."""

    def __init__(
        self,
        inventory: GpuInventory,
        deployments: DeploymentRepo,
        clusters: Callable[[str], ClusterInventory],
    ) -> None:
        self._inventory = inventory
        self._deployments = deployments
        self._clusters = clusters

    def fit(self, deployment_id: int, target: DeploymentState) -> Fit:
        """Tell whether the deployment fits in ``target`` beside the others, and why."""
        everyone = self._deployments.list()
        deployment = _pick(everyone, deployment_id)
        if deployment.backend is BackendKind.RAY:
            return check_node_fit(self._cluster_of(deployment), everyone, deployment, target)
        return check_fit(self._inventory, everyone, deployment, target)

    def plan(self, deployment_id: int, target: DeploymentState) -> Plan:
        """Return the evictions that would make it fit in ``target`` (none when it fits)."""
        everyone = self._deployments.list()
        deployment = _pick(everyone, deployment_id)
        if deployment.backend is BackendKind.RAY:
            return make_node_plan(self._cluster_of(deployment), everyone, deployment, target)
        return make_plan(self._inventory, everyone, deployment, target)

    def place(self, connection: Connection, deployment: Deployment, fit: Fit) -> Deployment:
        """Write down the node a ray deployment's actor is to run on (the fit chose it)."""
        assert fit.node is not None
        node = self._cluster_of(deployment).node(fit.node)
        where = Placement(
            node_id=fit.node, node_address=node.address if node is not None else "", url=""
        )
        return self._deployments.set_placement(connection, deployment.id, where)

    def _cluster_of(self, deployment: Deployment) -> ClusterInventory:
        assert deployment.ray_address is not None
        return self._clusters(deployment.ray_address)


def _pick(everyone: list[Deployment], deployment_id: int) -> Deployment:
    for deployment in everyone:
        if deployment.id == deployment_id:
            return deployment
    raise NotFound("deployment", deployment_id)
