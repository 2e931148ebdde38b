"""Serving the proxy on its own port, on a thread with its own event loop, beside dgxmm's app.

The proxy's port is its own so that clients get OpenAI's surface at the root (``/v1/...``),
with no dgxmm token in the way; it listens on the loopback unless told otherwise. Its
connections are held to ``PROXY_LIMITS`` (``connections.py``): a header timeout and a cap.
uvicorn's own reading of ``X-Forwarded-For`` is off: the proxy passes those headers on.

Its loop is uvloop's (libuv): the proxy's work per request is mostly the loop's (reads,
writes, callbacks), and uvloop does it in C (docs/proxy.md, "Speed"). The thread's loop is
the proxy's alone, so the API's and the jobs' code never runs on it.
"""

from __future__ import annotations

import asyncio
import threading
import time

import uvicorn
import uvloop

from dgxmm.errors import DgxmmError
from dgxmm.proxy.app import ProxyApp
from dgxmm.proxy.connections import PROXY_LIMITS, ConnectionLimits, limited_protocol

__all__ = ["ProxyServer"]


class ProxyServer:
    """uvicorn serving a ``ProxyApp`` on a thread; ``start`` returns once it listens."""

    def __init__(
        self,
        app: ProxyApp,
        *,
        host: str = "127.0.0.1",
        port: int = 8100,
        limits: ConnectionLimits = PROXY_LIMITS,
    ) -> None:
        self.app = app
        self.host = host
        self.port = port
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            lifespan="off",
            http=limited_protocol(limits),
            timeout_graceful_shutdown=3,
            # A held request may wait minutes for a wake; keep-alive between them is cheap.
            timeout_keep_alive=30,
            # The model server's own Server and Date headers pass through; uvicorn adds none.
            server_header=False,
            date_header=False,
            # The proxy writes X-Forwarded-For and -Proto itself (upstream.py): the client's
            # address is the socket's, never one a loopback client claims in those headers.
            proxy_headers=False,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name="proxy", daemon=True)
        self._error: BaseException | None = None

    def start(self, timeout_s: float = 30.0) -> None:
        """Start serving; ``DgxmmError`` when it does not listen within ``timeout_s``."""
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise DgxmmError(
                    f"the proxy could not listen on {self.host}:{self.port}"
                    + (f": {self._error}" if self._error else "")
                )
            time.sleep(0.01)

    def stop(self) -> None:
        """Stop serving (held requests are let go after a short grace) and close the app."""
        self._server.should_exit = True
        self._thread.join(timeout=30)

    def _run(self) -> None:
        try:
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                runner.run(self._serve())
        except BaseException as error:  # reported by start(); a thread's error is otherwise lost
            self._error = error

    async def _serve(self) -> None:
        try:
            await self._server.serve()
        finally:
            await self.app.aclose()
