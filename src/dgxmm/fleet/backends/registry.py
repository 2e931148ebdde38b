"""One backend object per deployment, built from its row and kept while the row says the same.

A process deployment's files (``server.log``, ``server.pid``) live in
``<data_dir>/deployments/<id>/``, named by id because a name may change. Its command gets
``CUDA_VISIBLE_DEVICES`` for the GPUs it declares (unless its environment sets it), with
``CUDA_DEVICE_ORDER=PCI_BUS_ID`` so that CUDA numbers the GPUs as NVML, and the inventory,
do. A ray deployment's actor is named after this dgxmm (its data directory) and the
deployment's id, and asks for its GPUs on the node its placement names.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable
from pathlib import Path

from dgxmm.clock import Clock
from dgxmm.fleet.backends.external import ExternalBackend
from dgxmm.fleet.backends.pages import Pages
from dgxmm.fleet.backends.process import ProcessBackend, ProcessSpec
from dgxmm.fleet.backends.protocol import DEFAULT_STOP_GRACE_S, Backend, BackendKind, HttpTimeouts
from dgxmm.fleet.backends.ray import RayBackend, RaySpec, actor_name
from dgxmm.fleet.deployments.deployment import Deployment
from dgxmm.fleet.placement.cluster import RayCluster

__all__ = ["Backends", "run_dir_of"]

_Key = tuple[object, ...]


def run_dir_of(data_dir: Path, deployment_id: int) -> Path:
    """Return the directory of a process deployment's log and pid file."""
    return data_dir / "deployments" / str(deployment_id)


class Backends:
    """The backends of the deployments, built on demand; safe to share between threads."""

    def __init__(
        self,
        *,
        data_dir: Path,
        clock: Clock,
        timeouts: HttpTimeouts,
        stop_grace_s: float = DEFAULT_STOP_GRACE_S,
        ray_clusters: Iterable[RayCluster] = (),
        pages: Pages | None = None,
    ) -> None:
        self._data_dir = data_dir
        self._pages = pages  # who reads /metrics and /health (None: each client, inline)
        # Two dgxmm on one Ray cluster must not take each other's actors.
        self._instance = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:10]
        self._clusters = {cluster.address: cluster for cluster in ray_clusters}
        self._clusters_lock = threading.Lock()
        self._clock = clock
        self._timeouts = timeouts
        self._stop_grace_s = stop_grace_s
        self._lock = threading.Lock()
        self._built: dict[int, tuple[_Key, Backend]] = {}
        # Closed backends are kept: a process backend holds the Popen of a server that
        # outlives it, and a Popen dropped while its child runs warns and is never reaped.
        self._retired: list[Backend] = []

    @property
    def timeouts(self) -> HttpTimeouts:
        """How long each kind of request to a model server may take."""
        return self._timeouts

    def of(self, deployment: Deployment) -> Backend:
        """Return the backend for a deployment as its row describes it."""
        key = _key_of(deployment)
        with self._lock:
            found = self._built.get(deployment.id)
            if found is not None and found[0] == key:
                return found[1]
            backend = self._build(deployment)
            self._built[deployment.id] = (key, backend)
        if found is not None:
            self._retire(found[1])
        return backend

    def forget(self, deployment_id: int) -> None:
        """Close and drop a deployment's backend (its process, if any, keeps running)."""
        with self._lock:
            found = self._built.pop(deployment_id, None)
        if found is not None:
            self._retire(found[1])

    def cluster(self, address: str) -> RayCluster:
        """Return the Ray cluster at an address (one object per address, kept)."""
        with self._clusters_lock:  # not self._lock: building a backend asks for its cluster
            found = self._clusters.get(address)
            if found is None:
                found = self._clusters[address] = RayCluster(address)
            return found

    def run_dir(self, deployment_id: int) -> Path:
        """Return where a process deployment keeps its log and pid file."""
        return run_dir_of(self._data_dir, deployment_id)

    def close(self) -> None:
        """Close every backend's HTTP connections; processes keep running."""
        with self._lock:
            built = list(self._built.values())
            self._built.clear()
        for _, backend in built:
            self._retire(backend)

    def reap(self) -> int:
        """Collect the exit status of servers this dgxmm started that have exited since.

        Only the object that started a process can wait for it; a retired one whose server
        was stopped by another (after a restart, say) would otherwise leave a zombie.
        Return how many retired backends are still kept.
        """
        with self._lock:
            everyone = [backend for _, backend in self._built.values()] + self._retired
        for backend in everyone:
            if isinstance(backend, ProcessBackend):
                backend.is_running()  # polls its child
        with self._lock:
            self._retired = [
                b for b in self._retired if isinstance(b, ProcessBackend) and b.is_running()
            ]
            return len(self._retired)

    def _retire(self, backend: Backend) -> None:
        backend.close()
        with self._lock:
            self._retired.append(backend)

    def _build(self, deployment: Deployment) -> Backend:
        if deployment.backend is BackendKind.EXTERNAL:
            assert deployment.base_url is not None
            return ExternalBackend(
                name=deployment.name,
                base_url=deployment.base_url,
                timeouts=self._timeouts,
                clock=self._clock,
                pages=self._pages,
            )
        assert deployment.command is not None
        if deployment.backend is BackendKind.RAY:
            assert deployment.ray_address is not None
            placement = deployment.placement
            return RayBackend(
                name=deployment.name,
                actor=actor_name(self._instance, deployment.id),
                spec=RaySpec(
                    argv=deployment.command,
                    env=dict(deployment.environment),
                    port=deployment.port,
                    num_gpus=deployment.num_gpus or 0,
                    node_id=placement.node_id if placement is not None else None,
                ),
                cluster=self.cluster(deployment.ray_address),
                timeouts=self._timeouts,
                stop_grace_s=self._stop_grace_s,
                clock=self._clock,
                pages=self._pages,
            )
        assert deployment.port is not None
        environment = dict(deployment.environment)
        if deployment.gpus and "CUDA_VISIBLE_DEVICES" not in environment:
            environment["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in deployment.gpus)
            environment.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
        return ProcessBackend(
            name=deployment.name,
            spec=ProcessSpec(argv=deployment.command, port=deployment.port, env=environment),
            run_dir=self.run_dir(deployment.id),
            timeouts=self._timeouts,
            stop_grace_s=self._stop_grace_s,
            clock=self._clock,
            pages=self._pages,
        )


def _key_of(deployment: Deployment) -> _Key:
    # Not the name: it only shows in messages, and a new ProcessBackend would lose the
    # running child it started (and the chance to reap it).
    return (
        deployment.backend,
        deployment.command,
        deployment.port,
        tuple(sorted(deployment.environment.items())),
        deployment.base_url,
        # A ray deployment's GPUs are Ray's answer, not what to run: its node is.
        () if deployment.backend is BackendKind.RAY else deployment.gpus,
        deployment.ray_address,
        deployment.num_gpus,
        deployment.placement.node_id if deployment.placement is not None else None,
    )
