"""Loading progress for a streamed chat completion held while its deployment wakes.

Opt-in per deployment (``loading_progress``), as llama-swap's ``sendLoadingState``: a chat
UI that streams shows "waking demo-chat (about 3 s)" instead of hanging. The answer begins
at once (200, ``text/event-stream``) with chunks of OpenAI's ``chat.completion.chunk`` shape
whose delta carries the words in ``reasoning_content`` (the field reasoning models stream
their thinking in, which chat UIs show apart from the answer and clients keep as an extra
field) and an empty ``content``; then a dot every ``EVERY_S`` while it wakes; then the
server's own stream, passed through as it comes. The answer's ``content`` is the server's
alone.

Once the answer has begun its status cannot change: a wake refused or failed, or a server
that answers an error, ends the stream with an ``error`` event in OpenAI's shape (the
``openai`` client raises its ``APIError`` with the message), then ``[DONE]``.

Only chat completions get progress: a completion's stream has no field for it, and
embeddings do not stream.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import MutableMapping
from typing import Any

from dgxmm.proxy.replies import error_events
from dgxmm.proxy.upstream import Send

__all__ = ["EVERY_S", "Progress", "wants_progress"]

EVERY_S = 2.0
_CHAT = "/v1/chat/completions"


def wants_progress(path: str, body: bytes) -> bool:
    """Whether a held request may get progress: a chat completion asked for as a stream."""
    if path != _CHAT:
        return False
    try:
        request = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(request, dict) and request.get("stream") is True


class Progress:
    """The progress of one held stream: ``begin``, ``ready`` or ``fail``; ``send`` after."""

    def __init__(self, send: Send, *, model: str, name: str) -> None:
        self._send = send
        self._model = model
        self._name = name
        self._id = f"chatcmpl-dgxmm-{uuid.uuid4().hex[:16]}"
        self._ticker: asyncio.Task[None] | None = None
        self._began = 0.0
        self._status = 200
        self._error = b""

    async def begin(self, estimate_s: float | None) -> None:
        """Begin the answer, say what is happening, and keep saying it."""
        self._began = time.monotonic()
        await self._send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
        ]})  # fmt: skip
        about = f" (about {estimate_s:.0f} s)" if estimate_s is not None else ""
        await self._say(f"waking {self._name}{about}", role=True)
        self._ticker = asyncio.ensure_future(self._tick())

    async def ready(self) -> None:
        """Stop the dots and say how long it took; the server's stream follows."""
        await self._stop()
        await self._say(f" ready after {time.monotonic() - self._began:.1f} s\n\n")

    async def fail(self, message: str, code: str) -> None:
        """End the stream with an error event in OpenAI's shape, then ``[DONE]``."""
        await self._stop()
        ending = error_events(message, kind="service_unavailable_error", code=code)
        await self._send({"type": "http.response.body", "body": ending, "more_body": False})

    async def send(self, message: MutableMapping[str, Any]) -> None:
        """The ASGI send for the server's answer: its head is ours already; an error answer
        becomes an error event."""
        if message["type"] == "http.response.start":
            self._status = message["status"]
            return
        if self._status < 400:
            await self._send(message)
            return
        self._error += message.get("body", b"")
        if not message.get("more_body", False):
            await self.fail(_error_text(self._error, self._status), "server_error")

    async def close(self) -> None:
        """Stop the dots (a client gone, or any end)."""
        await self._stop()

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(EVERY_S)
            await self._say(" .")

    async def _stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            await asyncio.gather(self._ticker, return_exceptions=True)
            self._ticker = None

    async def _say(self, words: str, *, role: bool = False) -> None:
        delta: dict[str, Any] = {"content": "", "reasoning_content": words}
        if role:
            delta = {"role": "assistant", **delta}
        chunk = {
            "id": self._id, "object": "chat.completion.chunk", "created": int(time.time()),
            "model": self._model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}],
        }  # fmt: skip
        await self._event(json.dumps(chunk).encode())

    async def _event(self, data: bytes) -> None:
        await self._send({"type": "http.response.body", "body": b"data: " + data + b"\n\n",
                          "more_body": True})  # fmt: skip


def _error_text(body: bytes, status: int) -> str:
    """Return the message of a server's error answer (OpenAI's shape), or name its status."""
    try:
        found = json.loads(body)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return f"the model server answered {status}"
    return str(found)
