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

The request goes up with the client's headers and no others of httpx's: a request built by
the client would gain its defaults (``Accept-Encoding: gzip, deflate``, ``Accept``,
``User-Agent``, ``Connection``), and a model server would then compress what a client that
asked for no encoding reads raw. The proxy adds what reverse proxies add (RFC 7239's
predecessors, as nginx and HAProxy write them): ``X-Forwarded-For``, the client's address
appended to the list a client (another proxy in front) sent, and ``X-Forwarded-Proto``, the
scheme the proxy was reached by, unless a proxy in front said it already (a TLS terminator's
``https``). Neither is believed here: the proxy's own port reads the peer as the socket gives
it (``serving.py``), so a client can add names to the chain but never take its own out.

The client keeps no cookies of its own. httpx's client has a cookie jar: a ``Set-Cookie``
from one model server would be stored and sent with every later request to that host, from
any client and to any deployment on it, so one person's session would go out as another's.
Its jar refuses every cookie (``_NoCookies``); the client's own ``Cookie`` header still goes
up and the server's ``Set-Cookie`` still comes down to the client that got it.
"""

from __future__ import annotations

import asyncio
import logging
import urllib.request
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookiejar import Cookie, CookieJar, CookiePolicy
from typing import Any

import httpx

from dgxmm.proxy.replies import ProxyRefused, Refusal

__all__ = ["LOGIN_COOKIE", "Upstream", "wait_disconnected"]

log = logging.getLogger(__name__)

# The server's login cookie (dgxmm.server.deps.COOKIE: the server is a layer above, so the
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
# The request's own length and host are the new connection's, set by httpx.
_REQUEST_DROPPED = _HOP_BY_HOP | {b"host", b"content-length"}


class Upstream:
    """An HTTP client to the model servers, kept alive between requests."""

    def __init__(self, client: httpx.AsyncClient | None = None) -> None:
        self._client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(connect=10.0, read=None, write=60.0, pool=None),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=256),
            trust_env=False,
            # The jar itself, not httpx.Cookies(jar): httpx copies a Cookies' cookies into a
            # jar of its own, with the default policy, and the refusal would be lost.
            cookies=CookieJar(policy=_NoCookies()),
        )

    async def forward(
        self, base_url: str, scope: Scope, body: bytes, receive: Receive, send: Send, *, name: str
    ) -> None:
        """Send the request to deployment ``name`` at ``base_url``; stream its answer back.

        ``ProxyRefused`` (unreachable) when the server could not be asked; once the answer
        began nothing is raised: a server that breaks off mid-answer ends the client's too.
        """
        url = base_url + scope["path"]
        if scope.get("query_string"):
            url += "?" + scope["query_string"].decode("latin-1")
        headers = _forwarded(
            scope,
            _without_login_cookie(
                _without(scope["headers"], _REQUEST_DROPPED | _hop_by_hop_of(scope["headers"]))
            ),
        )
        # Built alone, not by the client: the client's would add its default headers.
        request = httpx.Request(scope["method"], url, headers=headers, content=body)
        try:
            response = await self._client.send(request, stream=True)
        except httpx.TransportError as error:
            # httpx's text names no URL; the log is the operator's, the answer anyone's.
            log.warning("proxy: the model server of deployment %r did not answer: %s: %s",
                        name, type(error).__name__, error)  # fmt: skip
            raise ProxyRefused(
                Refusal.UNREACHABLE, f"the model server of deployment {name!r} did not answer"
            ) from None
        gone = asyncio.ensure_future(wait_disconnected(receive))
        pump = asyncio.ensure_future(_pump(response, send))
        try:
            await asyncio.wait({gone, pump}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (gone, pump):
                task.cancel()
            await asyncio.gather(gone, pump, return_exceptions=True)
            await response.aclose()

    async def aclose(self) -> None:
        """Close the connections."""
        await self._client.aclose()


class _NoCookies(CookiePolicy):
    """A cookie policy that stores no cookie and sends none: the proxy is no browser."""

    netscape = True
    rfc2965 = False
    hide_cookie2 = True

    def set_ok(self, cookie: Cookie, request: urllib.request.Request) -> bool:
        return False

    def return_ok(self, cookie: Cookie, request: urllib.request.Request) -> bool:
        return False

    def domain_return_ok(self, domain: str, request: urllib.request.Request) -> bool:
        return False

    def path_return_ok(self, path: str, request: urllib.request.Request) -> bool:
        return False


async def _pump(response: httpx.Response, send: Send) -> None:
    headers = [
        (key, value)
        for key, value in _without(response.headers.raw, _hop_by_hop_of(response.headers.raw))
        if not (key.lower() == b"set-cookie" and _cookie_name(value) == _LOGIN_COOKIE)
    ]
    await send({"type": "http.response.start", "status": response.status_code,
                "headers": headers})  # fmt: skip
    try:
        async for chunk in response.aiter_raw():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    except httpx.TransportError:
        pass  # the server broke off: end what the client got
    await send({"type": "http.response.body", "body": b"", "more_body": False})


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
