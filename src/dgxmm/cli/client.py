"""The one way the command line reaches a running server: its HTTP API, with a bearer token.

An answer the API refuses comes back as the error of ``dgxmm.errors`` its status code stands
for (``server/edge/responses.py`` maps them the other way), so a command fails the same way
whether it asked the server or opened the database with ``--offline``: 400 and 422 become
``InvalidInput`` naming the field, 404 ``NotFound``, 409 ``Conflict``, 401 and 403
``Forbidden``, 502 ``BackendError``, anything else ``StoreError``. A server that does not
answer at all is an ``Unreachable``, which says where the command looked.
"""

from __future__ import annotations

from typing import Any

import httpx

from dgxmm.errors import (
    BackendError,
    Conflict,
    DgxmmError,
    Forbidden,
    InvalidInput,
    NotFound,
    StoreError,
    Unreachable,
)

__all__ = ["Client"]

# A start or wake waits for the model server's start-up gate, a run for its job: minutes.
_TIMEOUT = httpx.Timeout(30.0, read=3600.0)


# The page a list command asks for: the server's most.
PAGE = 1000


class Client:
    """An HTTP client of one dgxmm server."""

    def __init__(
        self, url: str, token: str | None, *, transport: httpx.BaseTransport | None = None
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.url, headers=headers, timeout=_TIMEOUT, transport=transport
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def get(self, path: str, **params: Any) -> Any:
        """GET a path; parameters that are None are left out."""
        return self._send("GET", path, params=params)

    def get_all(self, path: str, key: str, *, most: int | None = None, **params: Any) -> Any:
        """GET a list page after page, following ``next_cursor``; return the first answer
        with ``key`` holding every item (or the first ``most``)."""
        first: dict[str, Any] | None = None
        items: list[Any] = []
        cursor = None
        while True:
            size = PAGE if most is None else min(PAGE, most - len(items))
            answer = self.get(path, limit=size, cursor=cursor, **params)
            first = first or answer
            items.extend(answer[key])
            cursor = answer.get("next_cursor")
            if cursor is None or (most is not None and len(items) >= most):
                break
        assert first is not None
        return {**first, key: items, "next_cursor": None}

    def post(self, path: str, body: Any = None, **params: Any) -> Any:
        """POST a JSON body."""
        return self._send("POST", path, body=body, params=params)

    def patch(self, path: str, body: Any) -> Any:
        """PATCH with a JSON body."""
        return self._send("PATCH", path, body=body)

    def put(self, path: str, body: Any) -> Any:
        """PUT a JSON body."""
        return self._send("PUT", path, body=body)

    def delete(self, path: str) -> Any:
        """DELETE a path."""
        return self._send("DELETE", path)

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def _send(
        self, method: str, path: str, *, body: Any = None, params: dict[str, Any] | None = None
    ) -> Any:
        query = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            answer = self._http.request(
                method, path, params=query, json=body if body is not None else None
            )
        except httpx.TransportError as error:
            raise Unreachable(
                f"no dgxmm server answers at {self.url} ({error or type(error).__name__}); "
                "start one with `dgxmm serve`, give its --url, or --offline to open the "
                "database"
            ) from error
        if answer.is_success:
            return answer.json()
        raise _error_of(answer)


def _error_of(answer: httpx.Response) -> DgxmmError:
    """Return the domain error an API error answer stands for."""
    try:
        body = answer.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    field = body.get("field") if isinstance(body.get("field"), str) else None
    message = str(body.get("message") or answer.text or answer.reason_phrase)
    status = answer.status_code
    if status in (400, 422):
        # The API's message already starts with the field where it names one twice.
        refused = InvalidInput(
            field or "", message.removeprefix(f"{field}: ") if field else message
        )
        refused.errors = tuple(
            (str(one.get("field") or ""), str(one.get("message") or ""))
            for one in body.get("errors") or ()
            if isinstance(one, dict)
        )
        return refused
    if status == 404:
        missing = NotFound("", "")
        missing.args = (message,)  # the server's words ("no job named 'nope'"), as they are
        return missing
    if status == 409:
        return Conflict(message.removeprefix(f"{field}: ") if field else message, field=field)
    if status == 401:
        return Forbidden(f"{message} (the server refused the token; give --token-file)")
    if status == 403:
        return Forbidden(message)
    if status == 502:
        return BackendError(message)
    return StoreError(f"the server answered {status}: {message}")
