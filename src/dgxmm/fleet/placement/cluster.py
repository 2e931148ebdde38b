"""A Ray cluster as dgxmm sees it: the connection, and its nodes with their GPUs.

- **Optional**: ``ray`` is imported only here and in the Ray backend, and only when a ray
  deployment needs it; ``ray_missing`` says what to install where it is not.
- **One cluster per process**: ``ray.init`` connects a process to one cluster. A
  ``RayCluster`` for another address while one is connected is refused, naming
  ``ray_address``.
- **Loopback**: a cluster at 127.0.0.1 is a one-machine cluster. Ray would otherwise
  replace 127.0.0.1 by the machine's own address for the driver and wait for a GCS there,
  so for such an address dgxmm sets Ray's switch for single-machine clusters
  (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``) before Ray is first imported.
- **Nodes**: read from the GCS (``ray.nodes()``) at each look, so a lost node is seen at
  once. A node's GPUs come from NVML, through one small task per node (read once per node
  and kept on this object), and otherwise from its declared resources: ``GPU`` for how
  many, ``dgxmm_gpu_memory_gib`` for the memory of each. A node with neither says so in
  its note and offers no GPU.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dgxmm.errors import BackendError, DefinitionError
from dgxmm.fleet.placement.inventory import Gpu

__all__ = [
    "GPU_MEMORY_RESOURCE",
    "NAMESPACE",
    "ClusterInventory",
    "RayCluster",
    "RayNode",
    "check_ray_address",
    "prepare_loopback",
    "ray_missing",
]

NAMESPACE = "dgxmm"
GPU_MEMORY_RESOURCE = "dgxmm_gpu_memory_gib"  # a node's declared memory per GPU, in GiB
_LOOPBACK = ("127.0.0.1", "localhost")
_NVML_TIMEOUT_S = 60.0


def ray_missing() -> str | None:
    """Say what to install when the ``ray`` package is missing; None when it is there."""
    try:
        found = importlib.util.find_spec("ray")
    except ValueError:  # sys.modules holds None for it: importing it fails
        found = None
    if found is not None:
        return None
    return (
        "'ray' needs the ray package, which is not installed: pip install 'dgxmm[ray]' "
        "(or use backend process or external)"
    )


def check_ray_address(address: str) -> str:
    """Return a Ray address (``host:port`` of the cluster's GCS); refuse another form."""
    host, _, port = address.rpartition(":")
    is_number = port.isascii() and port.isdigit()  # isdigit alone takes "³", int() does not
    if not host or not is_number or not 1 <= int(port) <= 65535 or "/" in address:
        raise DefinitionError(
            "ray_address", f"{address!r} is not host:port of a Ray cluster's head node"
        )
    return address


def _is_loopback(address: str) -> bool:
    return address.rpartition(":")[0] in _LOOPBACK


def prepare_loopback() -> None:
    """Keep this process' Ray on 127.0.0.1: set Ray's single-machine switch before import."""
    if "ray" not in sys.modules:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no reports sent anywhere


@dataclass(frozen=True, slots=True, kw_only=True)
class RayNode:
    """One node of the cluster: its id, address, whether it lives, and its GPUs."""

    node_id: str
    address: str
    alive: bool
    resources: Mapping[str, float] = field(default_factory=dict)
    gpus: tuple[Gpu, ...] = ()
    note: str = ""  # where the GPUs' memory came from, or why the node offers none

    @property
    def name(self) -> str:
        """Return a short name for messages and pages: the start of its id, and address."""
        return f"{self.node_id[:8]} ({self.address})"

    def matches(self, constraint: str | None) -> bool:
        """Tell whether a ``ray_node`` constraint lets a deployment run here.

        A constraint names a custom resource the node declares (``--resources``), or the
        start of its node id (8 characters at least).
        """
        if constraint is None:
            return True
        if constraint in self.resources:
            return True
        return len(constraint) >= 8 and self.node_id.startswith(constraint)


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterInventory:
    """The nodes of a Ray cluster at one look."""

    address: str
    nodes: tuple[RayNode, ...]

    def node(self, node_id: str) -> RayNode | None:
        """Return the node with this id, alive or not, or None."""
        for node in self.nodes:
            if node.node_id == node_id:
                return node
        return None

    @property
    def alive(self) -> tuple[RayNode, ...]:
        """Return the nodes that live."""
        return tuple(node for node in self.nodes if node.alive)


class RayCluster:
    """The Ray cluster at one address: connects on first use; safe to share between threads."""

    def __init__(self, address: str) -> None:
        self.address = check_ray_address(address)
        self._lock = threading.Lock()
        self._gpus: dict[str, tuple[tuple[Gpu, ...], str]] = {}  # NVML's answer per node

    def connect(self) -> Any:
        """Connect this process to the cluster (once) and return the ``ray`` module."""
        missing = ray_missing()
        if missing is not None:
            raise DefinitionError("backend", missing)
        if _is_loopback(self.address):
            prepare_loopback()
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no reports sent anywhere
        import ray

        with self._lock:
            if ray.is_initialized():
                connected = _connected_address(ray)
                if connected is not None and connected != self.address:
                    raise DefinitionError(
                        "ray_address",
                        f"{self.address} is another Ray cluster than the one this dgxmm "
                        f"talks to ({connected}); one dgxmm uses one Ray cluster",
                    )
                return ray
            try:
                ray.init(
                    address=self.address,
                    namespace=NAMESPACE,
                    log_to_driver=False,
                    configure_logging=False,
                    include_dashboard=False,
                )
            except (ConnectionError, RuntimeError, ValueError, TimeoutError) as err:
                raise BackendError(f"Ray cluster at {self.address}: cannot connect: {err}") from err
            return ray

    def inventory(self) -> ClusterInventory:
        """Return the cluster's nodes and their GPUs now."""
        ray = self.connect()
        try:
            listed = ray.nodes()
        except Exception as err:  # Ray raises its own and gRPC's errors
            raise BackendError(f"Ray cluster at {self.address}: cannot list nodes: {err}") from err
        entries = [
            (
                str(entry["NodeID"]),
                {str(k): float(v) for k, v in dict(entry.get("Resources", {})).items()},
                bool(entry.get("Alive")),
                str(entry.get("NodeManagerAddress", "")),
            )
            for entry in listed
        ]
        self._read_nvml(ray, [i for i, res, alive, _ in entries if alive and res.get("GPU")])
        nodes = []
        for node_id, resources, alive, address in entries:
            gpus, note = self._gpus_of(node_id, resources) if alive else ((), "lost")
            nodes.append(
                RayNode(
                    node_id=node_id,
                    address=address,
                    alive=alive,
                    resources=resources,
                    gpus=gpus,
                    note=note,
                )
            )
        return ClusterInventory(address=self.address, nodes=tuple(nodes))

    def _gpus_of(self, node_id: str, resources: Mapping[str, float]) -> tuple[tuple[Gpu, ...], str]:
        count = int(resources.get("GPU", 0))
        if count == 0:
            return (), "no GPU"
        with self._lock:
            known = self._gpus.get(node_id, ((), "NVML was not asked"))
        if known[0]:
            return known
        memory = resources.get(GPU_MEMORY_RESOURCE)
        if memory is None or memory <= 0:
            return (), f"{known[1]}; and it declares no {GPU_MEMORY_RESOURCE} resource"
        gpus = tuple(
            Gpu(index=index, name="GPU (declared)", memory_gib=memory, node=node_id)
            for index in range(count)
        )
        return gpus, f"{known[1]}: {count} GPUs of {memory:g} GiB as the node declares"

    def _read_nvml(self, ray: Any, node_ids: list[str]) -> None:
        """Ask NVML on each node not asked yet, all at once; keep the answers."""
        with self._lock:
            asking = [node_id for node_id in node_ids if node_id not in self._gpus]
        if not asking:
            return
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from dgxmm.fleet.backends import ray_actor

        ray.cloudpickle.register_pickle_by_value(ray_actor)
        task = ray.remote(num_cpus=0, max_retries=0)(ray_actor.read_node_gpus)
        pending = {
            node_id: task.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)
            ).remote()
            for node_id in asking
        }
        for node_id, reference in pending.items():
            try:
                answer = ray.get(reference, timeout=_NVML_TIMEOUT_S)
            except Exception as err:  # a node lost meanwhile, a timeout: fall back
                answer = {"error": f"NVML could not be asked: {type(err).__name__}"}
            with self._lock:
                self._gpus[node_id] = _nvml_gpus(node_id, answer)


def _nvml_gpus(node_id: str, answer: Mapping[str, Any]) -> tuple[tuple[Gpu, ...], str]:
    if "error" in answer:
        return (), str(answer["error"])
    gpus = tuple(
        Gpu(
            index=int(gpu["index"]),
            name=str(gpu["name"]),
            memory_gib=float(gpu["memory_gib"]),
            node=node_id,
        )
        for gpu in answer["gpus"]
    )
    return gpus, "" if gpus else "NVML found no GPU"


def _connected_address(ray: Any) -> str | None:
    try:
        return str(ray.get_runtime_context().gcs_address)
    except Exception:  # an older Ray without it: trust the caller
        return None
