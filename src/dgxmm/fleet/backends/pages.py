"""The two pages the metrics pass reads of every server, ``GET /metrics`` and ``GET /health``.

A ``Pages`` reads one page and says what came back as a ``Page``: the status, and for
``/metrics`` the sample already read from the text (or why it could not be), or the failure
that kept an answer from coming. ``ModelServerClient`` turns a ``Page`` into its errors and
health checks, whoever read it. Two read them:

- ``InlinePages``, in the calling thread, through the client's own httpx client (where
  tests give a mock transport); every ``Fleet`` by default;
- ``PageProcess`` (``page_process.py``), in a child process of its own, on its threads;
  ``dgxmm serve``'s fleet. A pass reads a thousand pages a minute: in the serving
  interpreter, that HTTP and parsing held every request of the API behind the GIL for the
  length of the pass (issue 28: ``GET /api/changes`` answered in 4 ms at the median and
  530 ms at the 99th percentile while a pass ran).

The mapping from what httpx saw to a ``Page`` is here once, for both.
"""

from __future__ import annotations

import functools
import ssl
from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any, Protocol

import httpx

from dgxmm.errors import InvalidInput
from dgxmm.fleet.backends.answers import (
    MAX_CONTROL_BYTES,
    MAX_METRICS_BYTES,
    read_answer,
)
from dgxmm.fleet.metrics.sample import MetricsSample, SleepState, sample_from_text

__all__ = [
    "Failure",
    "InlinePages",
    "Page",
    "PageRequest",
    "Pages",
    "describe",
    "excerpt",
    "page_of_error",
    "page_of_response",
    "tls_context",
]


class Failure(Enum):
    """Why no answer came."""

    CONNECT = "connect"  # nothing listens (refused, no route): the server is gone
    TIMEOUT = "timeout"  # connecting or the answer took longer than allowed
    TRANSPORT = "transport"  # the connection broke another way


@dataclass(frozen=True, slots=True, kw_only=True)
class PageRequest:
    """One page to read: its absolute URL, how long it may take, whether it is metrics."""

    url: str
    connect_s: float
    timeout_s: float
    metrics: bool  # read the answer as a vLLM metrics sample


@dataclass(frozen=True, slots=True, kw_only=True)
class Page:
    """What reading one page found.

    ``failure`` set: no answer (``detail`` says why). Otherwise ``status`` and ``reason``;
    ``excerpt`` of the body when the status is not a success; for a metrics page answered
    with success, ``sample`` (taken at 0: the caller stamps its own clock's time) or
    ``invalid``, why the text is not a sample.
    """

    failure: Failure | None = None
    detail: str = ""
    status: int = 0
    reason: str = ""
    excerpt: str = ""
    sample: MetricsSample | None = None
    invalid: str | None = None

    @property
    def is_success(self) -> bool:
        """Return whether the server answered with a 2xx status."""
        return self.failure is None and 200 <= self.status < 300

    def to_json(self) -> dict[str, Any]:
        """Return the page as JSON values (the child process's answer)."""
        found: dict[str, Any] = {
            "failure": self.failure.value if self.failure is not None else None,
            "detail": self.detail,
            "status": self.status,
            "reason": self.reason,
            "excerpt": self.excerpt,
            "invalid": self.invalid,
            "sample": None,
        }
        if self.sample is not None:
            sample = asdict(self.sample)
            state = self.sample.sleep_state
            found["sample"] = {**sample, "sleep_state": state.value if state else None}
        return found

    @classmethod
    def from_json(cls, found: dict[str, Any]) -> Page:
        """Return the page ``to_json`` wrote."""
        sample = found["sample"]
        if sample is not None:
            state = sample["sleep_state"]
            sample = MetricsSample(
                **{**sample, "sleep_state": SleepState(state) if state is not None else None}
            )
        return cls(
            failure=Failure(found["failure"]) if found["failure"] is not None else None,
            detail=found["detail"],
            status=found["status"],
            reason=found["reason"],
            excerpt=found["excerpt"],
            sample=sample,
            invalid=found["invalid"],
        )


class Pages(Protocol):
    """Reads one page of a model server; never raises for what the server did."""

    def read(self, request: PageRequest) -> Page:
        """Read the page; say what came back."""
        ...


class InlinePages:
    """Pages read in the calling thread, through an httpx client."""

    def __init__(self, client: httpx.Client) -> None:
        self._client = client

    def read(self, request: PageRequest) -> Page:
        """Read the page with the client (at most ``MAX_METRICS_BYTES`` of ``/metrics``,
        ``MAX_CONTROL_BYTES`` of another); say what came back."""
        bound = MAX_METRICS_BYTES if request.metrics else MAX_CONTROL_BYTES
        try:
            answer = read_answer(
                self._client,
                "GET",
                request.url,
                max_bytes=bound,
                seconds=request.timeout_s,
                connect_s=request.connect_s,
            )
        except (httpx.TransportError, httpx.DecodingError) as error:
            return page_of_error(error)
        if answer.cut and answer.is_success and request.metrics:
            return Page(
                status=answer.status,
                reason=answer.reason,
                invalid=f"the page is over {bound} bytes (dgxmm reads no more of it)",
            )
        return page_of_response(answer.status, answer.reason, answer.text, metrics=request.metrics)


@functools.cache
def tls_context() -> ssl.SSLContext:
    """Return the TLS settings every model server's httpx client shares.

    httpx builds a context per client unless given one, and reading the CA bundle costs
    20 to 90 ms: a fleet of 1,000 deployments spent half a minute of the serving
    interpreter's CPU building its clients. A module's, not an object's: it holds no data of
    any store or app, only what the environment's CA bundle says, the same for all.
    """
    return httpx.create_ssl_context(trust_env=False)


def page_of_error(error: httpx.TransportError | httpx.DecodingError) -> Page:
    """Return the page of a request that got no answer."""
    # ConnectError before TimeoutException: a ConnectTimeout is a timeout, not a refusal.
    if isinstance(error, httpx.ConnectError):
        return Page(failure=Failure.CONNECT, detail=describe(error))
    if isinstance(error, httpx.TimeoutException):
        return Page(failure=Failure.TIMEOUT, detail=describe(error))
    return Page(failure=Failure.TRANSPORT, detail=describe(error))


def page_of_response(status: int, reason: str, text: str, *, metrics: bool) -> Page:
    """Return the page of an answer; a metrics page that succeeded is read as a sample."""
    if not 200 <= status < 300:
        return Page(status=status, reason=reason, excerpt=excerpt(text))
    if not metrics:
        return Page(status=status, reason=reason)
    try:
        return Page(status=status, reason=reason, sample=sample_from_text(text, taken_at_us=0))
    except InvalidInput as error:
        return Page(status=status, reason=reason, invalid=str(error))


def describe(error: httpx.TransportError | httpx.DecodingError) -> str:
    """Return what a transport error says, a refusal in two words."""
    text = str(error) or type(error).__name__
    if "refused" in text.lower() or _refused(error):
        return "connection refused"
    return text


def _refused(error: BaseException) -> bool:
    # The async client's refusal says "All connection attempts failed"; the refusal itself
    # is down its chain of causes.
    seen: BaseException | None = error
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def excerpt(text: str) -> str:
    """Return the start of a body, quoted, for an error message."""
    text = text.strip()
    if not text:
        return "(empty body)"
    return repr(text if len(text) <= 200 else text[:197] + "...")
