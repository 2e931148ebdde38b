"""A Ray cluster of several nodes on this machine, with pretend GPUs, on 127.0.0.1 only.

For ``dgxmm serve --demo --ray`` and the tests. Each node is a real raylet with its own
workers (Ray's ``cluster_utils.Cluster``, children of this process); it declares
``--num-gpus`` GPUs that do not exist, their memory (``dgxmm_gpu_memory_gib``) and a
resource named after the node, so a deployment can ask for it (``ray_node``).

Everything stays on the loopback: every node gets ``node_ip_address=127.0.0.1`` and Ray's
single-machine switch is set before Ray is imported (see ``placement/cluster.py``), so the driver
does not go looking for the machine's own address. No dashboard, no usage reports; nodes
are declared dead after a few missed health checks (about 1.5 s), so a node killed in a
test is seen as lost within seconds. Start-up is bounded; ``shutdown`` ends every process.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dgxmm.errors import BackendError, DgxmmError
from dgxmm.fleet.placement.cluster import GPU_MEMORY_RESOURCE, prepare_loopback

__all__ = ["LocalCluster", "LocalNode"]

_START_TIMEOUT_S = 180.0  # a node takes seconds; minutes on a busy machine with 2 cores
_HEALTH = {
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 500,
    "health_check_failure_threshold": 3,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalNode:
    """One node to start: its name (a resource it declares), its pretend GPUs and memory."""

    name: str
    num_gpus: int
    gpu_memory_gib: float
    num_cpus: int = 1


class LocalCluster:
    """Start with ``start()``, end with ``shutdown()`` (always, in a ``finally``)."""

    def __init__(self, nodes: Sequence[LocalNode], *, timeout_s: float = _START_TIMEOUT_S):
        if not nodes:
            raise DgxmmError("a local Ray cluster needs one node at least")
        self._specs = tuple(nodes)
        self._timeout_s = timeout_s
        self._cluster: Any = None
        self._nodes: dict[str, Any] = {}

    @property
    def address(self) -> str:
        """Return the head node's GCS address (``127.0.0.1:<port>``)."""
        if self._cluster is None:
            raise DgxmmError("the local Ray cluster is not started")
        return str(self._cluster.address)

    def node_id(self, name: str) -> str:
        """Return the Ray node id of the node with this name."""
        return str(self._nodes[name].node_id)

    def start(self) -> str:
        """Start every node (within the timeout); return the cluster's address.

        Ray starts nodes on the main thread only (it sets signal handlers), so the timeout
        is a watchdog: past it, the processes started so far are killed, which ends Ray's
        waits for them, and the start raises.
        """
        watchdog = threading.Timer(self._timeout_s, self._kill_started)
        watchdog.daemon = True
        watchdog.start()
        try:
            self._start_nodes()
        except Exception as error:
            self.shutdown()
            late = "" if watchdog.is_alive() else f" within {self._timeout_s:g} s"
            raise BackendError(f"the local Ray cluster did not start{late}: {error}") from error
        finally:
            watchdog.cancel()
        return self.address

    def _kill_started(self) -> None:
        for node in list(self._nodes.values()):
            node.kill_all_processes(check_alive=False, allow_graceful=False)

    def kill_node(self, name: str) -> None:
        """Kill a worker node at once (its raylet and workers), as a lost machine would be."""
        node = self._nodes.pop(name)
        self._cluster.remove_node(node, allow_graceful=False)

    def shutdown(self) -> None:
        """End every node's processes; safe to call twice."""
        cluster, self._cluster = self._cluster, None
        self._nodes.clear()
        if cluster is not None:
            import ray

            ray.shutdown()  # this process' driver first: Ray refuses to remove its node
            cluster.shutdown()

    def _start_nodes(self) -> None:
        prepare_loopback()
        from ray.cluster_utils import Cluster

        head, *workers = self._specs
        self._cluster = Cluster(
            initialize_head=True,
            head_node_args={**self._node_args(head), "_system_config": _HEALTH},
        )
        self._nodes[head.name] = self._cluster.head_node
        for spec in workers:
            self._nodes[spec.name] = self._cluster.add_node(**self._node_args(spec))
        self._cluster.wait_for_nodes(timeout=self._timeout_s)

    def _node_args(self, spec: LocalNode) -> dict[str, Any]:
        return {
            "num_cpus": spec.num_cpus,
            "num_gpus": spec.num_gpus,
            "node_ip_address": "127.0.0.1",
            "include_dashboard": False,
            "resources": {GPU_MEMORY_RESOURCE: spec.gpu_memory_gib, spec.name: 1},
        }
