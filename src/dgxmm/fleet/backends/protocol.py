"""What the deployer asks of a model server, whatever runs it; and the start-up gate.

Three backends implement ``Backend``: ``ProcessBackend`` (dgxmm launches the server and owns
its process), ``ExternalBackend`` (a server already running at a URL) and ``RayBackend`` (a
named Ray actor launches the server on a node of a Ray cluster). All speak vLLM's
HTTP surface: ``GET /health``, ``POST /sleep?level=1|2&mode=wait``, ``POST /wake_up`` (at
level 2 with ``tags``, ``POST /collective_rpc`` and ``POST /reset_prefix_cache``),
``GET /is_sleeping``, ``GET /metrics``.

Failures of an action raise ``BackendError`` naming the action, the server and what
happened; a server that is no longer there (its process exited, its port refuses) raises
``ServerGone``, which the deployer turns into the ``failed`` state; one that did not answer
in the action's time raises ``TimedOut``, whose action may still finish on the server.
Health checks do not raise: they report a ``Health`` with a detail a person can read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from dgxmm.errors import BackendError, InvalidInput, ServerGone
from dgxmm.fleet.metrics.sample import MetricsSample

__all__ = [
    "DEFAULT_STOP_GRACE_S",
    "LOG_TAIL_MARK",
    "Backend",
    "BackendKind",
    "Health",
    "HealthCheck",
    "HttpTimeouts",
    "StopOutcome",
    "pass_gate",
    "wait_until_healthy",
]


# Between dgxmm's words and the model server's last log lines in a failed start's error:
# what follows it is the server's output, an admin's read (server/access/redaction.py cuts there).
LOG_TAIL_MARK = "; last lines of "
# How long a stop waits after SIGTERM before SIGKILL, unless the fleet is given another.
DEFAULT_STOP_GRACE_S = 30.0


class BackendKind(Enum):
    """How dgxmm reaches a deployment's server."""

    PROCESS = "process"  # dgxmm starts the command and owns the process
    EXTERNAL = "external"  # a server someone else runs, at a base URL
    RAY = "ray"  # dgxmm starts the command under a Ray actor on a node of a Ray cluster


class Health(Enum):
    """What a health check found."""

    HEALTHY = "healthy"  # GET /health answered 200
    UNHEALTHY = "unhealthy"  # it answered, with another status (503 while loading)
    UNREACHABLE = "unreachable"  # nothing answered: refused, reset or timed out
    GONE = "gone"  # the process (or Ray actor) dgxmm started is not running


class StopOutcome(Enum):
    """How a stop ended."""

    TERMINATED = "terminated"  # the process group exited on SIGTERM within the grace period
    KILLED = "killed"  # something outlived the grace period and got SIGKILL
    NOT_RUNNING = "not_running"  # there was no process to stop
    NOT_OWNED = "not_owned"  # an external server: dgxmm does not stop what it did not start


@dataclass(frozen=True, slots=True, kw_only=True)
class HealthCheck:
    """The result of one health check, with what was seen."""

    health: Health
    detail: str  # "200 OK", "connection refused", "process exited with code 1; log: ..."

    @property
    def is_healthy(self) -> bool:
        """Return whether the server answered healthy."""
        return self.health is Health.HEALTHY


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpTimeouts:
    """How long each kind of request to a model server may take, in seconds."""

    connect_s: float = 2.0
    probe_s: float = 5.0  # /health and /is_sleeping
    metrics_s: float = 10.0
    # POST /sleep?mode=wait returns once the requests in flight have finished, and
    # POST /wake_up once the weights are back on the GPU: both can take minutes. Only a
    # sleep or wake asked without a timeout gets this; the deployer gives the deployment's.
    action_s: float = 600.0
    check_s: float = 60.0  # the post-wake check: one tiny completion of a just-woken engine

    @property
    def scrape_deadline_s(self) -> float:
        """The longest one scrape may take: connecting, then the metrics page."""
        return self.connect_s + self.metrics_s

    def __post_init__(self) -> None:
        for name in ("connect_s", "probe_s", "metrics_s", "action_s", "check_s"):
            if not getattr(self, name) > 0:
                raise InvalidInput(name, f"{getattr(self, name)} must be a positive number")


class Backend(Protocol):
    """A model server the deployer can start, stop, put to sleep, wake and read."""

    @property
    def kind(self) -> BackendKind:
        """Return how this server is reached."""
        ...

    @property
    def base_url(self) -> str:
        """Return the server's base URL, such as ``http://127.0.0.1:8001``."""
        ...

    @property
    def owns_process(self) -> bool:
        """Return whether dgxmm started this server and may stop it."""
        ...

    def start(self) -> None:
        """Start the server; return without waiting for it to be healthy."""
        ...

    def stop(self, grace_s: float | None = None) -> StopOutcome:
        """Stop the server if dgxmm owns it: SIGTERM, then SIGKILL after the grace period."""
        ...

    def reattach(self) -> HealthCheck:
        """Find the server again after a dgxmm restart and check its health."""
        ...

    def check_health(self) -> HealthCheck:
        """Ask the server whether it is healthy; never raise for a server that is down."""
        ...

    def sleep(self, level: int = 1, *, timeout_s: float | None = None) -> None:
        """Put the server to sleep once its requests in flight finish; confirm it sleeps.

        ``timeout_s`` bounds the whole sleep (the deployment's sleep timeout).
        """
        ...

    def wake(self, level: int = 1, *, timeout_s: float | None = None) -> None:
        """Wake the server from a sleep of ``level`` and confirm it no longer sleeps.

        ``timeout_s`` bounds the whole wake (what is left of the start-up timeout).
        """
        ...

    def is_sleeping(self) -> bool:
        """Ask the server whether it sleeps."""
        ...

    def check_completion(self, *, timeout_s: float | None = None) -> None:
        """Ask for one tiny completion; raise ``BackendError`` unless it answers in time."""
        ...

    def served_models(self) -> list[str]:
        """Return the model names the server lists at ``/v1/models``."""
        ...

    def fetch_metrics(self) -> str:
        """Return the server's ``/metrics`` page."""
        ...

    def sample(self) -> MetricsSample:
        """Fetch ``/metrics`` and read it as a sample stamped with the backend's clock."""
        ...

    def close(self) -> None:
        """Release the HTTP connections; a running process keeps running."""
        ...


def wait_until_healthy(
    backend: Backend,
    timeout_s: float,
    *,
    interval_s: float = 0.25,
    began: float | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    pause: Callable[[float], None] = time.sleep,
) -> float:
    """Poll health until the server answers healthy; return the seconds it took.

    This is the start-up gate: a start or wake counts only once the server is healthy within
    its start-up timeout, counted from ``began`` (a ``monotonic`` reading; now by default:
    a wake's own requests count in its timeout). Raises ``ServerGone`` at once when the
    process exits, and ``BackendError`` when the timeout passes, with the last thing seen.
    """
    if not timeout_s > 0:
        raise InvalidInput("timeout_s", f"{timeout_s} must be a positive number of seconds")
    began = monotonic() if began is None else began
    deadline = began + timeout_s
    while True:
        check = backend.check_health()
        if check.is_healthy:
            return monotonic() - began
        if check.health is Health.GONE:
            raise ServerGone(f"start-up of {backend}: {check.detail}")
        remaining = deadline - monotonic()
        if remaining <= 0:
            raise BackendError(
                f"start-up of {backend}: not healthy within {timeout_s:g} s "
                f"(last health check: {check.health.value}, {check.detail})"
            )
        pause(min(interval_s, remaining))


def pass_gate(
    backend: Backend,
    *,
    what: str,
    level: int | None,
    timeout_s: float,
    started: Callable[[], None] = lambda: None,
) -> float:
    """Start the server (``level`` None) or wake it from ``level``; return once it serves.

    The whole start-up gate of a start or a wake: healthy (``wait_until_healthy``), then one
    tiny completion answered, all within ``timeout_s`` (the deployment's
    ``startup_timeout_s``; ``what`` names the action in the error when it passes): each
    request gets only what is left. ``started`` runs once a start is launched. Returns the
    seconds it took: the time to ready.
    """
    began = time.monotonic()

    def left() -> float:
        remaining = timeout_s - (time.monotonic() - began)
        if remaining <= 0:
            raise BackendError(
                f"{what} of {backend}: not done within {timeout_s:g} s "
                "(the deployment's startup_timeout_s)"
            )
        return remaining

    if level is not None:
        backend.wake(level, timeout_s=left())
    else:
        backend.start()
        started()
    left()
    wait_until_healthy(backend, timeout_s, began=began)
    # Healthy is not serving: a woken vLLM engine can answer garbage or crash on its first
    # request. One tiny completion must answer.
    backend.check_completion(timeout_s=left())
    return time.monotonic() - began
