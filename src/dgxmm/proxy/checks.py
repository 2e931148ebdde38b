"""What a request to the proxy must be before it is routed, and what its body says.

Any web page can reach a port on the loopback, and a ``text/plain`` POST needs no CORS
preflight: ``rejection_of`` refuses a request whose ``Origin`` is not the proxy's own (403)
and a body that is not ``application/json`` (415). ``model_of`` reads the body's ``model``
(400 in OpenAI's shape for malformed or too deeply nested JSON, or no model), ``renamed``
puts a deployment's model in place of an alias. See ``app.py`` and docs/proxy.md.
"""

from __future__ import annotations

import json

from dgxmm.proxy.replies import Rejection, Reply, error_reply, rejection_reply
from dgxmm.proxy.upstream import Scope

__all__ = [
    "CHECK_KEY_HEADER",
    "MAX_BODY_BYTES",
    "check_key_of",
    "content_length",
    "model_of",
    "rejection_of",
    "renamed",
    "too_large",
    "without_check_key",
]

MAX_BODY_BYTES = 32 * 1024 * 1024  # embeddings of long documents; vLLM takes this much
# The console's model check (server/model_check.py) carries the proxy's check key in this
# header: the proxy never holds or wakes for it, nor counts it as a client's request.
CHECK_KEY_HEADER = "x-dgxmm-check"
_CHECK_KEY = CHECK_KEY_HEADER.encode()


def check_key_of(scope: Scope) -> bytes | None:
    """Return the check key the request carries, or None."""
    for key, value in scope["headers"]:
        if key == _CHECK_KEY:
            return bytes(value)
    return None


def without_check_key(scope: Scope) -> Scope:
    """Return the scope without the check key: it never goes up to a model server."""
    return {**scope, "headers": [(k, v) for k, v in scope["headers"] if k != _CHECK_KEY]}


def content_length(scope: Scope) -> int | None:
    """Return the request's ``Content-Length`` (None: it has none; llhttp checked its form)."""
    for key, value in scope["headers"]:
        if key == b"content-length":
            return int(value)
    return None


def too_large() -> Reply:
    return error_reply(413, f"the body is over {MAX_BODY_BYTES} bytes",
                       kind="invalid_request_error")  # fmt: skip


def rejection_of(scope: Scope) -> Reply | None:
    """Refuse what a web page of another origin could send; None for anything else."""
    origins: list[bytes] = []
    types: list[bytes] = []
    host = b""
    for key, value in scope["headers"]:
        if key == b"origin":
            origins.append(value)
        elif key == b"content-type":
            types.append(value)
        elif key == b"host":
            host = value
    own = scope.get("scheme", "http").encode() + b"://" + host.lower()
    if any(origin.strip().lower() != own for origin in origins) or (origins and not host):
        shown = origins[0].decode("latin-1")[:200]
        return rejection_reply(
            Rejection.CROSS_ORIGIN,
            f"Origin {shown!r} is not this proxy's own ({own.decode('latin-1')!r}): a web page "
            "elsewhere may not send requests to it",
        )
    if not types and not origins:
        return None  # not a browser's: curl, the openai SDK; read as JSON, as vLLM does
    if len(types) != 1 or types[0].split(b";", 1)[0].strip().lower() != b"application/json":
        given = types[0].decode("latin-1")[:200] if types else "none"
        return rejection_reply(
            Rejection.NOT_JSON,
            f"Content-Type {given!r}: the request body must be application/json",
        )
    return None


def model_of(body: bytes) -> str | Reply:
    try:
        request = json.loads(body)
    except ValueError as error:
        return error_reply(400, f"malformed JSON in the request body: {error}",
                           kind="invalid_request_error")  # fmt: skip
    except RecursionError:  # the parser recurses once per level: its stack is the bound
        return error_reply(400, "the request body's JSON is nested too deeply to read",
                           kind="invalid_request_error")  # fmt: skip
    model = request.get("model") if isinstance(request, dict) else None
    if not isinstance(model, str) or not model:
        return error_reply(400, "model: give the model to use, as a text",
                           kind="invalid_request_error", param="model")  # fmt: skip
    return model


def renamed(body: bytes, model: str) -> bytes:
    """Return the body (read by ``model_of`` already) with ``model`` as its model."""
    request = json.loads(body)
    request["model"] = model
    return json.dumps(request).encode()
