"""``PageProcess``: model servers' pages read by a child process, so the server's own stays free.

The parent writes one JSON line per page to the child's stdin (``{"id", "url", "connect_s",
"timeout_s", "metrics"}``) and its reader thread takes one line per answer from the child's
stdout (``{"id", "page"}``, ``Page.to_json``), in the order they finish; the thread that
asked waits for its own. The child (``main``) reads the pages on a pool of threads with
``InlinePages``, one httpx client per server as in the parent, and reads a metrics page as a
sample there too: the HTTP and the parsing, the pass's CPU, run beside the serving
interpreter instead of inside it (``pages.py`` says why). Not httpx's async client on one
event loop: on this machine it took 10 to 24 ms a page against 1.2 ms for the sync one.

The child lives as long as its stdin: it ends when the parent closes the pipe, or dies
(kill -9 of ``dgxmm serve`` leaves no child behind). A child that dies first fails the
pages it held (a ``TRANSPORT`` failure, "the page reader exited") and the next read starts
another. A page is waited for at most its connect and answer timeouts and a grace second:
the parent never waits on a child that stopped answering longer than it would have waited
on the server itself.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import IO, Any

import httpx

from dgxmm.fleet.backends.pages import Failure, InlinePages, Page, PageRequest, tls_context

__all__ = ["PageProcess"]

log = logging.getLogger(__name__)

_GRACE_S = 1.0  # past a page's own timeouts, for the child's hand-back
_EXITED = "the page reader exited"


class PageProcess:
    """Pages read by one child process; safe to share between threads and clients."""

    def __init__(self, *, python: str = sys.executable) -> None:
        self._python = python
        self._lock = threading.Lock()
        self._child: subprocess.Popen[bytes] | None = None
        # The answers waited for, by number, with the child asked.
        self._waiting: dict[int, tuple[subprocess.Popen[bytes], Future[Page]]] = {}
        self._ids = itertools.count(1)
        self._closed = False

    def start(self) -> None:
        """Start the child now rather than at the first read (it takes about a second)."""
        with self._lock:
            self._running()

    def read(self, request: PageRequest) -> Page:
        """Have the child read the page; wait for its answer, at most the page's timeouts."""
        line = {
            "url": request.url,
            "connect_s": request.connect_s,
            "timeout_s": request.timeout_s,
            "metrics": request.metrics,
        }
        answer: Future[Page] = Future()
        with self._lock:
            if self._closed:
                return Page(failure=Failure.TRANSPORT, detail="the page reader is closed")
            child = self._running()
            number = next(self._ids)
            self._waiting[number] = (child, answer)
            try:
                assert child.stdin is not None
                child.stdin.write(json.dumps({"id": number, **line}).encode() + b"\n")
                child.stdin.flush()
            except (OSError, ValueError):  # it died since (and its pipe may be closed)
                self._waiting.pop(number, None)
                return Page(failure=Failure.TRANSPORT, detail=_EXITED)
        try:
            return answer.result(timeout=request.connect_s + request.timeout_s + _GRACE_S)
        except FutureTimeout:
            with self._lock:
                self._waiting.pop(number, None)
            return Page(
                failure=Failure.TIMEOUT, detail=f"the page reader gave no answer for {line['url']}"
            )

    def close(self) -> None:
        """End the child: its stdin closes, and it exits; pages still waited for fail."""
        with self._lock:
            self._closed = True
            child, self._child = self._child, None
        if child is None:
            return
        with contextlib.suppress(OSError):
            assert child.stdin is not None
            child.stdin.close()
        try:
            child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()

    def _running(self) -> subprocess.Popen[bytes]:
        """Return the child, started if there is none (called under the lock)."""
        if self._child is not None and self._child.poll() is None:
            return self._child
        child = subprocess.Popen(
            # -c, not -m: the package imports this module, and runpy would run it twice.
            [self._python, "-c", "from dgxmm.fleet.backends.page_process import main; main()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,  # its warnings go where the server's go
            # Its own session: a Ctrl-C meant for the server does not end it mid-pass; it
            # ends with its stdin, when the server closes it or exits.
            start_new_session=True,
        )
        self._child = child
        threading.Thread(
            target=self._take_answers, args=(child,), name="dgxmm-pages", daemon=True
        ).start()
        return child

    def _take_answers(self, child: subprocess.Popen[bytes]) -> None:
        """Hand each answer to the thread waiting for it, until the child's stdout ends."""
        assert child.stdout is not None
        for line in child.stdout:
            try:
                found = json.loads(line)
                number, page = found["id"], Page.from_json(found["page"])
            except (ValueError, KeyError, TypeError) as error:  # not an answer: say, go on
                log.warning("the page reader wrote a line that is no answer (%s): %r", error, line)
                continue
            with self._lock:
                waiting = self._waiting.pop(number, None)
            if waiting is not None:  # else its reader gave up waiting
                waiting[1].set_result(page)
        child.wait()
        with self._lock:
            for pipe in (child.stdout, child.stdin):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()
            if self._child is child:
                self._child = None
            held = [n for n, (asked, _) in self._waiting.items() if asked is child]
            answers = [self._waiting.pop(n)[1] for n in held]
        if not self._closed:
            log.warning("the page reader exited (%s); a read starts another", child.returncode)
        for answer in answers:
            answer.set_result(Page(failure=Failure.TRANSPORT, detail=_EXITED))


# -- the child --------------------------------------------------------------------------------

# Pages read at once; a hung server holds one until its timeouts pass. As many as the pass
# keeps scrapes at once at most (scrapes.SCRAPE_WORKERS), so hung servers hold up no other.
_READERS = 256


class _Reader:
    """The child's side: pages read on a pool of threads, one httpx client per server."""

    def __init__(self, out: IO[bytes]) -> None:
        self._out = out
        self._out_lock = threading.Lock()
        self._clients: dict[str, InlinePages] = {}
        self._clients_lock = threading.Lock()
        # One client per server, as in the parent (each ModelServerClient has its own): one
        # for all would share httpx's bound of 100 connections a client among every server.
        self._pool = ThreadPoolExecutor(max_workers=_READERS, thread_name_prefix="page")

    def ask(self, asked: dict[str, Any]) -> None:
        self._pool.submit(self._answer, asked)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _answer(self, asked: dict[str, Any]) -> None:
        request = PageRequest(
            url=asked["url"],
            connect_s=asked["connect_s"],
            timeout_s=asked["timeout_s"],
            metrics=asked["metrics"],
        )
        try:
            page = self._pages_of(request.url).read(request)
        except Exception as error:  # an answer is owed: the parent waits for it
            page = Page(failure=Failure.TRANSPORT, detail=f"{type(error).__name__}: {error}")
        line = json.dumps({"id": asked["id"], "page": page.to_json()}).encode() + b"\n"
        with self._out_lock, contextlib.suppress(OSError, ValueError):  # the parent left
            self._out.write(line)
            self._out.flush()

    def _pages_of(self, url: str) -> InlinePages:
        origin = "/".join(url.split("/", 3)[:3])  # scheme://host:port
        with self._clients_lock:
            found = self._clients.get(origin)
            if found is None:
                # trust_env=False and no redirects, as ModelServerClient's own client.
                client = httpx.Client(trust_env=False, follow_redirects=False, verify=tls_context())
                found = self._clients[origin] = InlinePages(client)
            return found


def main() -> None:
    """Read pages asked on stdin until it closes; answer each on stdout."""
    reader = _Reader(sys.stdout.buffer)
    with contextlib.suppress(KeyboardInterrupt):
        for line in sys.stdin.buffer:
            reader.ask(json.loads(line))
    # Nobody waits for the pages still being read: end now, not when their timeouts pass
    # (an interpreter's exit would join the pool's threads).
    reader.close()
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    os._exit(0)
