"""vLLM's HTTP surface, spoken through httpx with explicit timeouts; both backends use it.

Every failure becomes a ``BackendError`` whose message says what was asked, of which server,
and what happened. A refused connection raises ``ServerGone``: nothing listens there any
more. The sleep endpoints exist only on a vLLM started with ``VLLM_SERVER_DEV_MODE=1`` and
``--enable-sleep-mode``; a 404 from them says so.
"""

from __future__ import annotations

import json

import httpx

from dgxmm.clock import Clock
from dgxmm.errors import BackendError, InvalidInput, ServerGone
from dgxmm.fleet.backends.protocol import Health, HealthCheck, HttpTimeouts
from dgxmm.fleet.metrics.sample import MetricsSample, sample_from_text

__all__ = ["ModelServerClient"]

_DEV_MODE_HINT = (
    " (the sleep endpoints need vLLM started with VLLM_SERVER_DEV_MODE=1 and --enable-sleep-mode)"
)


class ModelServerClient:
    """The HTTP calls dgxmm makes to one model server."""

    def __init__(
        self,
        base_url: str,
        *,
        server: str,
        timeouts: HttpTimeouts,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._server = server
        self._timeouts = timeouts
        # trust_env=False: a model server is addressed directly; a proxy picked up from the
        # environment would turn "connection refused" into a proxy's 502.
        self._client = httpx.Client(
            base_url=base_url,
            transport=transport,
            trust_env=False,
            follow_redirects=False,
            timeout=self._timeout(timeouts.probe_s),
        )

    def check_health(self) -> HealthCheck:
        """Ask ``GET /health``; report what was seen, never raise for a server that is down."""
        timeout = self._timeouts.probe_s
        try:
            response = self._client.get("/health", timeout=self._timeout(timeout))
        except httpx.TimeoutException:
            return HealthCheck(health=Health.UNREACHABLE, detail=f"no answer within {timeout:g} s")
        except httpx.TransportError as err:
            return HealthCheck(health=Health.UNREACHABLE, detail=_describe(err))
        status = f"{response.status_code} {response.reason_phrase}".strip()
        if response.status_code == 200:
            return HealthCheck(health=Health.HEALTHY, detail=status)
        return HealthCheck(health=Health.UNHEALTHY, detail=status)

    def sleep(self, level: int) -> None:
        """Ask the server to sleep once its requests in flight finish; confirm it sleeps."""
        if level not in (1, 2):
            raise BackendError(f"sleep on {self._server}: level {level} is not 1 or 2")
        what = f"sleep (POST /sleep?level={level}&mode=wait)"
        self._send(
            "POST",
            "/sleep",
            what=what,
            timeout_s=self._timeouts.action_s,
            params={"level": str(level), "mode": "wait"},
        )
        if not self.is_sleeping():
            raise BackendError(
                f"{what} on {self._server}: answered OK, but GET /is_sleeping says it is awake"
            )

    def wake(self) -> None:
        """Ask the server to wake up; confirm it no longer sleeps."""
        what = "wake (POST /wake_up)"
        self._send("POST", "/wake_up", what=what, timeout_s=self._timeouts.action_s)
        if self.is_sleeping():
            raise BackendError(
                f"{what} on {self._server}: answered OK, but GET /is_sleeping says it sleeps"
            )

    def is_sleeping(self) -> bool:
        """Ask ``GET /is_sleeping``."""
        what = "sleep check (GET /is_sleeping)"
        response = self._send("GET", "/is_sleeping", what=what, timeout_s=self._timeouts.probe_s)
        try:
            answer = json.loads(response.content)
        except ValueError:
            answer = None
        value = answer.get("is_sleeping") if isinstance(answer, dict) else None
        if not isinstance(value, bool):
            raise BackendError(
                f'{what} on {self._server}: expected {{"is_sleeping": true|false}}, '
                f"got {_excerpt(response.text)}"
            )
        return value

    def check_completion(self) -> None:
        """Ask for one tiny chat completion; ``BackendError`` unless a choice comes back.

        The post-wake check: vLLM has bugs where a woken engine is healthy but answers
        garbage or crashes on its first request, so a start or wake is done only once one
        request really answered.
        """
        what = "post-wake check (POST /v1/chat/completions, max_tokens 1)"
        # No model named: the server answers with the one it serves, whatever the deployment
        # calls it. (The stand-in does; that vLLM does too is not yet checked in its source.)
        body = {"messages": [{"role": "user", "content": "ping"}], "max_tokens": 1}
        response = self._send(
            "POST", "/v1/chat/completions", what=what, timeout_s=self._timeouts.check_s, json=body
        )
        try:
            choices = json.loads(response.content)["choices"]
        except (ValueError, KeyError, TypeError):
            choices = None
        if not isinstance(choices, list) or not choices:
            raise BackendError(
                f"{what} on {self._server}: expected a chat completion with a choice, "
                f"got {_excerpt(response.text)}"
            )

    def served_models(self) -> list[str]:
        """Return the model names ``GET /v1/models`` lists."""
        what = "model list (GET /v1/models)"
        response = self._send("GET", "/v1/models", what=what, timeout_s=self._timeouts.probe_s)
        try:
            cards = json.loads(response.content)["data"]
            names = [card["id"] for card in cards]
        except (ValueError, KeyError, TypeError):
            names = None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise BackendError(
                f"{what} on {self._server}: expected an OpenAI model list, "
                f"got {_excerpt(response.text)}"
            )
        return names

    def fetch_metrics(self) -> str:
        """Return the ``GET /metrics`` page."""
        response = self._send(
            "GET", "/metrics", what="metrics (GET /metrics)", timeout_s=self._timeouts.metrics_s
        )
        return response.text

    def sample(self, clock: Clock) -> MetricsSample:
        """Fetch ``/metrics`` and read it as a sample taken when the page arrived."""
        text = self.fetch_metrics()
        taken_at_us = clock.now_us()
        try:
            return sample_from_text(text, taken_at_us=taken_at_us)
        except InvalidInput as err:
            raise BackendError(f"metrics (GET /metrics) on {self._server}: {err}") from err

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def _send(
        self,
        method: str,
        path: str,
        *,
        what: str,
        timeout_s: float,
        params: dict[str, str] | None = None,
        json: object = None,
    ) -> httpx.Response:
        try:
            response = self._client.request(
                method, path, params=params, json=json, timeout=self._timeout(timeout_s)
            )
        except httpx.ConnectError as err:
            raise ServerGone(
                f"{what} on {self._server}: {_describe(err)}; the server is gone"
            ) from err
        except httpx.TimeoutException as err:
            raise BackendError(
                f"{what} on {self._server}: no answer within {timeout_s:g} s"
            ) from err
        except httpx.TransportError as err:
            raise BackendError(f"{what} on {self._server}: {_describe(err)}") from err
        if response.is_success:
            return response
        hint = _DEV_MODE_HINT if response.status_code == 404 and path != "/metrics" else ""
        raise BackendError(
            f"{what} on {self._server}: answered {response.status_code} "
            f"{response.reason_phrase}{hint}: {_excerpt(response.text)}"
        )

    def _timeout(self, seconds: float) -> httpx.Timeout:
        return httpx.Timeout(seconds, connect=min(seconds, self._timeouts.connect_s))


def _describe(err: httpx.TransportError) -> str:
    text = str(err) or type(err).__name__
    if "refused" in text.lower():
        return "connection refused"
    return text


def _excerpt(text: str) -> str:
    text = text.strip()
    if not text:
        return "(empty body)"
    return repr(text if len(text) <= 200 else text[:197] + "...")
