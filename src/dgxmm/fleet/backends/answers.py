"""A model server's answer, read with a byte bound and one deadline: the one way dgxmm reads one.

Every call dgxmm makes to a model server (wake, sleep, ``/is_sleeping``, ``/v1/models``, the
post-wake check, ``/health``, ``/metrics``) reads its answer through ``read_answer``. A server
is not trusted to answer briefly: one that answered a wake's check with 500 and 256 MiB grew
dgxmm by 715 MiB (issue 44), and any proxy client can make dgxmm wake an external server.
So the body is taken chunk by chunk, and the read stops once ``max_bytes`` are in: at
most that and one chunk (httpx reads 64 KiB at a time) are ever held. What was cut is said
(``Answer.cut``); a control answer is a few bytes of JSON, so a cut one is an error.

httpx's timeouts are per read: a server that drips a byte a second never trips them. The
whole call has one deadline here: each read is given only the time left when the request
went out, and the deadline is looked at after every chunk, so a dripping server is dropped
within one chunk of it. (A sync read cannot be cut short from outside: a server that sends a
byte just before the deadline and then stalls holds the call for the rest of that read's
timeout, at most the call's own seconds again.)

Compression cannot turn a small answer into a large one: ``Accept-Encoding: identity`` is
asked, and an answer encoded anyway is a ``httpx.DecodingError``, so the bytes counted are
the ones that came over the wire.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

__all__ = ["MAX_CONTROL_BYTES", "MAX_METRICS_BYTES", "Answer", "http_timeout", "read_answer"]

# A control answer is a few bytes of JSON ({"is_sleeping": true}, a one-token completion, a
# model list); an error's first lines are all a message quotes.
MAX_CONTROL_BYTES = 16 * 1024
# vLLM's /metrics is 20 to 200 KiB (more with many LoRA adapters); this is far past it.
MAX_METRICS_BYTES = 8 * 1024 * 1024
_IDENTITY = {"accept-encoding": "identity"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """What a server answered: the status and at most the bound's bytes of the body."""

    status: int
    reason: str
    body: bytes
    cut: bool  # the body went on past the bound: ``body`` is its beginning

    @property
    def is_success(self) -> bool:
        """Return whether the status is a 2xx."""
        return 200 <= self.status < 300

    @property
    def text(self) -> str:
        """Return the body as text (bytes that are not UTF-8 replaced)."""
        return self.body.decode(errors="replace")


def read_answer(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    max_bytes: int,
    seconds: float,
    connect_s: float,
    params: dict[str, str] | None = None,
    json: object = None,
    monotonic: Callable[[], float] = time.monotonic,
) -> Answer:
    """Send one request; read at most ``max_bytes`` of the answer, all within ``seconds``.

    httpx's errors pass through (``httpx.ReadTimeout`` once the deadline passed).
    """
    end = monotonic() + seconds
    request = client.build_request(
        method,
        url,
        params=params,
        json=json,
        headers=_IDENTITY,
        timeout=http_timeout(seconds, connect_s),
    )
    response = client.send(request, stream=True)
    try:
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise httpx.DecodingError(
                f"the answer came with Content-Encoding {encoding}, though none was asked",
                request=request,
            )
        parts: list[bytes] = []
        size = 0
        cut = False
        # No encoding (refused above): the bytes are the raw ones, as they arrive.
        for chunk in response.iter_bytes():
            parts.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                cut = True
                break
            if monotonic() > end:
                raise httpx.ReadTimeout(f"not done within {seconds:.3g} s", request=request)
        body = b"".join(parts)[:max_bytes]
    finally:
        response.close()
    return Answer(status=response.status_code, reason=response.reason_phrase, body=body, cut=cut)


def http_timeout(seconds: float, connect_s: float) -> httpx.Timeout:
    """Return httpx's timeout for a request to a model server: ``seconds`` each step, and at
    most ``connect_s`` of them to connect."""
    return httpx.Timeout(seconds, connect=min(seconds, connect_s))
