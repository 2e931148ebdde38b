"""The stand-in's HTTP server and command line: vLLM's routes, shapes and errors.

Standard library only (``ThreadingHTTPServer``), so that it listens within a fraction of a
second; a thread per connection serves requests concurrently. SIGTERM and SIGINT shut it
down cleanly (exit code 0). Errors have vLLM's shape: ``{"error": {"message", "type",
"param", "code"}}``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import cast
from urllib.parse import parse_qs, urlsplit

from dgxmm.standin.completions import Kind, answer, chunks, error_event, read_request
from dgxmm.standin.engine import SLEEP_MODES, Engine, Phase, Refused, StandinConfig
from dgxmm.standin.faults import Faults

__all__ = ["Handler", "StandinServer", "main"]

_MAX_BODY = 16 * 1024 * 1024


class StandinServer(ThreadingHTTPServer):
    """The HTTP server: one thread per connection, holding the engine."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(self, config: StandinConfig, engine: Engine) -> None:
        if ":" in config.host:
            self.address_family = socket.AF_INET6
        self.engine = engine
        super().__init__((config.host, config.port), Handler)


class Handler(BaseHTTPRequestHandler):
    """Routes each request to the engine and answers in vLLM's shapes."""

    protocol_version = "HTTP/1.1"  # keep-alive, as clients' pools expect
    # Headers and body go out as two writes: with Nagle's algorithm the body waits for the
    # client's delayed ACK, 40 ms on Linux, on every keep-alive request.
    disable_nagle_algorithm = True
    server_version = "dgxmm-standin"

    def do_GET(self) -> None:
        """Answer a GET."""
        self._route("GET")

    def do_POST(self) -> None:
        """Answer a POST."""
        self._route("POST")

    def _route(self, method: str) -> None:
        url = urlsplit(self.path)
        try:
            body = self._read_body()
            route = _ROUTES.get((method, url.path))
            if route is None:
                known = any(path == url.path for _, path in _ROUTES)
                status = HTTPStatus.METHOD_NOT_ALLOWED if known else HTTPStatus.NOT_FOUND
                raise Refused(status, f"{method} {url.path}: {status.phrase}")
            if self._engine.phase() is Phase.STARTING and not url.path.startswith("/dgxmm/"):
                if url.path == "/health":
                    self._send(HTTPStatus.SERVICE_UNAVAILABLE, b"", "text/plain")
                    return
                raise Refused(HTTPStatus.SERVICE_UNAVAILABLE, "the model is still loading")
            route(self, parse_qs(url.query), body)
        except Refused as refused:
            self._send_error(refused.status, refused.message)

    @property
    def _engine(self) -> Engine:
        return cast(StandinServer, self.server).engine

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY:
            self.close_connection = True
            raise Refused(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body over {_MAX_BODY} bytes")
        return self.rfile.read(length) if length > 0 else b""

    def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self._send_fault_headers()
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send_long(self, status: HTTPStatus, size: int, content_type: str) -> None:
        """Send a body of ``size`` bytes (no newline) in pieces; note how much went out."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(size))
        self.send_header("Connection", "close")  # the reader may hang up part way
        self.end_headers()
        self.close_connection = True
        piece = b"x" * (1024 * 1024)
        sent = 0
        try:
            while sent < size:
                part = piece[: size - sent]
                self.wfile.write(part)
                sent += len(part)
            self.wfile.flush()
        except OSError:  # the reader hung up: what it took, or its buffers hold, is counted
            pass
        finally:
            self._engine.note_sent(sent)

    def _stream(self, steps: Iterator[int], events: list[bytes]) -> None:
        """Send server-sent events chunk by chunk (HTTP/1.1 chunked), one per engine step."""
        self.send_response(HTTPStatus.OK)
        self._send_fault_headers()
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            try:
                for _ in range(600):  # a slow server's drip, while the fault is on
                    drip_s = self._engine.faults().drip_s
                    if drip_s <= 0:
                        break
                    self._chunk(b": still thinking\n")
                    time.sleep(drip_s)
                self._chunk(events[0])
                for step in steps:
                    self._chunk(events[step])
            except Refused as refused:  # aborted by a sleep part way: say so, then end
                self._chunk(error_event(refused.message))
                self._chunk(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:  # the client went away: the engine counts the request aborted
            self.close_connection = True
        finally:
            close = getattr(steps, "close", None)
            if close is not None:
                close()

    def _die_after(self, part: bytes, content_type: str) -> None:
        """Send an answer's head and ``part`` of its body (chunked), then exit: a fault."""
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._chunk(part)
        print("dgxmm stand-in: dying mid-answer (a fault mode)", file=sys.stderr, flush=True)
        os._exit(3)

    def _send_fault_headers(self) -> None:
        """The untrusted server's headers: the cookies to set, the cookies and headers received."""
        faults = self._engine.faults()
        for cookie in faults.set_cookies:
            self.send_header("Set-Cookie", cookie)
        if faults.echo_cookies:
            self.send_header("X-Standin-Cookies", json.dumps(self.headers.get_all("Cookie", [])))
        if faults.echo_headers:
            names = faults.echo_headers
            received = {name.lower(): self.headers.get_all(name, []) for name in names}
            self.send_header("X-Standin-Headers", json.dumps(received))

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send_json(self, status: HTTPStatus, payload: object) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json")

    def _send_error(self, status: HTTPStatus, message: str) -> None:
        kind = _ERROR_TYPES.get(status, status.phrase.replace(" ", ""))
        error = {"message": message, "type": kind, "param": None, "code": int(status)}
        self._send_json(status, {"error": error})


Query = dict[str, list[str]]


def _health(handler: Handler, query: Query, body: bytes) -> None:
    handler._send(HTTPStatus.OK, b"", "text/plain")


def _models(handler: Handler, query: Query, body: bytes) -> None:
    engine = handler._engine
    model = engine.config.model
    card = {
        "id": model,
        "object": "model",
        "created": engine.created,
        "owned_by": "vllm",
        "root": model,
        "parent": None,
        "max_model_len": 4096,
        "permission": [],
    }
    handler._send_json(HTTPStatus.OK, {"object": "list", "data": [card]})


def _openai(kind: Kind) -> Callable[[Handler, Query, bytes], None]:
    """Return the route of one OpenAI endpoint: the whole reply, or a stream of chunks."""

    def route(handler: Handler, query: Query, body: bytes) -> None:
        engine = handler._engine
        model = engine.config.model
        asked = read_request(kind, body)
        if asked.model is not None and asked.model != model:
            raise Refused(HTTPStatus.NOT_FOUND, f"The model `{asked.model}` does not exist.")
        faults = engine.faults()
        if faults.completion_error:
            raise Refused(HTTPStatus.INTERNAL_SERVER_ERROR, "the engine failed (a fault mode)")
        if faults.error_bytes:
            handler._send_long(HTTPStatus.INTERNAL_SERVER_ERROR, faults.error_bytes, "text/plain")
            return
        if asked.stream and faults.long_line_bytes:
            handler._send_long(HTTPStatus.OK, faults.long_line_bytes, "text/event-stream")
            return
        if not asked.stream:
            engine.generate()
            reply = json.dumps(answer(model, asked)).encode()
            if engine.faults().die_mid_answer:
                handler._die_after(reply[: len(reply) // 2], "application/json")
            handler._send(HTTPStatus.OK, reply, "application/json")
            return
        events = list(chunks(model, asked))
        steps = engine.steps(len(events))
        next(steps)  # the first step admits it (or refuses, before any header is sent)
        if engine.faults().die_mid_answer:
            handler._die_after(events[0], "text/event-stream; charset=utf-8")
        handler._stream(steps, events)

    return route


def _sleep(handler: Handler, query: Query, body: bytes) -> None:
    level_text = query.get("level", ["1"])[-1]
    mode = query.get("mode", ["abort"])[-1]  # vLLM's default
    if level_text not in ("1", "2"):
        raise Refused(HTTPStatus.BAD_REQUEST, f"level: {level_text!r} is not 1 or 2")
    if mode not in SLEEP_MODES:
        raise Refused(HTTPStatus.BAD_REQUEST, f"mode: {mode!r} is not one of {SLEEP_MODES}")
    _hang(handler._engine, "sleep_hang_s")  # a hung sleep: it finishes, but late
    faults = handler._engine.faults()
    if faults.sleep_error:
        raise Refused(HTTPStatus.INTERNAL_SERVER_ERROR, "sleep failed (a fault mode)")
    handler._engine.sleep(int(level_text), mode)
    handler._send(HTTPStatus.OK, b"", "text/plain")


def _wake_up(handler: Handler, query: Query, body: bytes) -> None:
    faults = handler._engine.faults()
    if faults.die_on_wake:  # as a server that runs out of memory while waking does
        print("dgxmm stand-in: dying during a wake (a fault mode)", file=sys.stderr, flush=True)
        os._exit(3)
    _hang(handler._engine, "wake_hang_s")
    handler._engine.wake(tuple(query.get("tags", ())))  # repeatable; none wakes all
    handler._send(HTTPStatus.OK, b"", "text/plain")


def _hang(engine: Engine, fault: str) -> None:
    """Hold the request for the fault's seconds, or until the fault is switched off."""
    end = time.monotonic() + getattr(engine.faults(), fault)
    with engine.hanging_on(fault):
        while time.monotonic() < end and getattr(engine.faults(), fault) > 0:
            time.sleep(0.05)


def _collective_rpc(handler: Handler, query: Query, body: bytes) -> None:
    try:
        request = json.loads(body)
    except ValueError as err:
        raise Refused(HTTPStatus.BAD_REQUEST, f"JSON decode error: {err}") from None
    method = request.get("method") if isinstance(request, dict) else None
    if method is None:
        raise Refused(HTTPStatus.BAD_REQUEST, "Missing 'method' in request body")
    if method != "reload_weights":
        raise Refused(HTTPStatus.BAD_REQUEST, f"method: {method!r} is not reload_weights")
    handler._engine.reload_weights()
    # vLLM answers each worker's result; reload_weights returns None on every worker.
    handler._send_json(HTTPStatus.OK, {"results": [None]})


def _reset_prefix_cache(handler: Handler, query: Query, body: bytes) -> None:
    handler._engine.reset_prefix_cache()
    handler._send(HTTPStatus.OK, b"", "text/plain")


def _is_sleeping(handler: Handler, query: Query, body: bytes) -> None:
    handler._send_json(HTTPStatus.OK, {"is_sleeping": handler._engine.is_sleeping()})


def _metrics(handler: Handler, query: Query, body: bytes) -> None:
    engine = handler._engine
    while engine.faults().metrics_silent:  # hold the request until the fault is off
        time.sleep(0.05)
    time.sleep(engine.faults().metrics_delay_s)
    text = handler._engine.render_metrics().encode()
    handler._send(HTTPStatus.OK, text, "text/plain; version=0.0.4; charset=utf-8")


def _seen(handler: Handler, query: Query, body: bytes) -> None:
    engine = handler._engine
    handler._send_json(HTTPStatus.OK, {"sent": engine.sent(), "hanging": engine.hanging()})


def _faults(handler: Handler, query: Query, body: bytes) -> None:
    engine = handler._engine
    if body:
        try:
            engine.set_faults(engine.faults().changed(json.loads(body)))
        except ValueError as err:
            raise Refused(HTTPStatus.BAD_REQUEST, str(err)) from None
    handler._send_json(HTTPStatus.OK, engine.faults().to_json())


_ROUTES: dict[tuple[str, str], Callable[[Handler, Query, bytes], None]] = {
    ("GET", "/health"): _health,
    ("GET", "/v1/models"): _models,
    ("POST", "/v1/chat/completions"): _openai(Kind.CHAT),
    ("POST", "/v1/completions"): _openai(Kind.COMPLETION),
    ("POST", "/v1/embeddings"): _openai(Kind.EMBEDDING),
    ("GET", "/metrics"): _metrics,
    ("POST", "/sleep"): _sleep,
    ("POST", "/wake_up"): _wake_up,
    ("GET", "/is_sleeping"): _is_sleeping,
    ("POST", "/collective_rpc"): _collective_rpc,
    ("POST", "/reset_prefix_cache"): _reset_prefix_cache,
    ("GET", "/dgxmm/faults"): _faults,  # not vLLM's: the fault modes
    ("POST", "/dgxmm/faults"): _faults,
    ("GET", "/dgxmm/seen"): _seen,  # not vLLM's: what long answers sent, what hangs now
}
_ERROR_TYPES = {
    HTTPStatus.BAD_REQUEST: "BadRequestError",
    HTTPStatus.NOT_FOUND: "NotFoundError",
    HTTPStatus.SERVICE_UNAVAILABLE: "ServiceUnavailableError",
    HTTPStatus.INTERNAL_SERVER_ERROR: "InternalServerError",
}


def _parse_args(argv: Sequence[str] | None) -> StandinConfig:
    parser = argparse.ArgumentParser(
        prog="python -m dgxmm.standin",
        description="A stand-in for a vLLM server started with VLLM_SERVER_DEV_MODE=1 and "
        "--enable-sleep-mode. No model runs: replies are a fixed sentence.",
    )
    parser.add_argument("--port", type=int, required=True, help="port to listen on (0: any)")
    parser.add_argument("--model", required=True, help="the served model name")
    parser.add_argument("--host", default="127.0.0.1")
    add = parser.add_argument
    add("--startup-delay", type=float, default=0.0, metavar="S", help="seconds of 503 first")
    add("--latency", type=float, default=100.0, metavar="MS", help="time per chat completion")
    add("--memory-gib", type=float, default=16.0, metavar="G", help="GPU memory to pretend")
    add("--max-num-seqs", type=int, default=256, metavar="N", help="requests served at once")
    add("--hang-sleep", type=float, default=0.0, metavar="S", help="fault: /sleep answers late")
    add("--hang-wake", type=float, default=0.0, metavar="S", help="fault: /wake_up answers late")
    add("--fail-sleep", action="store_true", help="fault: /sleep answers 500")
    add("--die-on-wake", action="store_true", help="fault: exit during /wake_up")
    add("--silent-metrics", action="store_true", help="fault: /metrics never answers")
    add("--slow-metrics", type=float, default=0.0, metavar="S", help="fault: /metrics is late")
    add("--fail-completion", action="store_true", help="fault: completions answer 500")
    add("--die-mid-answer", action="store_true", help="fault: exit part way through an answer")
    add("--set-cookie", action="append", default=[], metavar="COOKIE",
        help="fault: send this Set-Cookie with every answer (repeatable)")  # fmt: skip
    add("--echo-cookies", action="store_true", help="tell the Cookie headers received")
    add("--echo-header", action="append", default=[], metavar="NAME",
        help="tell the headers received under NAME (repeatable)")  # fmt: skip
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port: {args.port} is out of range 0-65535")
    for flag in ("startup_delay", "latency", "memory_gib", "hang_sleep", "hang_wake",
                 "slow_metrics"):  # fmt: skip
        if not getattr(args, flag) >= 0:
            parser.error(f"--{flag.replace('_', '-')}: must be 0 or more")
    if args.max_num_seqs < 1:
        parser.error("--max-num-seqs: must be 1 or more")
    return StandinConfig(
        model=args.model,
        host=args.host,
        port=args.port,
        startup_delay_s=args.startup_delay,
        latency_ms=args.latency,
        memory_gib=args.memory_gib,
        max_num_seqs=args.max_num_seqs,
        faults=Faults(
            sleep_hang_s=args.hang_sleep,
            wake_hang_s=args.hang_wake,
            sleep_error=args.fail_sleep,
            die_on_wake=args.die_on_wake,
            metrics_silent=args.silent_metrics,
            metrics_delay_s=args.slow_metrics,
            completion_error=args.fail_completion,
            die_mid_answer=args.die_mid_answer,
            set_cookies=tuple(args.set_cookie),
            echo_cookies=args.echo_cookies,
            echo_headers=tuple(args.echo_header),
        ),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGTERM or SIGINT; return the exit code."""
    config = _parse_args(argv)
    engine = Engine(config)
    try:
        server = StandinServer(config, engine)
    except OSError as err:
        print(f"stand-in: cannot listen on {config.host}:{config.port}: {err}", file=sys.stderr)
        return 1
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
    serving.start()
    port = server.server_address[1]
    host = f"[{config.host}]" if ":" in config.host else config.host
    print(
        f"dgxmm stand-in for vLLM: model {config.model!r} listening on http://{host}:{port}"
        f" (loaded after {config.startup_delay_s:g} s)",
        flush=True,
    )
    stop.wait()
    print("dgxmm stand-in: shutting down", flush=True)
    server.shutdown()
    server.server_close()
    serving.join()
    return 0
