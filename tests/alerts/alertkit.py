"""A real webhook receiver on 127.0.0.1, and an ``Alerts`` over a store and a fleet.

The receiver checks each request's signature against the channel's secret, answers 500 to
its first ``fail_first`` requests, and can stall once (it answers only after ``stall_s``,
past the sender's timeout). It records every request it got, in order. The trickler answers
its head one byte at a time, slowly: no single read waits long, the whole answer does.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from dgxmm.alerts import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    Destinations,
    Finding,
    Rule,
    SendPolicy,
)

KEY = bytes(range(32))  # the sealing key of the tests' alerts
# A short timeout, so a stalled receiver costs a test half a second.
POLICY = SendPolicy(timeout_s=0.5, first_retry_s=10, max_retry_s=600, give_up_after_s=3600)
# The tests' receivers are on 127.0.0.1: a private address, allowed only when the operator
# says so (``dgxmm serve --alerts-allow-private-networks``), as the tests do.
LOOPBACK_ALLOWED = Destinations(allow_private=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class Received:
    """One request the receiver got."""

    path: str
    host: str  # the Host header
    body: Any
    signed: bool  # the signature matched the secret
    status: int  # what the receiver answered (0: stalled past the sender's timeout)


@dataclass(slots=True, kw_only=True)
class Receiver:
    """A webhook receiver on a thread; use as a context manager."""

    fail_first: int = 0
    stall_once_s: float = 0.0
    redirect: bool = False
    secret: str = ""
    got: list[Received] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __enter__(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                stamp = self.headers.get(TIMESTAMP_HEADER, "")
                expected = (
                    "sha256="
                    + hmac.new(
                        receiver.secret.encode(), stamp.encode() + b"." + raw, hashlib.sha256
                    ).hexdigest()
                )
                signed = hmac.compare_digest(expected, self.headers.get(SIGNATURE_HEADER, ""))
                status, stall = receiver._answer()
                receiver._note(Received(path=self.path, host=self.headers.get("Host", ""),
                                        body=json.loads(raw), signed=signed,
                                        status=0 if stall else status))  # fmt: skip
                if stall:
                    time.sleep(stall)
                try:
                    self.send_response(status)
                    if status in (301, 302, 307, 308):
                        self.send_header("Location", "http://127.0.0.1:9/elsewhere")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:
                    pass  # the sender gave up waiting and closed

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook/s3cr3t-path"

    def _answer(self) -> tuple[int, float]:
        with self._lock:
            if self.stall_once_s:
                stall, self.stall_once_s = self.stall_once_s, 0.0
                return 200, stall
            if self.redirect:
                return 302, 0.0
            if self.fail_first > 0:
                self.fail_first -= 1
                return 500, 0.0
            return 200, 0.0

    def _note(self, received: Received) -> None:
        with self._lock:
            self.got.append(received)

    def requests(self) -> list[Received]:
        """Return what it got so far."""
        with self._lock:
            return list(self.got)


class Scripted:
    """A finder that says what the test sets: the subjects, and each one's token."""

    def __init__(self) -> None:
        self.now: dict[str, str] = {}

    def find(self, rule: Rule, now_us: int) -> dict[str, Finding]:
        """Return the subjects set, each with its token."""
        return {
            subject: Finding(subject=subject, token=token, title=f"{subject} broke ({token})")
            for subject, token in self.now.items()
        }


@dataclass(slots=True, kw_only=True)
class Trickler:
    """A receiver that answers its head a byte every ``every_s``; notes who hung up on it.

    The head is padded to ``head_bytes``, so a whole answer takes ``head_bytes * every_s``;
    each connection is served on its own thread, and everything stops at ``__exit__``.
    """

    every_s: float = 0.2
    head_bytes: int = 200
    url_path: str = "/hook/slow"
    connections: int = 0  # accepted
    completed: int = 0  # whole heads sent
    hung_up: int = 0  # the sender closed before the head was whole
    _socket: socket.socket | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __enter__(self) -> Trickler:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self._socket.settimeout(0.1)
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._socket is not None
        self._socket.close()

    @property
    def url(self) -> str:
        assert self._socket is not None
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}{self.url_path}"

    def under_way(self) -> int:
        """Return how many answers are still being trickled."""
        with self._lock:
            return self.connections - self.completed - self.hung_up

    def _accept(self) -> None:
        assert self._socket is not None
        while not self._stop.is_set():
            try:
                connection, _ = self._socket.accept()
            except (TimeoutError, OSError):
                continue
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._trickle, args=(connection,), daemon=True).start()

    def _trickle(self, connection: socket.socket) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Pad: "
        head += b"." * max(0, self.head_bytes - len(head) - 4) + b"\r\n\r\n"
        outcome = "completed"
        with connection:
            connection.settimeout(1.0)
            try:
                connection.recv(65536)  # the request (its head and small body)
                for i in range(len(head)):
                    if self._stop.wait(self.every_s):
                        outcome = "stopped"
                        break
                    connection.sendall(head[i : i + 1])
            except OSError:
                outcome = "hung_up"
        with self._lock:
            if outcome == "completed":
                self.completed += 1
            elif outcome == "hung_up":
                self.hung_up += 1
