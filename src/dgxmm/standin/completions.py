"""The stand-in's OpenAI surface: chat completions, completions and embeddings, as vLLM's.

Pure shapes, no I/O: ``read_request`` checks a body and says what was asked; ``answer``
builds the whole reply; ``chunks`` the server-sent events of a streamed one, one per word
(vLLM sends one per token), the first chat chunk carrying the role, the last the finish
reason, and with ``stream_options.include_usage`` a last chunk of usage, before ``[DONE]``.
An embedding is a fixed vector made from the text, so equal inputs embed equally.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from http import HTTPStatus
from typing import Any

from dgxmm.standin.engine import Refused

__all__ = [
    "EMBEDDING_SIZE",
    "Asked",
    "Kind",
    "answer",
    "chunks",
    "error_event",
    "read_request",
    "reply_words",
]

EMBEDDING_SIZE = 16


class Kind(Enum):
    """Which OpenAI endpoint a request came to."""

    CHAT = "chat.completion"
    COMPLETION = "text_completion"
    EMBEDDING = "embedding"


_ID_PREFIX = {Kind.CHAT: "chatcmpl", Kind.COMPLETION: "cmpl", Kind.EMBEDDING: "embd"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Asked:
    """What one request asked for."""

    kind: Kind
    model: str | None
    texts: tuple[str, ...]  # the messages' contents, the prompt, or the inputs to embed
    stream: bool = False
    include_usage: bool = False
    max_tokens: int | None = None


def read_request(kind: Kind, body: bytes) -> Asked:
    """Return what the body asks; ``Refused`` (400) naming the field it cannot use."""
    try:
        request = json.loads(body)
    except ValueError as err:
        raise Refused(
            HTTPStatus.BAD_REQUEST, f"malformed JSON in the request body: {err}"
        ) from None
    if not isinstance(request, dict):
        raise Refused(HTTPStatus.BAD_REQUEST, "the request body must be a JSON object")
    model = request.get("model")
    if model is not None and not isinstance(model, str):
        raise Refused(HTTPStatus.BAD_REQUEST, f"model: {model!r} is not a text")
    texts = _texts(kind, request)
    stream = bool(request.get("stream"))
    if stream and kind is Kind.EMBEDDING:
        raise Refused(HTTPStatus.BAD_REQUEST, "stream: embeddings do not stream")
    options = request.get("stream_options") or {}
    max_tokens = request.get("max_tokens", request.get("max_completion_tokens"))
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
        raise Refused(HTTPStatus.BAD_REQUEST, f"max_tokens: {max_tokens!r} is not 1 or more")
    return Asked(
        kind=kind,
        model=model,
        texts=texts,
        stream=stream,
        include_usage=isinstance(options, dict) and bool(options.get("include_usage")),
        max_tokens=max_tokens,
    )


def reply_words(model: str, asked: Asked) -> list[str]:
    """Return the words of the fixed reply (cut at ``max_tokens``)."""
    words = f"This is the dgxmm stand-in for {model}; no model runs here.".split()
    return words[: asked.max_tokens] if asked.max_tokens else words


def answer(model: str, asked: Asked) -> dict[str, Any]:
    """Return the whole reply to a request that does not stream."""
    head = _head(model, asked.kind)
    prompt = _words(asked.texts)
    if asked.kind is Kind.EMBEDDING:
        data = [
            {"object": "embedding", "index": i, "embedding": _vector(text)}
            for i, text in enumerate(asked.texts)
        ]
        usage = {"prompt_tokens": prompt, "total_tokens": prompt}
        return {"id": head["id"], "object": "list", "created": head["created"],
                "model": model, "data": data, "usage": usage}  # fmt: skip
    words = reply_words(model, asked)
    text = " ".join(words)
    choice: dict[str, Any] = {"index": 0, "logprobs": None, "finish_reason": _finish(asked, words)}
    if asked.kind is Kind.CHAT:
        choice["message"] = {"role": "assistant", "content": text}
    else:
        choice["text"] = text
    made = len(words)
    usage = {"prompt_tokens": prompt, "completion_tokens": made, "total_tokens": prompt + made}
    return {**head, "choices": [choice], "usage": usage}


def chunks(model: str, asked: Asked) -> Iterator[bytes]:
    """Yield a streamed reply's events, one word each, then ``data: [DONE]``."""
    head = _head(model, asked.kind)
    head["object"] = "chat.completion.chunk" if asked.kind is Kind.CHAT else "text_completion"
    words = reply_words(model, asked)
    for i, word in enumerate(words):
        piece = word if i == 0 else f" {word}"
        if asked.kind is Kind.CHAT:
            delta: dict[str, Any] = {"content": piece}
            if i == 0:
                delta["role"] = "assistant"
            choice: dict[str, Any] = {"index": 0, "delta": delta}
        else:
            choice = {"index": 0, "text": piece}
        last = i == len(words) - 1
        choice["logprobs"] = None
        choice["finish_reason"] = _finish(asked, words) if last else None
        yield _event({**head, "choices": [choice]})
    if asked.include_usage:
        prompt, made = _words(asked.texts), len(words)
        usage = {"prompt_tokens": prompt, "completion_tokens": made, "total_tokens": prompt + made}
        yield _event({**head, "choices": [], "usage": usage})
    yield b"data: [DONE]\n\n"


def error_event(message: str) -> bytes:
    """Return the event vLLM sends when a stream fails part way (before ``[DONE]``)."""
    error = {"message": message, "type": "ServiceUnavailableError", "param": None, "code": 503}
    return _event({"error": error})


def _texts(kind: Kind, request: dict[str, Any]) -> tuple[str, ...]:
    if kind is Kind.CHAT:
        messages = request.get("messages")
        if not isinstance(messages, list) or not messages:
            raise Refused(HTTPStatus.BAD_REQUEST, "messages: give a non-empty list of messages")
        for i, message in enumerate(messages):
            if not isinstance(message, dict) or not isinstance(message.get("role"), str):
                raise Refused(HTTPStatus.BAD_REQUEST, f"messages[{i}]: needs a role")
        return tuple(str(message.get("content") or "") for message in messages)
    field = "prompt" if kind is Kind.COMPLETION else "input"
    value = request.get(field)
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise Refused(HTTPStatus.BAD_REQUEST, f"{field}: give a text or a non-empty list of texts")


def _finish(asked: Asked, words: list[str]) -> str:
    return "length" if asked.max_tokens and len(words) == asked.max_tokens else "stop"


def _head(model: str, kind: Kind) -> dict[str, Any]:
    return {
        "id": f"{_ID_PREFIX[kind]}-{uuid.uuid4().hex}",
        "object": kind.value,
        "created": int(time.time()),
        "model": model,
    }


def _words(texts: tuple[str, ...]) -> int:
    return sum(len(text.split()) for text in texts)


def _vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [round(byte / 255 - 0.5, 4) for byte in digest[:EMBEDDING_SIZE]]


def _event(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"
