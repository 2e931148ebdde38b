"""vLLM's HTTP surface, spoken through httpx with explicit timeouts; both backends use it.

Every answer is read by ``answers.read_answer``: at most ``MAX_CONTROL_BYTES`` of a control
call's (``MAX_METRICS_BYTES`` of ``/metrics``), within the call's one deadline.

Every failure becomes a ``BackendError`` whose message says what was asked, of which server,
and what happened. A refused connection raises ``ServerGone``: nothing listens there any
more. The sleep endpoints exist only on a vLLM started with ``VLLM_SERVER_DEV_MODE=1`` and
``--enable-sleep-mode``; a 404 from them says so.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace

import httpx

from dgxmm.clock import Clock
from dgxmm.errors import BackendError, InvalidInput, ServerGone, TimedOut
from dgxmm.fleet.backends.answers import (
    MAX_CONTROL_BYTES,
    MAX_METRICS_BYTES,
    Answer,
    http_timeout,
    read_answer,
)
from dgxmm.fleet.backends.pages import (
    Failure,
    InlinePages,
    Page,
    PageRequest,
    Pages,
    describe,
    excerpt,
    tls_context,
)
from dgxmm.fleet.backends.protocol import Health, HealthCheck, HttpTimeouts
from dgxmm.fleet.metrics.sample import MetricsSample, SleepState, sample_from_text

__all__ = ["ModelServerClient"]

_DEV_MODE_HINT = (
    " (the sleep endpoints need vLLM started with VLLM_SERVER_DEV_MODE=1 and --enable-sleep-mode)"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Step:
    """One request of a wake."""

    what: str
    path: str
    params: dict[str, str] | None = None
    body: dict[str, object] | None = None


_LEVEL_1_WAKE = (_Step(what="POST /wake_up", path="/wake_up"),)
# vLLM's own order (its sleep-mode docs and RLHF examples): the weights' memory back, the
# weights loaded again into it, then the KV cache, then a prefix cache that no longer holds
# entries computed before the sleep.
_LEVEL_2_WAKE = (
    _Step(what="POST /wake_up?tags=weights", path="/wake_up", params={"tags": "weights"}),
    _Step(
        what="POST /collective_rpc reload_weights",
        path="/collective_rpc",
        body={"method": "reload_weights"},
    ),
    _Step(what="POST /wake_up?tags=kv_cache", path="/wake_up", params={"tags": "kv_cache"}),
    _Step(what="POST /reset_prefix_cache", path="/reset_prefix_cache"),
)


_LEVEL_OF = {SleepState.WEIGHTS_OFFLOADED: 1, SleepState.DISCARD_ALL: 2}


class ModelServerClient:
    """The HTTP calls dgxmm makes to one model server."""

    def __init__(
        self,
        base_url: str,
        *,
        server: str,
        timeouts: HttpTimeouts,
        transport: httpx.BaseTransport | None = None,
        pages: Pages | None = None,
    ) -> None:
        self._server = server
        self._base_url = base_url.rstrip("/")
        self._timeouts = timeouts
        # trust_env=False: a model server is addressed directly; a proxy picked up from the
        # environment would turn "connection refused" into a proxy's 502.
        self._client = httpx.Client(
            base_url=base_url,
            transport=transport,
            trust_env=False,
            follow_redirects=False,
            timeout=http_timeout(timeouts.probe_s, timeouts.connect_s),
            verify=tls_context(),
        )
        # GET /health and GET /metrics, the pages every metrics pass reads of every server:
        # in this thread by default, or by the fleet's page reader (pages.py says why).
        self._pages = pages or InlinePages(self._client)

    def check_health(self) -> HealthCheck:
        """Ask ``GET /health``; report what was seen, never raise for a server that is down."""
        timeout = self._timeouts.probe_s
        page = self._read("/health", timeout, metrics=False)
        if page.failure is Failure.TIMEOUT:
            return HealthCheck(health=Health.UNREACHABLE, detail=f"no answer within {timeout:g} s")
        if page.failure is not None:
            return HealthCheck(health=Health.UNREACHABLE, detail=page.detail)
        status = f"{page.status} {page.reason}".strip()
        if page.status == 200:
            return HealthCheck(health=Health.HEALTHY, detail=status)
        return HealthCheck(health=Health.UNHEALTHY, detail=status)

    def sleep(self, level: int, *, timeout_s: float | None = None) -> None:
        """Ask the server to sleep once its requests in flight finish; confirm it sleeps.

        ``timeout_s`` bounds the whole of it (the deployment's sleep timeout); without it,
        each request gets the action timeout.
        """
        if level not in (1, 2):
            raise BackendError(f"sleep on {self._server}: level {level} is not 1 or 2")
        deadline = _Deadline(timeout_s or self._timeouts.action_s)
        what = f"sleep (POST /sleep?level={level}&mode=wait)"
        self._send(
            "POST",
            "/sleep",
            what=what,
            timeout_s=deadline.left(what, self._server),
            params={"level": str(level), "mode": "wait"},
            limit_s=deadline.seconds,
        )
        if not self.is_sleeping(timeout_s=deadline.left(what, self._server)):
            raise BackendError(
                f"{what} on {self._server}: answered OK, but GET /is_sleeping says it is awake"
            )

    def wake(self, level: int = 1, *, timeout_s: float | None = None) -> None:
        """Wake the server from a sleep of ``level``; confirm it no longer sleeps.

        Level 1 is one ``POST /wake_up``. Level 2 dropped the weights, so it is vLLM's
        sequence: wake the weights' memory, reload them (``collective_rpc``
        ``reload_weights``), wake the KV cache, then reset the prefix cache, whose entries
        were computed before the sleep. ``timeout_s`` bounds the whole of it.

        The level the server says it sleeps at (``vllm:engine_sleep_state``), where it
        exports the gauge, wins over ``level``: a level-2 sleeper woken the level-1 way
        would serve from weights that are no longer there.
        """
        if level not in (1, 2):
            raise BackendError(f"wake on {self._server}: level {level} is not 1 or 2")
        deadline = _Deadline(timeout_s or self._timeouts.action_s)
        level = self._sleep_level(deadline) or level
        what = "wake (POST /wake_up)" if level == 1 else "level-2 wake"
        for step in _LEVEL_2_WAKE if level == 2 else _LEVEL_1_WAKE:
            said = what if level == 1 else f"{what}: {step.what}"
            self._send(
                "POST",
                step.path,
                what=said,
                timeout_s=deadline.left(said, self._server),
                params=step.params,
                json=step.body,
                limit_s=deadline.seconds,
            )
        if self.is_sleeping(timeout_s=deadline.left(what, self._server)):
            raise BackendError(
                f"{what} on {self._server}: answered OK, but GET /is_sleeping says it sleeps"
            )

    def _sleep_level(self, deadline: _Deadline) -> int | None:
        """Return the level the server reports it sleeps at; None when it does not say."""
        what = "metrics (GET /metrics)"
        # The probe timeout, not the metrics one: a hung /metrics must not eat the wake's time.
        wait = min(deadline.left("wake", self._server), self._timeouts.probe_s)
        try:
            text = self._send(
                "GET", "/metrics", what=what, timeout_s=wait, max_bytes=MAX_METRICS_BYTES
            ).text
            state = sample_from_text(text, taken_at_us=0).sleep_state
        except (BackendError, InvalidInput):
            return None  # an older vLLM, or metrics that do not answer: the given level
        return _LEVEL_OF.get(state) if state is not None else None

    def is_sleeping(self, *, timeout_s: float | None = None) -> bool:
        """Ask ``GET /is_sleeping`` (waiting at most the probe timeout, or ``timeout_s``)."""
        what = "sleep check (GET /is_sleeping)"
        wait = _within(self._timeouts.probe_s, timeout_s)
        response = self._send("GET", "/is_sleeping", what=what, timeout_s=wait)
        try:
            answer = json.loads(response.body)
        except ValueError:
            answer = None
        value = answer.get("is_sleeping") if isinstance(answer, dict) else None
        if not isinstance(value, bool):
            raise BackendError(
                f'{what} on {self._server}: expected {{"is_sleeping": true|false}}, '
                f"got {excerpt(response.text)}"
            )
        return value

    def check_completion(self, *, timeout_s: float | None = None) -> None:
        """Ask for one tiny chat completion; ``BackendError`` unless a choice comes back.

        The post-wake check: vLLM has bugs where a woken engine is healthy but answers
        garbage or crashes on its first request, so a start or wake is done only once one
        request really answered.
        """
        what = "post-wake check (POST /v1/chat/completions, max_tokens 1)"
        # No model named: the server answers with the one it serves, whatever the deployment
        # calls it. (The stand-in does; that vLLM does too is not yet checked in its source.)
        body = {"messages": [{"role": "user", "content": "ping"}], "max_tokens": 1}
        wait = _within(self._timeouts.check_s, timeout_s)
        response = self._send("POST", "/v1/chat/completions", what=what, timeout_s=wait, json=body)
        try:
            choices = json.loads(response.body)["choices"]
        except (ValueError, KeyError, TypeError):
            choices = None
        if not isinstance(choices, list) or not choices:
            raise BackendError(
                f"{what} on {self._server}: expected a chat completion with a choice, "
                f"got {excerpt(response.text)}"
            )

    def served_models(self) -> list[str]:
        """Return the model names ``GET /v1/models`` lists."""
        what = "model list (GET /v1/models)"
        response = self._send("GET", "/v1/models", what=what, timeout_s=self._timeouts.probe_s)
        try:
            cards = json.loads(response.body)["data"]
            names = [card["id"] for card in cards]
        except (ValueError, KeyError, TypeError):
            names = None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise BackendError(
                f"{what} on {self._server}: expected an OpenAI model list, "
                f"got {excerpt(response.text)}"
            )
        return names

    def fetch_metrics(self) -> str:
        """Return the ``GET /metrics`` page."""
        response = self._send(
            "GET",
            "/metrics",
            what="metrics (GET /metrics)",
            timeout_s=self._timeouts.metrics_s,
            max_bytes=MAX_METRICS_BYTES,
        )
        return response.text

    def sample(self, clock: Clock) -> MetricsSample:
        """Fetch ``/metrics`` and read it as a sample taken when the page arrived."""
        what = "metrics (GET /metrics)"
        timeout = self._timeouts.metrics_s
        page = self._read("/metrics", timeout, metrics=True)
        taken_at_us = clock.now_us()
        if page.failure is Failure.CONNECT:
            raise ServerGone(f"{what} on {self._server}: {page.detail}; the server is gone")
        if page.failure is Failure.TIMEOUT:
            raise TimedOut(f"{what} on {self._server}: no answer within {timeout:.3g} s")
        if page.failure is not None:
            raise BackendError(f"{what} on {self._server}: {page.detail}")
        if not page.is_success:
            raise BackendError(
                f"{what} on {self._server}: answered {page.status} {page.reason}: {page.excerpt}"
            )
        if page.sample is None:
            raise BackendError(f"{what} on {self._server}: {page.invalid}")
        return replace(page.sample, taken_at_us=taken_at_us)

    def _read(self, path: str, timeout_s: float, *, metrics: bool) -> Page:
        request = PageRequest(
            url=self._base_url + path,
            connect_s=self._timeouts.connect_s,
            timeout_s=timeout_s,
            metrics=metrics,
        )
        return self._pages.read(request)

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
        limit_s: float | None = None,
        max_bytes: int = MAX_CONTROL_BYTES,
    ) -> Answer:
        """Send one request, read at most ``max_bytes`` of its answer within ``timeout_s``;
        ``limit_s`` is the action's own timeout, named when it passes."""
        try:
            response = read_answer(
                self._client,
                method,
                path,
                max_bytes=max_bytes,
                seconds=timeout_s,
                connect_s=self._timeouts.connect_s,
                params=params,
                json=json,
            )
        except httpx.ConnectError as err:
            raise ServerGone(
                f"{what} on {self._server}: {describe(err)}; the server is gone"
            ) from err
        except httpx.TimeoutException as err:
            raise TimedOut(
                f"{what} on {self._server}: no answer within {limit_s or timeout_s:.3g} s"
            ) from err
        except (httpx.TransportError, httpx.DecodingError) as err:
            raise BackendError(f"{what} on {self._server}: {describe(err)}") from err
        if response.is_success:
            return response
        hint = _DEV_MODE_HINT if response.status == 404 and path != "/metrics" else ""
        raise BackendError(
            f"{what} on {self._server}: answered {response.status} "
            f"{response.reason}{hint}: {excerpt(response.text)}"
        )


class _Deadline:
    """The end of an action of several requests: each gets the time left, none more."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    def left(self, what: str, server: str) -> float:
        """Return the seconds left; ``TimedOut`` when none are."""
        left = self._end - time.monotonic()
        if left <= 0:
            raise TimedOut(f"{what} on {server}: not done within {self.seconds:.3g} s")
        return left


def _within(limit_s: float, timeout_s: float | None) -> float:
    """Return a request's own limit, or less when the action has less left."""
    return limit_s if timeout_s is None else min(limit_s, timeout_s)
