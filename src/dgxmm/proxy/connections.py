"""Limits on the connections of dgxmm's HTTP ports: header and body timeouts, a connection cap.

Both ports parse HTTP with uvicorn's httptools protocol (llhttp, Node's C parser): the proxy
passes every request of a model server through it, and a pure-Python parser cost it more
than the rest of a request together (docs/proxy.md, "Speed"). uvicorn waits for a request's
head for ever and accepts every connection, so connections that send half their headers, or
nothing, would pile up until the process runs out of file descriptors, and then the store
and the jobs fail too. ``limited_protocol`` gives uvicorn a protocol that

- closes a connection whose request head (request line and headers) is not complete within
  ``header_timeout_s``: from the connection's opening for its first request, from the first
  byte of each next one (an idle kept-alive connection is uvicorn's keep-alive timeout's).
  A request whose head is complete is not cut by it;
- closes a connection whose request body stops coming: no byte of it for
  ``body_timeout_s`` (timed from the head, then from each byte). A body sent slowly but
  steadily is read however long it takes; one whose reading the app has paused (uvicorn's
  flow control) or not yet asked for (``Expect: 100-continue``) is waiting on the app, not
  the client, and is not cut. A request whose body is complete is never cut: a held
  request waits as long as the hold;
- answers a connection past ``max_connections`` open at once ``503`` and closes it, reading
  nothing it sends: its side is shut at once, the socket a moment later (``_LINGER_S``), so
  the client reads the 503 instead of a reset of a request it had begun to send.

Both ports use it (``API_LIMITS``, ``PROXY_LIMITS``); see docs/server.md.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from enum import Enum
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["API_LIMITS", "PROXY_LIMITS", "ConnectionLimits", "limited_protocol"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionLimits:
    """How long a request's head may take, and its body's silences; how many connections."""

    header_timeout_s: float = 10.0
    # As long as the head's: a client that sent its head and is sending its body has no
    # reason to fall silent for longer.
    body_timeout_s: float = 10.0
    max_connections: int = 256


# The API: a few people's browsers, the CLI, a Prometheus scraper.
API_LIMITS = ConnectionLimits(header_timeout_s=10.0, body_timeout_s=10.0, max_connections=256)
# The proxy: each connection may hold a request (and one to its model server) for minutes.
PROXY_LIMITS = ConnectionLimits(header_timeout_s=10.0, body_timeout_s=10.0, max_connections=512)

_LINGER_S = 1.0
_TOO_MANY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s"
)


class _Reading(Enum):
    """Where the request being read on a connection is."""

    NOTHING = "nothing"  # between requests (or before the first): no byte of one yet
    HEAD = "head"  # its request line and headers are coming
    BODY = "body"  # its head is in, its body is coming
    DONE = "done"  # read whole: the app answers it


def limited_protocol(limits: ConnectionLimits) -> type[asyncio.Protocol]:
    """Return uvicorn's httptools protocol held to ``limits``."""

    class LimitedProtocol(HttpToolsProtocol):
        """uvicorn's httptools protocol with header and body timeouts and a connection cap."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._head_timer: asyncio.TimerHandle | None = None
            self._body_timer: asyncio.TimerHandle | None = None
            self._turned_away = False
            self._reading = _Reading.NOTHING

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > limits.max_connections:
                text = f"too many connections (over {limits.max_connections}); try again soon"
                body = text.encode()
                self._turned_away = True
                transport.write(_TOO_MANY % (len(body), body))
                transport.write_eof()
                self.loop.call_later(_LINGER_S, transport.close)
                return
            self._arm_head_timer()

        def data_received(self, data: bytes) -> None:
            if self._turned_away:
                return  # read and dropped: it is answered already
            super().data_received(data)
            if self._reading is _Reading.HEAD and self._head_timer is None:
                self._arm_head_timer()  # the first bytes of a next request on this connection
            if self._reading is _Reading.BODY:
                self._arm_body_timer()  # a byte of the body came: its silence starts again
            else:
                self._disarm_body_timer()  # the body is in: the request may take its time

        # llhttp's callbacks, in the order a request's bytes call them.
        def on_message_begin(self) -> None:
            self._reading = _Reading.HEAD
            super().on_message_begin()

        def on_headers_complete(self) -> None:
            self._reading = _Reading.BODY
            self._disarm_head_timer()  # the head is in: the body's timer from here
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._reading = _Reading.DONE
            super().on_message_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_head_timer()
            self._disarm_body_timer()
            super().connection_lost(exc)

        def _arm_head_timer(self) -> None:
            self._disarm_head_timer()
            self._head_timer = self.loop.call_later(limits.header_timeout_s, self._head_late)

        def _disarm_head_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_late(self) -> None:
            self._head_timer = None
            waiting = self._reading in (_Reading.NOTHING, _Reading.HEAD)
            if waiting and not self.transport.is_closing():
                self.transport.close()

        def _arm_body_timer(self) -> None:
            self._disarm_body_timer()
            self._body_timer = self.loop.call_later(limits.body_timeout_s, self._body_late)

        def _disarm_body_timer(self) -> None:
            if self._body_timer is not None:
                self._body_timer.cancel()
                self._body_timer = None

        def _body_late(self) -> None:
            self._body_timer = None
            if self._reading is not _Reading.BODY or self.transport.is_closing():
                return
            cycle = self.cycle
            if self.flow.read_paused or (cycle is not None and cycle.waiting_for_100_continue):
                self._arm_body_timer()  # the app has not read on: the wait is not the client's
                return
            self.transport.close()

    return LimitedProtocol
