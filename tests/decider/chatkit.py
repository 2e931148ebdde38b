"""Real HTTP servers for the ``openai`` decision model's tests.

``ChatServer``: a tiny OpenAI-compatible server on a loopback port (a thread of this process)
that answers ``/health``, ``/is_sleeping``, ``/v1/models`` and ``/v1/chat/completions`` with
the message content a test sets, and keeps the chat requests it got.

``Standin``: the project's stand-in server (``python -m dgxmm.standin``) as a real
process, which can be put to sleep over HTTP.
"""

from __future__ import annotations

import json
import select
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
from support import STANDIN

PATIENCE_S = 60.0


class ChatServer:
    """An OpenAI-compatible chat endpoint answering ``content``; ``requests`` holds the asks."""

    def __init__(self, content: str = "", *, model: str = "judge-1") -> None:
        self.content = content
        self.model = model
        self.asleep = False
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def _send(self, status: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/health":
                    self._send(200, {})
                elif self.path == "/is_sleeping":
                    self._send(200, {"is_sleeping": server.asleep})
                elif self.path == "/v1/models":
                    self._send(200, {"object": "list", "data": [{"id": server.model}]})
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                if self.path != "/v1/chat/completions":
                    self._send(404, {"error": "not found"})
                    return
                server.requests.append(body)
                self._send(
                    200,
                    {
                        "object": "chat.completion",
                        "model": body.get("model"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": server.content},
                                "finish_reason": "stop",
                            }
                        ],
                    },
                )

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def verdict(self, propose: bool, confidence: float, reason: str = "quiet nights") -> None:
        """Answer with this JSON verdict from now on."""
        self.content = json.dumps({"propose": propose, "confidence": confidence, "reason": reason})

    def close(self) -> None:
        """Stop serving."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=PATIENCE_S)


class Standin:
    """``python -m dgxmm.standin`` on a port it picks, until ``stop()``."""

    def __init__(self, model: str = "standin-model") -> None:
        self.process = subprocess.Popen(
            [*STANDIN, "--port", "0", "--model", model],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
        )
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], PATIENCE_S)
        line = self.process.stdout.readline().decode() if ready else ""
        marker = "listening on "
        if marker not in line:
            self.stop()
            raise AssertionError(f"the stand-in did not start: {line!r}")
        self.base_url = line.split(marker, 1)[1].split()[0].rstrip("/")
        self.client = httpx.Client(base_url=self.base_url, timeout=PATIENCE_S, trust_env=False)

    def sleep(self) -> None:
        """Put it to sleep (level 1) and check that it says so."""
        self.client.post("/sleep", params={"level": "1"}).raise_for_status()
        assert self.client.get("/is_sleeping").json() == {"is_sleeping": True}

    def wake(self) -> None:
        """Wake it up."""
        self.client.post("/wake_up").raise_for_status()
        assert self.client.get("/is_sleeping").json() == {"is_sleeping": False}

    def stop(self) -> None:
        """End the process."""
        if hasattr(self, "client"):
            self.client.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=PATIENCE_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
