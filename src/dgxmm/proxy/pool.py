"""The proxy's connections to the model servers: kept alive, parsed by llhttp, its own pool.

httpx's pool cost the proxy a third of its time per request, in bookkeeping that grows with
the number of connections (encode/httpcore#1035), and h11 most of the rest. Here a request
goes out as one write of bytes and its answer is read by llhttp (``httptools``, the C parser
uvicorn uses on the way in), on an asyncio protocol of its own: no task, no stream object,
no copy of a header per request. A pool is a stack of idle connections per server (the
last one used is warm), taken and given back in O(1).

- **Reuse.** A connection goes back to the pool only when its answer was read whole and
  both sides said keep-alive. A server may close an idle connection at any moment (vLLM's
  uvicorn after 5 s): a request on a reused connection that closes before a byte of its
  answer came is sent once more on a new connection, as browsers and HAProxy do. A request
  on a new connection is never sent twice.
- **Back-pressure.** An answer is read no faster than the client takes it: past
  ``_HIGH_WATER`` bytes read and not yet passed on, reading pauses.
- **Giving up.** ``Exchange.close`` drops the connection: the server sees its client go, and
  stops generating for nobody.
- **A cut answer.** An answer's body ends where its framing says (its ``Content-Length``,
  chunked's last chunk) or, with neither, where the server closes (RFC 9112 6.3). A body
  that ends any other way (the server died, or sent bytes no parser reads) is not whole:
  ``Exchange.is_whole`` says so, and the proxy does not pass it on as whole.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from dataclasses import dataclass
from typing import cast
from urllib.parse import SplitResult, urlsplit

import httptools

__all__ = ["Answer", "Exchange", "ServerAddress", "UpstreamPool", "UpstreamUnreachable"]

_HIGH_WATER = 256 * 1024
_CONNECT_TIMEOUT_S = 10.0
_IDLE_PER_SERVER = 256  # idle connections kept per server; past it, one is closed


class UpstreamUnreachable(Exception):
    """The server could not be asked: no connection, or it closed before answering."""


@dataclass(frozen=True, slots=True)
class ServerAddress:
    """Where a model server answers: its connection's key, and what a request's line needs."""

    scheme: str
    host: str
    port: int
    host_header: bytes  # the URL's host[:port], as a Host header gives it
    path_prefix: bytes  # the base URL's own path, before each request's
    userinfo: tuple[str, str] | None  # a user:password in the URL, sent as Basic auth

    @classmethod
    def of(cls, base_url: str) -> ServerAddress:
        """Return the address of ``base_url`` (http or https); ValueError for another."""
        parts: SplitResult = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL with a host: {base_url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        host = parts.hostname
        shown = f"[{host}]" if ":" in host else host
        if parts.port is not None:
            shown += f":{parts.port}"
        userinfo = None
        if parts.username is not None or parts.password is not None:
            userinfo = (parts.username or "", parts.password or "")
        return cls(
            scheme=parts.scheme,
            host=host,
            port=port,
            host_header=shown.encode("idna"),
            path_prefix=parts.path.rstrip("/").encode(),
            userinfo=userinfo,
        )


@dataclass(frozen=True, slots=True)
class Answer:
    """The head of a server's answer: its status and its headers, as they came."""

    status: int
    headers: list[tuple[bytes, bytes]]


class _Connection(asyncio.Protocol):
    """One kept-alive connection to a server; one exchange on it at a time."""

    def __init__(self, pool: UpstreamPool, address: ServerAddress) -> None:
        self._pool = pool
        self.address = address
        self.transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[None] | None = None
        # Taken from the pool for this exchange: a close before any answer may be the server's
        # closing it idle, not this request's doing.
        self.reused = False
        self.lost = False
        self._reset()

    def _reset(self) -> None:
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.head_done = False
        self.done = False
        self.keep_alive = False
        self.until_close = False  # no length and not chunked: the body ends where the server closes
        self.received = False  # a byte of this exchange's answer came
        self.chunks: deque[bytes] = deque()
        self.buffered = 0
        self.broken = False  # bytes no HTTP parser reads

    # -- asyncio's and llhttp's callbacks -------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport's subclasses, but have its methods.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.received = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError:
            self.broken = True
            self._drop()
        self._wake()

    def eof_received(self) -> bool:
        return False  # close: a server that shuts its side ends the exchange

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._pool._forget(self)
        self._wake()

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.status = self._parser.get_status_code()
        if self.status >= 200 or self.status == 101:
            self.head_done = True
            self.until_close = not any(
                name.lower() == b"content-length"
                or (name.lower() == b"transfer-encoding" and b"chunked" in value.lower())
                for name, value in self.headers
            )

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)
        self.buffered += len(body)
        if self.buffered > _HIGH_WATER and self.transport is not None:
            self.transport.pause_reading()

    def on_message_complete(self) -> None:
        if not self.head_done:  # an interim answer (100 Continue): the real one follows
            self.headers = []
            return
        self.done = True
        # Read here: llhttp forgets it once the message is over.
        self.keep_alive = self._parser.should_keep_alive()

    # -- the exchange's side -------------------------------------------------------------------

    def send(self, data: bytes) -> None:
        self._reset()
        assert self.transport is not None
        self.transport.write(data)

    async def wait(self) -> None:
        """Return once something happened: bytes came, or the connection ended."""
        loop = asyncio.get_running_loop()
        self._waiter = loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def take(self) -> bytes:
        """Return the body bytes read since the last take (and read on if paused)."""
        data = b"".join(self.chunks) if len(self.chunks) != 1 else self.chunks[0]
        self.chunks.clear()
        if self.buffered > _HIGH_WATER and self.transport is not None and not self.lost:
            self.transport.resume_reading()
        self.buffered = 0
        return data

    def reusable(self) -> bool:
        return self.done and self.keep_alive and not self.lost and not self.broken

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _drop(self) -> None:
        if self.transport is not None:
            self.transport.abort()


class Exchange:
    """One request on a connection of the pool: ``answer``, then ``body`` chunks, then ``close``.

    Always ``close`` it (a ``finally``): an exchange read whole gives its connection back to
    the pool; any other is dropped, and the server sees its client go.
    """

    def __init__(self, pool: UpstreamPool, connection: _Connection, request: bytes) -> None:
        self._pool = pool
        self._connection = connection
        self._request = request

    async def answer(self) -> Answer:
        """Return the answer's head; ``UpstreamUnreachable`` when none comes.

        A reused connection that closes before a byte of the answer (the server closed it
        idle, as it may) is replaced by a new one, once, and the request sent again.
        """
        connection = self._connection
        while not connection.head_done:
            if connection.lost or connection.broken:
                if connection.received or not connection.reused:
                    raise UpstreamUnreachable("the server closed the connection before answering")
                connection = await self._pool._connect(connection.address)
                self._connection = connection
                connection.send(self._request)
                continue
            await connection.wait()
        return Answer(connection.status, connection.headers)

    async def next_chunk(self) -> bytes | None:
        """Return the next bytes of the answer's body (decoded from chunked framing), or None
        at its end; a server that breaks off mid-body ends it too."""
        connection = self._connection
        while True:
            if connection.chunks:
                return connection.take()
            if connection.done or connection.lost or connection.broken:
                return None
            await connection.wait()

    def is_whole(self) -> bool:
        """Whether the body read to its end was the whole body (once ``next_chunk`` gave None)."""
        connection = self._connection
        if connection.broken:
            return False
        return connection.done or (connection.until_close and connection.lost)

    def close(self) -> None:
        """Give the connection back when its answer was read whole; drop it otherwise."""
        connection = self._connection
        if connection.reusable() and not connection.chunks:
            self._pool._give_back(connection)
        else:
            connection._drop()


class UpstreamPool:
    """Kept-alive connections to the model servers, per address; ``aclose`` when done."""

    def __init__(self) -> None:
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._open: set[_Connection] = set()
        self._tls: ssl.SSLContext | None = None

    async def exchange(self, address: ServerAddress, request: bytes) -> Exchange:
        """Send ``request`` (whole, as bytes) to ``address``; return its exchange.

        ``UpstreamUnreachable`` when no connection could be made.
        """
        connection = self._idle_connection(address)
        if connection is None:
            connection = await self._connect(address)
        else:
            connection.reused = True
        connection.send(request)
        return Exchange(self, connection, request)

    def _idle_connection(self, address: ServerAddress) -> _Connection | None:
        idle = self._idle.get((address.scheme, address.host, address.port))
        while idle:
            connection = idle.pop()
            transport = connection.transport
            if not connection.lost and transport is not None and not transport.is_closing():
                return connection
        return None

    async def _connect(self, address: ServerAddress) -> _Connection:
        loop = asyncio.get_running_loop()
        tls = None
        if address.scheme == "https":
            if self._tls is None:
                self._tls = ssl.create_default_context()
            tls = self._tls
        try:
            _, connection = await asyncio.wait_for(
                loop.create_connection(
                    lambda: _Connection(self, address), address.host, address.port, ssl=tls,
                    server_hostname=address.host if tls else None,
                ),
                _CONNECT_TIMEOUT_S,
            )  # fmt: skip
        except (OSError, TimeoutError, ssl.SSLError) as error:
            raise UpstreamUnreachable(f"{type(error).__name__}: {error}") from None
        self._open.add(connection)
        return connection

    def _give_back(self, connection: _Connection) -> None:
        address = connection.address
        idle = self._idle.setdefault((address.scheme, address.host, address.port), [])
        if len(idle) >= _IDLE_PER_SERVER:
            connection._drop()
            return
        idle.append(connection)

    def _forget(self, connection: _Connection) -> None:
        self._open.discard(connection)
        address = connection.address
        idle = self._idle.get((address.scheme, address.host, address.port))
        if idle and connection in idle:
            idle.remove(connection)

    async def aclose(self) -> None:
        """Close every connection."""
        for connection in list(self._open):
            connection._drop()
        self._idle.clear()
        await asyncio.sleep(0)  # let the transports close
