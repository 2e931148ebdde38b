"""The ``ray`` backend: a named, detached Ray actor launches the model server on its node.

The actor (``ray_actor.ServerActor``) asks Ray for the deployment's GPUs (``num_gpus``) on
the node the fit check chose (a hard node affinity), starts the command as its child, and
reports the URL it serves on; dgxmm then speaks HTTP to the server as to any other. The
actor is named after the dgxmm instance and the deployment, and detached: it outlives
dgxmm, and a restarted dgxmm finds it again by name (``reattach``), never a second one.
``max_restarts=0``: when its node dies the actor stays dead and the deployment fails; Ray
does not start it again behind dgxmm's back.

Every Ray call has a timeout. A dead actor (its node lost, its process killed) makes health
``GONE`` and an action ``ServerGone``; an actor that does not answer in time is
``UNREACHABLE``, as a server that does not answer is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from dgxmm.clock import Clock
from dgxmm.errors import BackendError, Conflict, DefinitionError, ServerGone
from dgxmm.fleet.backends.client import ModelServerClient
from dgxmm.fleet.backends.pages import Pages
from dgxmm.fleet.backends.protocol import (
    DEFAULT_STOP_GRACE_S,
    BackendKind,
    Health,
    HealthCheck,
    HttpTimeouts,
    StopOutcome,
)
from dgxmm.fleet.deployments.deployment import Placement
from dgxmm.fleet.metrics.sample import MetricsSample
from dgxmm.fleet.placement.cluster import NAMESPACE, RayCluster

__all__ = ["RayBackend", "RaySpec", "actor_name"]

T = TypeVar("T")

_PLACE_TIMEOUT_S = 120.0  # Ray starts a worker process for the actor: seconds on a busy node
_KILL_WAIT_S = 10.0
_STOPPED = {
    "terminated": StopOutcome.TERMINATED,
    "killed": StopOutcome.KILLED,
    "not_running": StopOutcome.NOT_RUNNING,
}


def actor_name(instance: str, deployment_id: int) -> str:
    """Return the name of a deployment's actor: one dgxmm's deployments never share one."""
    return f"dgxmm-{instance}-deployment-{deployment_id}"


@dataclass(frozen=True, slots=True, kw_only=True)
class RaySpec:
    """What the actor runs, what it asks Ray for, and where."""

    argv: tuple[str, ...]  # "{port}" and "{host}" are put in on the node
    env: Mapping[str, str] = field(default_factory=dict)
    port: int | None = None  # None: a free port on the node
    num_gpus: int = 0
    node_id: str | None = None  # the node the fit check chose; None: the one it runs on

    def __post_init__(self) -> None:
        if not self.argv or not all(isinstance(arg, str) and arg for arg in self.argv):
            raise DefinitionError("command", "give the command line as non-empty strings")
        if self.num_gpus < 0:
            raise DefinitionError("num_gpus", f"{self.num_gpus} must be 0 or more")


class RayBackend:
    """A model server held by a named Ray actor on a node of the cluster."""

    def __init__(
        self,
        *,
        name: str,
        actor: str,
        spec: RaySpec,
        cluster: RayCluster,
        timeouts: HttpTimeouts | None = None,
        stop_grace_s: float = DEFAULT_STOP_GRACE_S,
        clock: Clock,
        pages: Pages | None = None,
    ) -> None:
        self.name = name
        self.actor = actor
        self.spec = spec
        self.stop_grace_s = stop_grace_s
        self._cluster = cluster
        self._timeouts = timeouts or HttpTimeouts()
        self._clock = clock
        self._pages = pages
        self._handle: Any = None
        self._info: dict[str, Any] | None = None
        self._client: ModelServerClient | None = None

    def __str__(self) -> str:
        return f"deployment {self.name!r} (ray actor {self.actor} at {self._cluster.address})"

    @property
    def kind(self) -> BackendKind:
        """Return ``BackendKind.RAY``."""
        return BackendKind.RAY

    @property
    def base_url(self) -> str:
        """Return the URL the actor reported, or an empty one before it did."""
        return str(self._info["url"]) if self._info else ""

    @property
    def owns_process(self) -> bool:
        """Return True: dgxmm started this server, through its actor."""
        return True

    def placement(self) -> tuple[Placement, tuple[int, ...]] | None:
        """Return where the actor runs and the GPUs Ray gave it, once known."""
        info = self._info
        if info is None:
            return None
        where = Placement(
            node_id=str(info["node_id"]), node_address=str(info["node_address"]), url=info["url"]
        )
        return where, tuple(int(gpu) for gpu in info["gpus"])

    # -- life ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Create the actor on its node and wait until it launched the server."""
        ray = self._cluster.connect()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from dgxmm.fleet.backends import ray_actor

        found = self._find(ray)
        if found is not None:
            status = self._call(ray, found, "status", timeout_s=self._timeouts.probe_s)
            if status.get("running"):
                raise Conflict(f"start of {self}: its actor already runs a server")
            ray.kill(found)  # a server that ended under a live actor: start anew
        ray.cloudpickle.register_pickle_by_value(ray_actor)
        options: dict[str, Any] = {
            "name": self.actor,
            "namespace": NAMESPACE,
            "lifetime": "detached",
            "num_gpus": self.spec.num_gpus,
            "num_cpus": 0,
            "max_restarts": 0,
            "max_concurrency": 4,  # a health check is answered while a stop waits
        }
        if self.spec.node_id is not None:
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(
                self.spec.node_id, soft=False
            )
        actor_class = ray.remote(ray_actor.ServerActor)
        try:
            handle = actor_class.options(**options).remote(
                list(self.spec.argv), dict(self.spec.env), self.spec.port, self.actor
            )
        except ValueError as err:  # the name is taken: another start won the race
            raise Conflict(f"start of {self}: {err}") from err
        self._handle = handle
        try:
            info = self._call(ray, handle, "info", timeout_s=_PLACE_TIMEOUT_S)
        except BackendError:
            ray.kill(handle)
            self._handle = None
            raise
        self._adopt(info)

    def stop(self, grace_s: float | None = None) -> StopOutcome:
        """Stop the server (SIGTERM, then SIGKILL) and end the actor, freeing its GPUs."""
        grace = self.stop_grace_s if grace_s is None else grace_s
        ray = self._cluster.connect()
        handle = self._find(ray)
        if handle is None:
            self._forget()
            return StopOutcome.NOT_RUNNING
        try:
            said = self._call(ray, handle, "stop", grace, timeout_s=grace + _KILL_WAIT_S + 5)
        except ServerGone:
            said = "not_running"
        finally:
            ray.kill(handle)
            self._forget()
        if said not in _STOPPED:
            raise BackendError(f"stop of {self}: its server outlived SIGKILL; the actor is ended")
        return _STOPPED[said]

    def reattach(self) -> HealthCheck:
        """Find the actor by name (after a dgxmm restart) and check the server's health."""
        self._forget()
        return self.check_health()

    def check_health(self) -> HealthCheck:
        """Report GONE when the actor or its server ended; otherwise ask ``GET /health``."""
        try:
            ray = self._cluster.connect()
            handle = self._find(ray)
            if handle is None:
                return HealthCheck(health=Health.GONE, detail=f"no Ray actor {self.actor}")
            status = self._call(ray, handle, "status", timeout_s=self._timeouts.probe_s)
            if not status.get("running"):
                return HealthCheck(health=Health.GONE, detail=str(status.get("detail")))
            if self._info is None:
                self._adopt(self._call(ray, handle, "info", timeout_s=self._timeouts.probe_s))
        except ServerGone as gone:
            return HealthCheck(health=Health.GONE, detail=str(gone))
        except BackendError as err:
            return HealthCheck(health=Health.UNREACHABLE, detail=str(err))
        assert self._client is not None
        return self._client.check_health()

    # -- HTTP ---------------------------------------------------------------------------------

    def sleep(self, level: int = 1, *, timeout_s: float | None = None) -> None:
        """Put the server to sleep once its requests in flight finish; confirm it sleeps."""
        self._act("sleep", lambda client: client.sleep(level, timeout_s=timeout_s))

    def wake(self, level: int = 1, *, timeout_s: float | None = None) -> None:
        """Wake the server from a sleep of ``level``; confirm it no longer sleeps."""
        self._act("wake", lambda client: client.wake(level, timeout_s=timeout_s))

    def is_sleeping(self) -> bool:
        """Ask the server whether it sleeps."""
        return self._act("sleep check", lambda client: client.is_sleeping())

    def check_completion(self, *, timeout_s: float | None = None) -> None:
        """Ask for one tiny completion; raise ``BackendError`` unless it answers in time."""
        self._act("post-wake check", lambda client: client.check_completion(timeout_s=timeout_s))

    def served_models(self) -> list[str]:
        """Return the model names the server lists at ``/v1/models``."""
        return self._act("model list", lambda client: client.served_models())

    def fetch_metrics(self) -> str:
        """Return the server's ``/metrics`` page."""
        return self._act("metrics", lambda client: client.fetch_metrics())

    def sample(self) -> MetricsSample:
        """Fetch ``/metrics`` and read it as a sample."""
        return self._act("metrics", lambda client: client.sample(self._clock))

    def close(self) -> None:
        """Release the HTTP connections; the actor and its server keep running."""
        if self._client is not None:
            self._client.close()

    # -- inside -------------------------------------------------------------------------------

    def _act(self, what: str, call: Callable[[ModelServerClient], T]) -> T:
        """Run one HTTP action; a dead actor or server makes it ``ServerGone``."""
        if self._client is None:
            check = self.check_health()  # finds the actor and its URL
            if check.health is Health.GONE:
                raise ServerGone(f"{what} on {self}: {check.detail}")
            if self._client is None:
                raise BackendError(f"{what} on {self}: {check.detail}")
        try:
            return call(self._client)
        except BackendError as err:
            check = self.check_health()
            if check.health is Health.GONE:
                raise ServerGone(f"{what} on {self}: {check.detail}") from err
            raise

    def _adopt(self, info: dict[str, Any]) -> None:
        self._info = info
        if self._client is not None:
            self._client.close()
        self._client = ModelServerClient(
            str(info["url"]), server=str(self), timeouts=self._timeouts, pages=self._pages
        )

    def _forget(self) -> None:
        self._handle = None
        self._info = None
        if self._client is not None:
            self._client.close()
            self._client = None

    def _find(self, ray: Any) -> Any:
        """Return the actor's handle, from memory or by name; None when there is none."""
        if self._handle is not None:
            return self._handle
        try:
            self._handle = ray.get_actor(self.actor, namespace=NAMESPACE)
        except ValueError:
            return None
        return self._handle

    def _call(self, ray: Any, handle: Any, method: str, *args: Any, timeout_s: float) -> Any:
        """Call an actor method and wait at most ``timeout_s``; Ray's errors become ours."""
        from ray import exceptions

        try:
            return ray.get(getattr(handle, method).remote(*args), timeout=timeout_s)
        except (exceptions.GetTimeoutError, exceptions.ActorUnavailableError) as err:
            raise BackendError(
                f"{method} of Ray actor {self.actor}: no answer within {timeout_s:g} s"
            ) from err
        except exceptions.RayActorError as err:
            self._handle = None
            raise ServerGone(f"its Ray actor {self.actor} died: {_first_line(err)}") from err
        except exceptions.RayError as err:
            raise BackendError(f"{method} of Ray actor {self.actor}: {_first_line(err)}") from err


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    # Ray's messages run over many lines; the cause ("its node has died") is among them.
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if "died because" in line or ("node" in line.lower() and "died" in line):
            return line
    return lines[0] if lines else type(err).__name__
