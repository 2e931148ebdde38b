"""The ``external`` backend: a model server someone else runs, reached at a base URL.

dgxmm drives it over HTTP (health, sleep, wake, metrics) but never starts or stops its
process: ``start`` only lets the start-up gate find it healthy, and ``stop`` reports
``StopOutcome.NOT_OWNED``. A refused connection during an action raises ``ServerGone``;
a health check reports it as ``Health.UNREACHABLE``, because a vLLM that is still loading
refuses connections too, so the deployer decides when unreachable means failed.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx

from dgxmm.clock import Clock
from dgxmm.errors import DefinitionError
from dgxmm.fleet.backends.client import ModelServerClient
from dgxmm.fleet.backends.pages import Pages
from dgxmm.fleet.backends.protocol import BackendKind, HealthCheck, HttpTimeouts, StopOutcome
from dgxmm.fleet.metrics.sample import MetricsSample

__all__ = ["ExternalBackend", "check_base_url"]


def check_base_url(base_url: str) -> str:
    """Return the base URL without a trailing slash; refuse one that is not plain http(s)."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise DefinitionError("base_url", f"{base_url!r} is not an http:// or https:// URL")
    if parts.query or parts.fragment:
        raise DefinitionError("base_url", f"{base_url!r} must not carry a query or fragment")
    try:
        parts.port  # noqa: B018 - urlsplit checks the port only when asked
    except ValueError as err:
        raise DefinitionError("base_url", f"{base_url!r}: {err}") from None
    return base_url.rstrip("/")


class ExternalBackend:
    """A server already running at a URL; dgxmm drives it but does not own its process."""

    def __init__(
        self,
        *,
        name: str,
        base_url: str,
        timeouts: HttpTimeouts | None = None,
        clock: Clock,
        transport: httpx.BaseTransport | None = None,
        pages: Pages | None = None,
    ) -> None:
        self.name = name
        self._base_url = check_base_url(base_url)
        self._clock = clock  # the fleet's: the store's clock, or a test's
        self._client = ModelServerClient(
            self._base_url,
            server=str(self),
            timeouts=timeouts or HttpTimeouts(),
            transport=transport,
            pages=pages,
        )

    def __str__(self) -> str:
        return f"deployment {self.name!r} (external, {self._base_url})"

    @property
    def kind(self) -> BackendKind:
        """Return ``BackendKind.EXTERNAL``."""
        return BackendKind.EXTERNAL

    @property
    def base_url(self) -> str:
        """Return the server's base URL."""
        return self._base_url

    @property
    def owns_process(self) -> bool:
        """Return False: someone else runs this server."""
        return False

    def start(self) -> None:
        """Do nothing: the server runs on its own; the start-up gate waits for it."""

    def stop(self, grace_s: float | None = None) -> StopOutcome:
        """Do nothing to a server dgxmm does not own; report ``NOT_OWNED``."""
        return StopOutcome.NOT_OWNED

    def reattach(self) -> HealthCheck:
        """Check the server's health: there is no process to find."""
        return self.check_health()

    def check_health(self) -> HealthCheck:
        """Ask ``GET /health``."""
        return self._client.check_health()

    def sleep(self, level: int = 1, *, timeout_s: float | None = None) -> None:
        """Put the server to sleep once its requests in flight finish; confirm it sleeps."""
        self._client.sleep(level, timeout_s=timeout_s)

    def wake(self, level: int = 1, *, timeout_s: float | None = None) -> None:
        """Wake the server from a sleep of ``level``; confirm it no longer sleeps."""
        self._client.wake(level, timeout_s=timeout_s)

    def is_sleeping(self) -> bool:
        """Ask the server whether it sleeps."""
        return self._client.is_sleeping()

    def check_completion(self, *, timeout_s: float | None = None) -> None:
        """Ask for one tiny completion; raise ``BackendError`` unless it answers in time."""
        self._client.check_completion(timeout_s=timeout_s)

    def served_models(self) -> list[str]:
        """Return the model names the server lists at ``/v1/models``."""
        return self._client.served_models()

    def fetch_metrics(self) -> str:
        """Return the server's ``/metrics`` page."""
        return self._client.fetch_metrics()

    def sample(self) -> MetricsSample:
        """Fetch ``/metrics`` and read it as a sample."""
        return self._client.sample(self._clock)

    def close(self) -> None:
        """Release the HTTP connections."""
        self._client.close()
