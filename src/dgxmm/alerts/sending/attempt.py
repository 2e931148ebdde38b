"""One attempt: a signed body POSTed to a webhook, with one deadline for all of it.

The host's addresses are resolved and checked first (``destinations.py``), and the request
goes to the address that was checked, with the URL's host as ``Host`` and as the name TLS
verifies: a second resolution could answer another address.

httpx's timeouts bound each read, so a receiver that trickles its answer's head a byte at a
time never trips them; here ``asyncio.timeout`` bounds the whole attempt instead (resolving
the name, connecting, sending, reading the answer's head), and cancelling the task stops it
at once (a channel removed meanwhile). The head is bounded by h11 (16 KiB); the body is not
read: a receiver's words are not needed.

The transport is httpx's, not a Client: a Client logs every request's whole URL (a Slack or
Teams URL is a credential) and follows redirects when asked; a transport does neither. No
proxy from the environment, no cookies kept between receivers.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import httpx

from dgxmm.alerts.destinations import Destinations, Refused

__all__ = ["Answer", "post"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """How an attempt ended: the receiver's status code, or why there was none."""

    status_code: int | None
    error: str | None

    @property
    def sent(self) -> bool:
        """Tell whether the receiver took it (2xx)."""
        return self.status_code is not None and 200 <= self.status_code < 300


async def post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    *,
    deadline_s: float,
    destinations: Destinations,
) -> Answer:
    """POST ``body`` to ``url`` and read the answer's head, all within ``deadline_s``."""
    try:
        async with asyncio.timeout(deadline_s):
            code = await _status(httpx.URL(url), body, headers, deadline_s, destinations)
    except Refused as refused:
        # Nothing of the address: the log must not tell what the server's networks hold.
        return Answer(status_code=None, error=str(refused))
    except TimeoutError:
        return Answer(status_code=None, error=f"no answer within {deadline_s:g} s")
    except (httpx.HTTPError, httpx.InvalidURL, OSError) as error:
        # Its kind only: an error's text may quote the URL, a credential.
        return Answer(status_code=None, error=f"{type(error).__name__}: cannot reach it")
    if 300 <= code < 400:
        return Answer(status_code=code, error="a redirect, not followed")
    if 200 <= code < 300:
        return Answer(status_code=code, error=None)
    return Answer(status_code=code, error=f"answered {code}")


async def _status(
    url: httpx.URL,
    body: bytes,
    headers: dict[str, str],
    deadline_s: float,
    destinations: Destinations,
) -> int:
    port = url.port or (443 if url.scheme == "https" else 80)
    address = await destinations.pick(url.host, port)
    # httpx's own timeouts stay as a floor under the deadline (each read at most all of it).
    extensions: dict[str, object] = {"timeout": httpx.Timeout(deadline_s).as_dict()}
    if url.scheme == "https":
        extensions["sni_hostname"] = url.host  # the certificate is checked against the name
    request = httpx.Request(
        "POST",
        url.copy_with(host=address),
        content=body,
        headers={**headers, "Host": url.netloc.decode("ascii")},
        extensions=extensions,
    )
    async with httpx.AsyncHTTPTransport(retries=0) as transport:
        response = await transport.handle_async_request(request)
        await response.aclose()
    return response.status_code
