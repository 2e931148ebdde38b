"""A model check: one chat or completion sent to a deployment, its answer and its speed.

The console's deployment page sends a prompt; the server makes the call itself (the browser
never reaches a model server), streamed, so that it can measure the time to the first token
and the tokens per second after it. Through the proxy when one runs in this server (what a
client sees, the proxy's limits included), else straight to the deployment's server.

Bounds: a prompt of at most ``MAX_PROMPT`` characters and ``MAX_TOKENS`` tokens asked, the
whole call within ``TIMEOUT_S``, and at most ``MAX_ANSWER_BYTES`` of the stream read (the
answer is cut there, and says so). A check never wakes or starts anything: a deployment that
is not running is refused (``Conflict``, 409) with its state; a server that fails, answers
an error or runs out of time is a ``BackendError`` (502) saying which.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

import httpx
import orjson

from dgxmm.errors import BackendError, Conflict, InvalidInput
from dgxmm.fleet import Deployment, DeploymentState

__all__ = [
    "MAX_ANSWER_BYTES",
    "MAX_PROMPT",
    "MAX_TOKENS",
    "TIMEOUT_S",
    "CheckKind",
    "CheckResult",
    "CheckRoute",
    "ModelCheck",
    "run_check",
]

MAX_PROMPT = 4000  # characters: a question, not a document
MAX_TOKENS = 512
TIMEOUT_S = 60.0  # the whole call, a cold model's first token included
MAX_ANSWER_BYTES = 64 * 1024  # of the stream read
MIN_SPEED_TOKENS = 5  # fewer tokens tell no speed
MIN_SPEED_SPAN_S = 0.001  # nor a span shorter than a millisecond


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
    tokens_per_s: float | None  # after the first token; None with fewer than two

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


def run_check(
    deployment: Deployment,
    check: ModelCheck,
    *,
    proxy_url: str | None,
    transport: httpx.BaseTransport | None = None,
    timer: Callable[[], float] = time.monotonic,
) -> CheckResult:
    """Send the check to the deployment (through the proxy at ``proxy_url`` when given)."""
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
    timeout = httpx.Timeout(TIMEOUT_S, connect=5.0)
    started = timer()
    try:
        with (
            httpx.Client(timeout=timeout, transport=transport, trust_env=False) as client,
            client.stream("POST", base + path, json=body) as response,
        ):
            if response.status_code != 200:
                text = response.read()[:500].decode(errors="replace")
                raise BackendError(
                    f"the {route.value} answered {response.status_code}: {text or '(no body)'}"
                )
            return _read_stream(response, route, deployment.model, started, timer)
    except httpx.TimeoutException:
        raise BackendError(f"no answer within {TIMEOUT_S:g} s from the {route.value}") from None
    except httpx.HTTPError as error:
        raise BackendError(f"the {route.value} could not be reached: {error}") from None


def _read_stream(
    response: httpx.Response,
    route: CheckRoute,
    model: str,
    started: float,
    timer: Callable[[], float],
) -> CheckResult:
    """Read server-sent events until [DONE] or the byte bound; time the tokens."""
    pieces: list[str] = []
    first: float | None = None
    last = started
    read = 0
    cut = False
    counted: int | None = None
    for line in response.iter_lines():
        read += len(line) + 1
        if read > MAX_ANSWER_BYTES:
            cut = True
            break
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            break
        try:
            event = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise BackendError(f"the {route.value} streamed something that is not JSON") from None
        usage = event.get("usage") if isinstance(event, dict) else None
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            counted = usage["completion_tokens"]
        text = _text_of(event)
        if text:
            now = timer()
            first = now if first is None else first
            last = now
            pieces.append(text)
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
