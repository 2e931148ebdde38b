"""The proxy's ASGI app: OpenAI's routes, each request routed by its ``model``.

``POST /v1/chat/completions``, ``/v1/completions`` and ``/v1/embeddings`` go to the
deployment serving the body's ``model`` (its model or one of its aliases: an alias is
renamed to the model on the way up); ``GET /v1/models`` lists every model a deployment
serves, with its state (answered here, ``listing.py``, so listing wakes nothing). A request,
from its first byte to its last, counts in ``RequestActivity``: held or forwarded, it is
activity.

- **Awake** (the cached state says running and no take-down has moved the door since):
  passed through (``upstream.py``).
- **Asleep, or stopped by a schedule**: held while ``Waker`` brings the deployment up, one
  bring-up for all the requests held, then passed through. Past the hold's bounds
  (``bounds.py``), 503 at once; a client that goes away leaves the hold.
- **Going down** (the door is shut: a sleep or a stop, or a scheduled sleep's quiet check):
  held the same way; the bring-up waits for the deployment's lock, then looks again.
- **The console's model check** (it carries ``check_key``): passed through when awake, else
  409 with the state; never held, woken for or counted (``server/model_check.py``).
- **Refused** (opted out, stopped by a person, failed, or the bring-up was refused, such as
  a wake that does not fit): 503 at once with ``Retry-After``, the reason as the error's
  ``code``. An unknown model is 404, in OpenAI's shape.

Before anything is routed, what a web page could send is refused (any page can reach a
port on the loopback, and a ``text/plain`` POST needs no CORS preflight): a request whose
``Origin`` is not the proxy's own (403), and a body that is not ``application/json`` (415;
no ``Content-Type`` at all is taken as JSON only from a client that sends no ``Origin``,
which no browser omits on a POST). A body nested too deep for the JSON parser is a 400
(``checks.py``). Past a deployment's ``max_concurrent_requests`` a request waits for a slot,
then 429 (``concurrency.py``); a held stream may get progress chunks (``progress.py``).

Bodies are bounded before they are read, since the deployment (the body's ``model``) is
known only after: a ``Content-Length`` over the body limit is a 413 at once, and one past
the room ``proxy.max_held_bytes_total`` leaves (less the bodies held and those being read)
a 503 ``hold_full`` at once; a body being read keeps its room until it is read, and one
without a length is counted as it comes and refused once past. So bodies that are sent
slowly, or never finished, cannot take more memory than the hold may (the port's body
timeout, ``connections.py``, closes the stalled ones). Once the large bodies have left,
the memory is given back to the system (``memory.py``).
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
import statistics
import time
from collections.abc import Callable
from typing import Any

from dgxmm.errors import NotFound
from dgxmm.fleet import Deployment, DeploymentState, Fleet
from dgxmm.proxy.bounds import HoldBounds, read_bounds
from dgxmm.proxy.checks import (
    MAX_BODY_BYTES,
    check_key_of,
    content_length,
    model_of,
    rejection_of,
    renamed,
    too_large,
    without_check_key,
)
from dgxmm.proxy.concurrency import Slots
from dgxmm.proxy.listing import models_reply
from dgxmm.proxy.memory import GIVE_BACK_AFTER_BYTES, give_back_memory
from dgxmm.proxy.progress import Progress, wants_progress
from dgxmm.proxy.replies import (
    ProxyRefused,
    Refusal,
    Reply,
    error_reply,
    not_awake_reply,
    refusal_reply,
)
from dgxmm.proxy.routes import Route, RouteTable
from dgxmm.proxy.stats import ProxyStats
from dgxmm.proxy.upstream import Receive, Scope, Send, Upstream, wait_disconnected
from dgxmm.proxy.waking import Waker, refusal_for

__all__ = ["MAX_BODY_BYTES", "OPENAI_PATHS", "ProxyApp"]

_ESTIMATE_FROM = 5  # a held stream's "about N s": the median of this many last wakes
OPENAI_PATHS = frozenset({"/v1/chat/completions", "/v1/completions", "/v1/embeddings"})


class ProxyApp:
    """The ASGI app; ``aclose`` when done. See the module docstring."""

    def __init__(
        self,
        fleet: Fleet,
        *,
        stats: ProxyStats | None = None,
        upstream: Upstream | None = None,
        bounds: Callable[[], HoldBounds] | None = None,
        refresh_s: float = 1.0,
        monotonic: Callable[[], float] = time.monotonic,
        give_back_memory: Callable[[], None] = give_back_memory,
    ) -> None:
        self._fleet = fleet
        self._give_back_memory = give_back_memory
        self.stats = stats or ProxyStats(fleet.clock)
        self._upstream = upstream or Upstream()
        self._monotonic = monotonic
        self._table = RouteTable(
            fleet.deployments,
            fleet.activity,
            bounds=bounds or (lambda: read_bounds(fleet.store.get_setting)),
            refresh_s=refresh_s,
            monotonic=monotonic,
        )
        self._waker = Waker(fleet, self.stats)
        # The console's model check carries it (checks.CHECK_KEY_HEADER): made anew by each
        # app, known only to the server in this process.
        self.check_key = secrets.token_urlsafe(32)
        self.slots = Slots()  # the concurrency limits' slots and queues (event loop only)
        # Per deployment id, the requests held now and their bodies' bytes (event loop only).
        self._held: dict[int, int] = {}
        self._held_bytes: dict[int, int] = {}
        # The room taken by the bodies being read now, and the bytes of every body in the
        # process (being read, held or forwarded) with their peak since memory was given back.
        self._reading_bytes = 0
        self._body_bytes = 0
        self._body_peak = 0

    def reading_bytes(self) -> int:
        """Return the room the bodies being read now take (event loop's view)."""
        return self._reading_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path, method = scope["path"], scope["method"]
        if path == "/v1/models":
            if method != "GET":
                await _send(send, _method_not_allowed(method, path))
            else:
                await _send(send, models_reply(await self._table.served()))
        elif path in OPENAI_PATHS:
            if method != "POST":
                await _send(send, _method_not_allowed(method, path))
            else:
                await self._openai(scope, receive, send)
        else:
            await _send(send, error_reply(404, f"{method} {path}: no such route",
                                          kind="invalid_request_error"))  # fmt: skip

    async def aclose(self) -> None:
        """Close the upstream connections and the bring-up threads."""
        self._waker.close()
        await self._upstream.aclose()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- one request --------------------------------------------------------------------------

    async def _openai(self, scope: Scope, receive: Receive, send: Send) -> None:
        rejected = rejection_of(scope)
        if rejected is not None:
            await _send(send, rejected)
            return
        try:
            body = await self._read_body(scope, receive)
        except ProxyRefused as refused:
            self.stats.refused(refused.refusal)
            await _send(send, refusal_reply(refused.refusal, refused.message))
            return
        if body is None:
            await _send(send, too_large())
            return
        try:  # the body is counted from its reading on (_read_body) until the request ends
            await self._route(scope, body, receive, send)
        finally:
            self._count_body(-len(body))

    async def _route(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> None:
        model = model_of(body)
        if isinstance(model, Reply):
            await _send(send, model)
            return
        route = await self._table.route(model)
        if route is None:
            await _send(send, _unknown_model(model))
            return
        if model != route.deployment.model:
            # An alias: the server knows its model by the one name (vLLM answers 404 for any
            # other), so the body goes up renamed; a request by the model goes up untouched.
            body = renamed(body, route.deployment.model)
        key = check_key_of(scope)
        if key is not None:
            scope = without_check_key(scope)
            if hmac.compare_digest(key, self.check_key.encode()):
                await self._model_check(route, scope, body, receive, send)
                return
        deployment_id = route.deployment.id
        activity = self._fleet.activity
        entry = activity.enter(deployment_id)
        try:
            if (
                not entry.closed
                and route.deployment.state is DeploymentState.RUNNING
                and self._table.is_current(route, entry.generation)
            ):
                await self._forward(route, scope, body, receive, send)
            else:
                await self._hold(route, scope, body, receive, send, arrived_us=entry.at_us)
        except ProxyRefused as refused:
            self._refused(deployment_id, refused.refusal)
            await _send(send, refusal_reply(refused.refusal, refused.message))
        finally:
            activity.leave(deployment_id)

    async def _model_check(
        self, route: Route, scope: Scope, body: bytes, receive: Receive, send: Send
    ) -> None:
        """Forward the console's model check to an awake deployment; never hold or wake it.

        Not a client's request: not in the request activity (nor a knock that would put off a
        sleep), the savings' record or the forwarded count. The state is read afresh."""
        try:
            route = await self._table.fresh(route.deployment.id)
        except NotFound:
            await _send(send, _unknown_model(route.deployment.model))
            return
        deployment = route.deployment
        closed = self._fleet.activity.is_closed(deployment.id)
        if closed or deployment.state is not DeploymentState.RUNNING:
            await _send(send, not_awake_reply(deployment.name, deployment.state.value, closed))
            return
        try:
            await self._forward(route, scope, body, receive, send, counted=False)
        except ProxyRefused as refused:
            await _send(send, refusal_reply(refused.refusal, refused.message))

    def _refused(self, deployment_id: int, refusal: Refusal) -> None:
        self.stats.refused(refusal)
        if refusal is not Refusal.BUSY:  # a busy deployment is awake: no cold request
            self._fleet.activity.refused(deployment_id, refusal.value)  # the savings' record

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes | None:
        """Return the request's body (None: over ``MAX_BODY_BYTES``), in the room left.

        ``ProxyRefused`` (``hold_full``) before a byte is read for a ``Content-Length`` past
        the room left, or once a body without one is past it.
        """
        length = content_length(scope)
        if length is not None and length > MAX_BODY_BYTES:
            return None
        bounds = await self._table.current_bounds()
        taken = length or 0
        self._take_room(taken, bounds)
        self._reading_bytes += taken
        self._count_body(taken)
        parts: list[bytes] = []
        size = 0
        body: bytes | None = None
        try:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return b""
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    return None
                if size > taken:  # no length (or a short one): count the bytes as they come
                    self._take_room(size - taken, bounds)
                    self._reading_bytes += size - taken
                    self._count_body(size - taken)
                    taken = size
                parts.append(chunk)
                if not message.get("more_body", False):
                    body = b"".join(parts)
                    return body
        finally:
            self._reading_bytes -= taken
            # A body read stays counted (the caller uncounts it when the request ends): the
            # count must not touch zero between, or memory would be given back too soon.
            self._count_body((len(body) if body is not None else 0) - taken)

    def _take_room(self, size: int, bounds: HoldBounds) -> None:
        """Refuse (``hold_full``) a body that the bodies held and being read leave no room."""
        kept = sum(self._held_bytes.values()) + self._reading_bytes
        if kept + size > bounds.max_held_bytes_total:
            raise ProxyRefused(
                Refusal.HOLD_FULL,
                f"the proxy holds and reads {bounds.max_held_bytes_total} bytes of request "
                "bodies at most (the setting proxy.max_held_bytes_total)",
            )

    def _count_body(self, change: int) -> None:
        """Count bodies in the process; give memory back once large ones have all left."""
        self._body_bytes += change
        self._body_peak = max(self._body_peak, self._body_bytes)
        if self._body_bytes == 0 and self._body_peak >= GIVE_BACK_AFTER_BYTES:
            self._body_peak = 0
            # Soon, not now: the last body is freed once the frame that counts it returns.
            # Off the loop: a trim walks the allocator's arenas.
            loop = asyncio.get_running_loop()
            loop.call_soon(loop.run_in_executor, None, self._give_back_memory)

    async def _forward(
        self, route: Route, scope: Scope, body: bytes, receive: Receive, send: Send,
        *, waited_s: float = 0.0, counted: bool = True,
    ) -> None:  # fmt: skip
        """Pass the request on, within the deployment's concurrency limit (``Slots``);
        ``waited_s``: how long it was held while the deployment was brought up; ``counted``
        in the proxy's forwarded count (a model check is not)."""
        deployment = route.deployment
        limit = deployment.max_concurrent_requests
        if limit is not None:
            took = await self.slots.take(
                deployment.id, deployment.name, limit=limit,
                queue=deployment.max_queued_requests, max_wait_s=self._table.bounds.max_hold_s,
                gone=lambda: wait_disconnected(receive),
            )  # fmt: skip
            if not took:
                return  # the client went away while it waited
        try:
            if counted:
                self.stats.forwarded(deployment.name, waited_s)
            await self._upstream.forward(
                deployment.url, scope, body, receive, send, name=deployment.name
            )
        finally:
            if limit is not None:
                self.slots.give_back(deployment.id)

    async def _hold(
        self,
        cached: Route,
        scope: Scope,
        body: bytes,
        receive: Receive,
        send: Send,
        *,
        arrived_us: int,
    ) -> None:
        """Read the deployment again; forward, refuse, or hold it while it is brought up."""
        deployment_id = cached.deployment.id
        try:
            route = await self._table.fresh(deployment_id)
        except NotFound:
            await _send(send, _unknown_model(cached.deployment.model))
            return
        deployment = route.deployment
        up = deployment.state is DeploymentState.RUNNING
        if up and not self._fleet.activity.is_closed(deployment_id):
            await self._forward(route, scope, body, receive, send)
            return
        if deployment.state is DeploymentState.STOPPED:
            stopped_by = await asyncio.to_thread(self._fleet.events.stopped_by, deployment_id)
        else:
            stopped_by = None
        refused = refusal_for(deployment, stopped_by)
        if refused is not None:
            raise refused
        bounds = self._table.bounds
        name = deployment.name
        size = len(body)
        self._check_room(deployment_id, name, size, bounds)
        self._held[deployment_id] = self._held.get(deployment_id, 0) + 1
        self._held_bytes[deployment_id] = self._held_bytes.get(deployment_id, 0) + size
        self.stats.hold_began(name, size)
        began = self._monotonic()
        progress = None
        if deployment.loading_progress and wants_progress(scope["path"], body):
            progress = Progress(send, model=deployment.model, name=name)
        try:
            if progress is not None:
                await progress.begin(await self._wake_estimate_s(deployment))
            woke = await self._wait_for_bring_up(deployment_id, name, bounds, receive)
        except ProxyRefused as not_up:
            if progress is None:
                raise
            # The answer has begun: the refusal ends its stream instead of a 503.
            self._refused(deployment_id, not_up.refusal)
            await progress.fail(not_up.message, not_up.refusal.value)
            return
        finally:
            self._held[deployment_id] -= 1
            self._held_bytes[deployment_id] -= size
            self.stats.hold_ended(name, self._monotonic() - began, size)
            if progress is not None:
                await progress.close()
        if not woke:
            return  # the client went away while held
        # A cold request and its added wait, for the savings report (forwarded from here).
        wait_us = round((self._monotonic() - began) * 1e6)
        self._fleet.activity.held(deployment_id, arrived_us, wait_us)
        fresh = await self._table.fresh(deployment_id)
        waited_s = wait_us / 1e6
        if progress is None:
            await self._forward(fresh, scope, body, receive, send, waited_s=waited_s)
            return
        await progress.ready()
        try:
            await self._forward(fresh, scope, body, receive, progress.send, waited_s=waited_s)
        except ProxyRefused as failed:
            self._refused(deployment_id, failed.refusal)
            await progress.fail(failed.message, failed.refusal.value)

    async def _wake_estimate_s(self, deployment: Deployment) -> float | None:
        """Return the median of its last five times to ready from where it is, or None."""
        level = deployment.sleeps_at if deployment.state is DeploymentState.SLEEPING else 0
        times = await asyncio.to_thread(
            self._fleet.events.ready_times, deployment.id, level, _ESTIMATE_FROM
        )
        return statistics.median(times) / 1e6 if times else None

    def _check_room(self, deployment_id: int, name: str, size: int, bounds: HoldBounds) -> None:
        """Refuse (``hold_full``) a request the hold has no room for, in count or bytes."""
        if self._held.get(deployment_id, 0) >= bounds.max_held:
            raise ProxyRefused(
                Refusal.HOLD_FULL,
                f"deployment {name!r} is waking with {bounds.max_held} requests held already "
                "(the setting proxy.max_held)",
            )
        if self._held_bytes.get(deployment_id, 0) + size > bounds.max_held_bytes:
            raise ProxyRefused(
                Refusal.HOLD_FULL,
                f"deployment {name!r} is waking with {bounds.max_held_bytes} bytes of requests "
                "held at most (the setting proxy.max_held_bytes)",
            )
        if sum(self._held_bytes.values()) + size > bounds.max_held_bytes_total:
            raise ProxyRefused(
                Refusal.HOLD_FULL,
                f"the proxy holds {bounds.max_held_bytes_total} bytes of requests at most for "
                "every deployment together (the setting proxy.max_held_bytes_total)",
            )

    async def _wait_for_bring_up(
        self, deployment_id: int, name: str, bounds: HoldBounds, receive: Receive
    ) -> bool:
        """Wait for the bring-up; False when the client went away first."""
        bring_up: asyncio.Future[Any] = asyncio.wrap_future(self._waker.bring_up(deployment_id))
        gone: asyncio.Future[Any] = asyncio.ensure_future(wait_disconnected(receive))
        try:
            done, _ = await asyncio.wait(
                {bring_up, gone}, timeout=bounds.max_hold_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            gone.cancel()
        if bring_up not in done:
            # Never cancel it: the bring-up is shared, and goes on for the others.
            bring_up.add_done_callback(_swallow)
            if gone in done:
                return False
            raise ProxyRefused(
                Refusal.HOLD_TIMEOUT,
                f"deployment {name!r} was not up within {bounds.max_hold_s:g} s "
                "(the setting proxy.max_hold_s); its wake goes on",
            )
        refused = bring_up.exception()
        if isinstance(refused, ProxyRefused):
            # A refusal of its own for each request: the bring-up's one exception, raised in
            # every held request, would gather all their frames (and bodies) in its traceback.
            raise ProxyRefused(refused.refusal, refused.message) from None
        bring_up.result()  # anything else, as it came
        return True


def _unknown_model(model: str) -> Reply:
    return error_reply(
        404, f"The model `{model}` does not exist: no deployment of this dgxmm serves it.",
        kind="invalid_request_error", param="model", code="model_not_found",
    )  # fmt: skip


def _method_not_allowed(method: str, path: str) -> Reply:
    return error_reply(405, f"{method} {path}: method not allowed", kind="invalid_request_error")


async def _send(send: Send, reply: Reply) -> None:
    headers = [*reply.headers, (b"content-length", str(len(reply.body)).encode())]
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": reply.body})


def _swallow(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()  # retrieved: a refusal nobody waits for any more is not an error
