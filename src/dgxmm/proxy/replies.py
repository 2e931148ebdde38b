"""What the proxy answers itself, in OpenAI's error shape, and why it refused.

``{"error": {"message", "type", "param", "code"}}``, as OpenAI's API and vLLM answer: a
client library raises its usual error (``NotFoundError``, ``APIStatusError``) with the
message. A 503 names its reason in ``code`` (a ``Refusal``) and carries ``Retry-After``; a
request refused before it is routed names its ``Rejection``. The port is unauthenticated, so
a message names the reason and the deployment, never an error's text or a URL (a model
server's log lines, its command line, a ``user:password@``): those go to dgxmm's log.
"""

from __future__ import annotations

import json
from enum import StrEnum

from dgxmm.errors import DgxmmError

__all__ = [
    "NOT_AWAKE",
    "ProxyRefused",
    "Refusal",
    "Rejection",
    "Reply",
    "error_events",
    "error_reply",
    "not_awake_reply",
    "refusal_reply",
    "rejection_reply",
]

Headers = list[tuple[bytes, bytes]]
NOT_AWAKE = "model_check_not_awake"  # the code of a model check's 409: the deployment is not awake


class Refusal(StrEnum):
    """Why a request for a known model is answered 503 at once, with no wake."""

    WAKE_OFF = "wake_on_request_off"  # the deployment opted out
    DOES_NOT_FIT = "does_not_fit"  # a wake or start would need an eviction
    STOPPED = "stopped_by_a_person"  # a request does not start what a person stopped
    FAILED = "deployment_failed"
    WAKE_FAILED = "wake_failed"  # the server did not come up
    HOLD_FULL = "hold_full"  # max held requests are already waiting
    HOLD_TIMEOUT = "hold_timeout"  # waited max hold time
    UNREACHABLE = "server_unreachable"  # the server did not answer the forwarded request
    # Past max_concurrent_requests with the queue full (or its wait too long): OpenAI's code.
    BUSY = "rate_limit_exceeded"

    @property
    def retry_after_s(self) -> int:
        """How long a client should wait before it tries again."""
        return _RETRY_AFTER_S[self]

    @property
    def status(self) -> int:
        """The status code it answers with."""
        return _STATUS.get(self, 503)


_RETRY_AFTER_S = {
    Refusal.WAKE_OFF: 60,
    Refusal.DOES_NOT_FIT: 60,
    Refusal.STOPPED: 300,
    Refusal.FAILED: 60,
    Refusal.WAKE_FAILED: 30,
    Refusal.HOLD_FULL: 5,  # a wake is under way: room comes soon
    Refusal.HOLD_TIMEOUT: 5,
    Refusal.UNREACHABLE: 5,
    Refusal.BUSY: 1,  # a slot frees as soon as a request ends
}
_STATUS = {Refusal.UNREACHABLE: 502, Refusal.BUSY: 429}
_KIND = {Refusal.UNREACHABLE: "server_error", Refusal.BUSY: "requests"}


class Rejection(StrEnum):
    """Why a request is refused before it is routed: what a browser page must not send."""

    CROSS_ORIGIN = "cross_origin_request"  # a page of another origin
    NOT_JSON = "unsupported_media_type"  # a body a page may send without a CORS preflight

    @property
    def status(self) -> int:
        """The status code it answers with."""
        return 403 if self is Rejection.CROSS_ORIGIN else 415


class Reply:
    """A whole answer: status, headers and body."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, body: bytes, headers: Headers) -> None:
        self.status = status
        self.body = body
        self.headers = headers


def error_reply(
    status: int,
    message: str,
    *,
    kind: str,
    code: str | None = None,
    param: str | None = None,
    retry_after_s: int | None = None,
) -> Reply:
    """Return an error in OpenAI's shape."""
    body = json.dumps(
        {"error": {"message": message, "type": kind, "param": param, "code": code}}
    ).encode()
    headers: Headers = [(b"content-type", b"application/json")]
    if retry_after_s is not None:
        headers.append((b"retry-after", str(retry_after_s).encode()))
    return Reply(status, body, headers)


def error_events(message: str, *, kind: str, code: str) -> bytes:
    """Return the end of an event stream that failed after it began: an ``error`` event in
    OpenAI's shape (the ``openai`` client raises its ``APIError`` with the message), then
    ``[DONE]`` for clients that read on."""
    error = {"message": message, "type": kind, "param": None, "code": code}
    return b"data: " + json.dumps({"error": error}).encode() + b"\n\ndata: [DONE]\n\n"


def refusal_reply(refusal: Refusal, message: str) -> Reply:
    """Return the 503 (502, 429) of a refusal, with ``Retry-After`` and its reason as ``code``.

    A 429's type is ``requests``, as OpenAI's rate limits answer (client libraries raise their
    ``RateLimitError`` for it, and retry after ``Retry-After``)."""
    kind = _KIND.get(refusal, "service_unavailable_error")
    return error_reply(
        refusal.status, message, kind=kind, code=refusal.value,
        retry_after_s=refusal.retry_after_s,
    )  # fmt: skip


def not_awake_reply(name: str, state: str, closed: bool) -> Reply:
    """Return the 409 of a model check to a deployment that is not awake (``NOT_AWAKE``).

    ``closed``: a sleep or stop (or a scheduled sleep's quiet check) has its door shut."""
    where = "being put to sleep or stopped (a take-down is under way)" if closed else state
    return error_reply(
        409, f"deployment {name!r} is {where}: a model check never wakes or starts anything",
        kind="invalid_request_error", code=NOT_AWAKE,
    )  # fmt: skip


def rejection_reply(rejection: Rejection, message: str) -> Reply:
    """Return the 4xx of a rejection, its reason as ``code``."""
    return error_reply(rejection.status, message, kind="invalid_request_error",
                       code=rejection.value)  # fmt: skip


class ProxyRefused(DgxmmError):
    """A request the proxy answers itself with a ``Refusal`` (never leaves the proxy)."""

    def __init__(self, refusal: Refusal, message: str) -> None:
        super().__init__(message)
        self.refusal = refusal
        self.message = message
