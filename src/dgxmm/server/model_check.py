"""A model check: one chat or completion sent to a deployment, its answer and its speed.

The console's deployment page sends a prompt; the server makes the call itself (the browser
never reaches a model server), streamed, so that it can measure the time to the first token
and the tokens per second after it. Through the proxy when one runs in this server (what a
client sees, the proxy's limits included), else straight to the deployment's server.

Bounds (issue 44 found each of them missing):

- **One deadline**, ``TIMEOUT_S`` for the whole call, a cold model's first token included:
  httpx's timeouts are per read, and a server that drips a line a second held a check for
  100 s; here the call is cancelled at the deadline wherever it waits.
- **A byte bound inside a line**: at most ``MAX_ANSWER_BYTES`` of the stream are read, counted
  as the bytes arrive, not per line (a line is never gathered whole before the bound is
  looked at: 512 MiB without a newline grew ``dgxmm serve`` by 1 GB). The answer is cut
  there, and says so.
- **A bounded error read**: of an error answer the first ``ERROR_BYTES`` are kept, and no more
  than those and one chunk are read.
- **Checks at once**: the call is async (a hung check holds no worker thread: 42 of them took
  every thread and ``GET /api/jobs`` waited 22 to 40 s), and at most ``MAX_CHECKS`` run at once
  per app (``CheckSlots``); one more is ``Busy`` (409).

A check never wakes or starts anything: a deployment that is not running is refused
(``Conflict``, 409) with its state; through the proxy the check carries the proxy's check key
(``ProxyApp.check_key``), so that the proxy neither holds nor wakes it, nor counts it as a
client's request, and answers 409 with the state when the deployment is not awake (a sleep
under way, say). A server that fails, answers an error or runs out of time is a
``BackendError`` (502) saying which.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from typing import Any

import httpx
import orjson

from dgxmm.errors import BackendError, Busy, Conflict, InvalidInput
from dgxmm.fleet import Deployment, DeploymentState
from dgxmm.proxy import CHECK_KEY_HEADER, NOT_AWAKE

__all__ = [
    "ERROR_BYTES",
    "MAX_ANSWER_BYTES",
    "MAX_CHECKS",
    "MAX_PROMPT",
    "MAX_TOKENS",
    "TIMEOUT_S",
    "CheckKind",
    "CheckResult",
    "CheckRoute",
    "CheckSlots",
    "ModelCheck",
    "run_check",
]

MAX_PROMPT = 4000  # characters: a question, not a document
MAX_TOKENS = 512
TIMEOUT_S = 60.0  # the whole call, a cold model's first token included
MAX_ANSWER_BYTES = 64 * 1024  # of the stream read
MIN_SPEED_TOKENS = 5  # fewer tokens tell no speed
MIN_SPEED_SPAN_S = 0.001  # nor a span shorter than a millisecond
ERROR_BYTES = 500  # of an error answer, kept for the message
MAX_CHECKS = 8  # at once, per app


class CheckKind(Enum):
    """What is sent: a chat message, or a prompt to complete."""

    CHAT = "chat"
    COMPLETION = "completion"


class CheckRoute(Enum):
    """Which way the call went."""

    PROXY = "proxy"
    SERVER = "server"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCheck:
    """One check as asked: checked at the edge (``InvalidInput`` naming the field)."""

    kind: CheckKind
    prompt: str
    max_tokens: int = 64

    def __post_init__(self) -> None:
        wrong: list[tuple[str, str]] = []
        if not self.prompt.strip():
            wrong.append(("prompt", "write something to send"))
        elif len(self.prompt) > MAX_PROMPT:
            wrong.append(("prompt", f"is {len(self.prompt)} characters; at most {MAX_PROMPT}"))
        if not 1 <= self.max_tokens <= MAX_TOKENS:
            wrong.append(("max_tokens", f"{self.max_tokens} is not from 1 to {MAX_TOKENS}"))
        if wrong:
            raise InvalidInput.every(wrong)


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckResult:
    """What came back, and how fast."""

    route: CheckRoute
    model: str
    answer: str
    cut: bool  # the stream passed MAX_ANSWER_BYTES: the answer is its beginning
    first_token_ms: float | None  # None: no token came
    total_ms: float
    tokens: int  # the server's count when it gives one, else the pieces streamed
    tokens_per_s: float | None  # after the first token; None below 5 tokens or 1 ms

    def to_json(self) -> dict[str, Any]:
        """Return it as plain JSON values."""
        return {
            "route": self.route.value,
            "model": self.model,
            "answer": self.answer,
            "cut": self.cut,
            "first_token_ms": self.first_token_ms,
            "total_ms": self.total_ms,
            "tokens": self.tokens,
            "tokens_per_s": self.tokens_per_s,
        }


class CheckSlots:
    """The checks running at once in one app, at most ``MAX_CHECKS`` (one per ``Services``)."""

    def __init__(self, most: int = MAX_CHECKS) -> None:
        self._most = most
        self._taken = 0  # on the app's event loop only: no lock

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold a slot for the block; ``Busy`` when every slot is taken."""
        if self._taken >= self._most:
            raise Busy(
                f"{self._most} model checks are under way, the most at once; "
                "try again when one has finished"
            )
        self._taken += 1
        try:
            yield
        finally:
            self._taken -= 1


async def run_check(
    deployment: Deployment,
    check: ModelCheck,
    *,
    proxy_url: str | None,
    check_key: str | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    timer: Callable[[], float] = time.monotonic,
) -> CheckResult:
    """Send the check to the deployment (through the proxy at ``proxy_url`` when given).

    ``check_key``: the proxy's (``ProxyApp.check_key``), sent so that it never wakes anything.
    """
    if deployment.state is not DeploymentState.RUNNING:
        raise Conflict(
            f"deployment {deployment.name} is {deployment.state.value}: a check is sent only "
            "to a running deployment, and never wakes or starts one; wake it first"
        )
    route = CheckRoute.PROXY if proxy_url is not None else CheckRoute.SERVER
    base = (proxy_url if proxy_url is not None else deployment.url).rstrip("/")
    path = "/v1/chat/completions" if check.kind is CheckKind.CHAT else "/v1/completions"
    body: dict[str, Any] = {
        "model": deployment.model,
        "max_tokens": check.max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if check.kind is CheckKind.CHAT:
        body["messages"] = [{"role": "user", "content": check.prompt}]
    else:
        body["prompt"] = check.prompt
    # No encoding: the bytes counted against the bound are the wire's.
    headers = {"accept-encoding": "identity"}
    if route is CheckRoute.PROXY and check_key is not None:
        headers[CHECK_KEY_HEADER] = check_key
    seconds = TIMEOUT_S  # read at the call: tests shorten it
    started = timer()
    try:
        async with (
            asyncio.timeout(seconds),
            httpx.AsyncClient(
                timeout=httpx.Timeout(seconds, connect=min(seconds, 5.0)),
                transport=transport,
                trust_env=False,
                follow_redirects=False,
            ) as client,
            client.stream("POST", base + path, json=body, headers=headers) as response,
        ):
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            if encoding not in ("", "identity"):
                raise BackendError(
                    f"the {route.value} answered with Content-Encoding {encoding}, "
                    "though none was asked"
                )
            if response.status_code != 200:
                head = await _head_of(response)
                if route is CheckRoute.PROXY and response.status_code == 409:
                    _raise_not_awake(head, deployment)
                text = head.decode(errors="replace")
                raise BackendError(
                    f"the {route.value} answered {response.status_code}: {text or '(no body)'}"
                )
            return await _read_stream(response, route, deployment.model, started, timer)
    except (TimeoutError, httpx.TimeoutException):
        raise BackendError(f"no answer within {seconds:g} s from the {route.value}") from None
    except httpx.HTTPError as error:
        raise BackendError(f"the {route.value} could not be reached: {error}") from None


async def _head_of(response: httpx.Response) -> bytes:
    """Return the first ``ERROR_BYTES`` of an answer, reading no more than those and a chunk."""
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        parts.append(chunk)
        size += len(chunk)
        if size >= ERROR_BYTES:
            break
    return b"".join(parts)[:ERROR_BYTES]


def _raise_not_awake(head: bytes, deployment: Deployment) -> None:
    """Raise the proxy's refusal of a check to a deployment that is not awake, as a Conflict."""
    try:
        error = orjson.loads(head)["error"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return
    if isinstance(error, dict) and error.get("code") == NOT_AWAKE:
        raise Conflict(str(error.get("message") or f"deployment {deployment.name} is not awake"))


async def _read_stream(
    response: httpx.Response,
    route: CheckRoute,
    model: str,
    started: float,
    timer: Callable[[], float],
) -> CheckResult:
    """Read server-sent events until [DONE] or the byte bound; time the tokens.

    The bound is counted on the bytes as they arrive: a line is split off only once its
    newline came, and a line longer than the bound is never held whole.
    """
    pieces: list[str] = []
    first: float | None = None
    last = started
    read = 0
    cut = False
    done = False
    counted: int | None = None
    pending = bytearray()  # the line under way
    async for chunk in response.aiter_bytes():
        read += len(chunk)
        cut = read > MAX_ANSWER_BYTES
        pending += chunk[: len(chunk) - (read - MAX_ANSWER_BYTES)] if cut else chunk
        while not done and (end := pending.find(b"\n")) >= 0:
            line = pending[:end].decode(errors="replace").rstrip("\r")
            del pending[: end + 1]
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                done = True
                break
            try:
                event = orjson.loads(data)
            except orjson.JSONDecodeError:
                raise BackendError(
                    f"the {route.value} streamed something that is not JSON"
                ) from None
            usage = event.get("usage") if isinstance(event, dict) else None
            if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
                counted = usage["completion_tokens"]
            text = _text_of(event)
            if text:
                now = timer()
                first = now if first is None else first
                last = now
                pieces.append(text)
        if done or cut:
            break
    ended = timer()
    tokens = counted if counted is not None else len(pieces)
    span = last - first if first is not None else 0.0
    return CheckResult(
        route=route,
        model=model,
        answer="".join(pieces),
        cut=cut,
        first_token_ms=None if first is None else round((first - started) * 1000, 1),
        total_ms=round((ended - started) * 1000, 1),
        tokens=tokens,
        # The tokens after the first, over the time after it: the speed a reader sees. Not
        # of a few tokens, or a span under a millisecond: 3 tokens in 0.05 ms read as
        # 59,642 tokens/s (issue 45); the page and the CLI show "-".
        tokens_per_s=(
            round((tokens - 1) / span, 1)
            if tokens >= MIN_SPEED_TOKENS and span >= MIN_SPEED_SPAN_S
            else None
        ),
    )


def _text_of(event: Any) -> str:
    """Return the text one streamed event carries (a chat delta or a completion's text)."""
    if not isinstance(event, dict):
        return ""
    choices = event.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return ""
    choice = choices[0]
    delta = choice.get("delta")
    if isinstance(delta, dict) and isinstance(delta.get("content"), str):
        return str(delta["content"])
    text = choice.get("text")
    return text if isinstance(text, str) else ""
