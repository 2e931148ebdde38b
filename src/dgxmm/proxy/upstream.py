"""Passing a request on to a model server and its answer back, chunk by chunk.

The status and headers come back as the server sent them, less the hop-by-hop headers
(RFC 9110 7.6.1: ``Connection`` and those it names, ``Keep-Alive``, ``Transfer-Encoding``,
``TE``, ``Trailer``, ``Upgrade``, ``Proxy-*``), which belong to one connection. The body is
passed raw, as it arrives (a server-sent event stream is never gathered up), still in its
content encoding, so ``Content-Length`` stays true. A client that goes away ends the
upstream request, so the server stops generating for nobody.

dgxmm's login cookie (``LOGIN_COOKIE``) never crosses: cookies are per host, not per port,
so a browser sends an admin's cookie to the proxy's port as well, and it is taken out of the
request's ``Cookie`` headers (the other cookies pass); a ``Set-Cookie`` of it from the model
server is dropped, so a server cannot log a browser in as someone. A server that cannot be
reached is refused naming the deployment, never its URL (a ``user:password@`` in it).

The request goes up with the client's headers and no others (an HTTP client library would
add its defaults, ``Accept-Encoding: gzip, deflate`` among them, and a model server would
then compress what a client that asked for no encoding reads raw), less ``Expect``: the body
is read whole already, and goes up with its head. The proxy adds what reverse proxies add
(RFC 7239's predecessors, as nginx and HAProxy write them): ``X-Forwarded-For``, the
client's address appended to the list a client (another proxy in front) sent, and
``X-Forwarded-Proto``, the scheme the proxy was reached by, unless a proxy in front said it
already (a TLS terminator's ``https``). Neither is believed here: the proxy's own port reads
the peer as the socket gives it (``serving.py``), so a client can add names to the chain but
never take its own out.

The proxy keeps no cookies of its own (its connections, ``pool.py``, have no jar): a
``Set-Cookie`` kept from one model server would go out with every later request to that
host, from any client and to any deployment on it, so one person's session would go out as
another's. The client's own ``Cookie`` header goes up and the server's ``Set-Cookie`` comes
down to the client that got it.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from dgxmm.proxy.pool import ServerAddress, UpstreamPool, UpstreamUnreachable
from dgxmm.proxy.replies import ProxyRefused, Refusal, error_events

__all__ = ["LOGIN_COOKIE", "Upstream", "wait_disconnected"]

log = logging.getLogger(__name__)

# The server's login cookie (dgxmm.server.edge.deps.COOKIE: the server is a layer above, so the
# name is kept here too, and a test holds the two equal).
LOGIN_COOKIE = "dgxmm_token"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_HOP_BY_HOP = frozenset(
    {b"connection", b"keep-alive", b"proxy-authenticate", b"proxy-authorization",
     b"proxy-connection", b"te", b"trailer", b"trailers", b"transfer-encoding", b"upgrade"}
)  # fmt: skip
# The request's own length and host are the new connection's; its body is read whole.
_REQUEST_DROPPED = _HOP_BY_HOP | {b"host", b"content-length", b"expect"}


class Upstream:
    """The way to the model servers: a pool of kept-alive connections (``pool.py``)."""

    def __init__(self, pool: UpstreamPool | None = None) -> None:
        self._pool = pool or UpstreamPool()
        self._addresses: dict[str, ServerAddress] = {}

    async def forward(
        self, base_url: str, scope: Scope, body: bytes, receive: Receive, send: Send, *, name: str
    ) -> None:
        """Send the request to deployment ``name`` at ``base_url``; stream its answer back.

        ``ProxyRefused`` (unreachable) when the server could not be asked; once the answer
        began nothing is raised: a server that breaks off mid-answer ends the client's with
        an error event or a cut (``_broken_off``), never a clean end.
        A client that goes away (at any point: before the request went up too) ends it, and
        its connection to the server is dropped.
        """
        address = self._address(base_url, name)
        request = _request_bytes(address, scope, body)
        # The exchange runs in the request's own task (no task more per request); a client
        # that goes away cancels it, wherever it waits, and the connection is dropped.
        this = asyncio.current_task()
        assert this is not None
        gone = asyncio.ensure_future(wait_disconnected(receive))
        ended = left = False

        def leave(_: object) -> None:
            nonlocal left
            if not ended and not gone.cancelled():
                left = True
                this.cancel()

        gone.add_done_callback(leave)
        try:
            await self._exchange(address, request, send, name)
        except asyncio.CancelledError:
            if not left:
                raise
            this.uncancel()  # ours: the client left, and that ends the request quietly
        finally:
            ended = True
            gone.cancel()

    async def aclose(self) -> None:
        """Close the connections."""
        await self._pool.aclose()

    def _address(self, base_url: str, name: str) -> ServerAddress:
        address = self._addresses.get(base_url)
        if address is None:
            try:
                address = ServerAddress.of(base_url)
            except ValueError:
                raise _unreachable(name, "its URL is not an http(s) URL") from None
            if len(self._addresses) > 4096:  # deployments come and go: keep it bounded
                self._addresses.clear()
            self._addresses[base_url] = address
        return address

    async def _exchange(
        self, address: ServerAddress, request: bytes, send: Send, name: str
    ) -> None:
        try:
            exchange = await self._pool.exchange(address, request)
        except UpstreamUnreachable as error:
            raise _unreachable(name, str(error)) from None
        try:
            try:
                answer = await exchange.answer()
            except UpstreamUnreachable as error:
                raise _unreachable(name, str(error)) from None
            headers = [
                (key, value)
                for key, value in _without(answer.headers, _hop_by_hop_of(answer.headers))
                if not (key.lower() == b"set-cookie" and _cookie_name(value) == _LOGIN_COOKIE)
            ]
            await send({"type": "http.response.start", "status": answer.status,
                        "headers": headers})  # fmt: skip
            tail = b""  # the last bytes passed on: does the stream stand between two events?
            while (chunk := await exchange.next_chunk()) is not None:
                tail = (tail + chunk)[-4:]
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            if exchange.is_whole():
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            await _broken_off(headers, tail, send, name)
        finally:
            exchange.close()


async def _broken_off(headers: list[tuple[bytes, bytes]], tail: bytes, send: Send,
                      name: str) -> None:  # fmt: skip
    """End the answer of a server that broke off mid-body, so the client cannot take it as whole.

    An event stream cut between two events ends with an error event (the way the loading
    progress ends a stream that failed, ``replies.error_events``); any other is left without
    its end: the ASGI app returns with the answer unfinished, and uvicorn closes the
    connection with no chunked terminator (or short of its ``Content-Length``), which every
    HTTP client reads as a cut body. So does a stream cut inside an event, whose half a client
    would read glued to the error event.
    """
    log.warning("proxy: the model server of deployment %r broke off its answer", name)
    kinds = [value.lower() for key, value in headers if key.lower() == b"content-type"]
    sized = any(key.lower() == b"content-length" for key, _ in headers)
    between = not tail or tail.endswith((b"\n\n", b"\r\r", b"\r\n\r\n"))
    if kinds and kinds[0].startswith(b"text/event-stream") and not sized and between:
        message = f"the model server of deployment {name!r} broke off its answer"
        ending = error_events(message, kind="server_error", code="server_broke_off")
        await send({"type": "http.response.body", "body": ending, "more_body": False})


def _unreachable(name: str, why: str) -> ProxyRefused:
    # The pool's text names no URL, but the log is the operator's and the answer anyone's.
    log.warning("proxy: the model server of deployment %r did not answer: %s", name, why)
    return ProxyRefused(
        Refusal.UNREACHABLE, f"the model server of deployment {name!r} did not answer"
    )


def _request_bytes(address: ServerAddress, scope: Scope, body: bytes) -> bytes:
    """Return the request as it goes up: its line, its headers (less the dropped), its body."""
    headers = _forwarded(
        scope,
        _without_login_cookie(
            _without(scope["headers"], _REQUEST_DROPPED | _hop_by_hop_of(scope["headers"]))
        ),
    )
    if address.userinfo is not None:  # a URL's user:password is Basic auth, as clients send it
        user, password = address.userinfo
        token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        headers = [(k, v) for k, v in headers if k.lower() != b"authorization"]
        headers.append((b"authorization", b"Basic " + token.encode("ascii")))
    target = address.path_prefix + (scope.get("raw_path") or scope["path"].encode())
    if scope.get("query_string"):
        target += b"?" + scope["query_string"]
    parts = [scope["method"].encode("ascii"), b" ", target, b" HTTP/1.1\r\nhost: ",
             address.host_header, b"\r\n"]  # fmt: skip
    for key, value in headers:
        parts += (key, b": ", value, b"\r\n")
    parts += (b"content-length: ", str(len(body)).encode("ascii"), b"\r\n\r\n", body)
    return b"".join(parts)


async def wait_disconnected(receive: Receive) -> None:
    """Return once the client has gone (its body was read already)."""
    while (await receive())["type"] != "http.disconnect":
        pass


def _hop_by_hop_of(headers: list[tuple[bytes, bytes]]) -> frozenset[bytes]:
    named = {
        token.strip().lower()
        for key, value in headers
        if key.lower() == b"connection"
        for token in value.split(b",")
    }
    return _HOP_BY_HOP | named


def _without(
    headers: list[tuple[bytes, bytes]], dropped: frozenset[bytes]
) -> list[tuple[bytes, bytes]]:
    return [(key, value) for key, value in headers if key.lower() not in dropped]


_LOGIN_COOKIE = LOGIN_COOKIE.encode()


def _cookie_name(pair: bytes) -> bytes:
    """Return the name of ``name=value`` (as a browser reads it: spaces around it dropped)."""
    return pair.split(b";", 1)[0].split(b"=", 1)[0].strip()


def _forwarded(scope: Scope, headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Add ``X-Forwarded-For`` (appended to the client's) and ``X-Forwarded-Proto``."""
    chain = [value for key, value in headers if key.lower() == b"x-forwarded-for"]
    kept = [(key, value) for key, value in headers if key.lower() != b"x-forwarded-for"]
    client = scope.get("client")
    if client:  # none on a Unix socket: the chain goes on as it came
        chain.append(str(client[0]).encode())
    if chain:
        kept.append((b"x-forwarded-for", b", ".join(chain)))
    if not any(key.lower() == b"x-forwarded-proto" for key, _ in headers):
        kept.append((b"x-forwarded-proto", str(scope.get("scheme", "http")).encode()))
    return kept


def _without_login_cookie(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Take the login cookie out of every ``Cookie`` header; drop a header left empty."""
    kept: list[tuple[bytes, bytes]] = []
    for key, value in headers:
        if key.lower() == b"cookie":
            pairs = [p.strip() for p in value.split(b";")]
            others = [p for p in pairs if p and _cookie_name(p) != _LOGIN_COOKIE]
            if len(others) < len([p for p in pairs if p]):
                if others:
                    kept.append((key, b"; ".join(others)))
                continue
        kept.append((key, value))
    return kept
