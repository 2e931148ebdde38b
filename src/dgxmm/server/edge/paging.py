"""Pages of a list: ``limit`` (at most 1,000) and an opaque ``cursor``, answered ``next_cursor``.

A cursor is the key of the last item a page gave, wrapped (base64 of JSON, with the list's
name, so a cursor of one list is refused by another). The next page starts strictly after
that key in the list's order, so an item is given once, whatever is added or dropped between
pages: an item added behind the cursor is not seen by this walk, one dropped is skipped.
Parameters are read here as text so that a bad one answers 400 naming its field.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Annotated, Any, TypeVar
from zoneinfo import ZoneInfo

import orjson
from fastapi import Query

from dgxmm.clock import to_us
from dgxmm.errors import InvalidInput
from dgxmm.jobs import read_asked

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "CursorQuery",
    "LimitQuery",
    "make_cursor",
    "page_after",
    "read_bool",
    "read_cursor",
    "read_id_cursor",
    "read_instant",
    "read_limit",
    "read_span",
]

MAX_LIMIT = 1000
DEFAULT_LIMIT = 100

T = TypeVar("T")
Key = Any  # a JSON value: a name, an id, or a list of them

LimitQuery = Annotated[
    str | None,
    Query(max_length=10, description=f"how many items at most (1-{MAX_LIMIT})"),
]
CursorQuery = Annotated[
    str | None,
    Query(max_length=1000, description="the previous page's next_cursor, as it was"),
]


def read_limit(text: str | None, *, default: int | None = DEFAULT_LIMIT) -> int | None:
    """Return the limit asked for, or ``default`` (``InvalidInput`` naming ``limit``)."""
    if text is None:
        return default
    # isdigit alone takes "³", which int() refuses, and "٤٢", which it reads as 42.
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_LIMIT:
        raise InvalidInput("limit", f"{text!r} is not a whole number from 1 to {MAX_LIMIT}")
    return int(text)


def read_bool(text: str | None, field: str) -> bool | None:
    """Return a yes/no filter (``true``/``false``), or None when absent."""
    if text is None:
        return None
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise InvalidInput(field, f"{text!r} is not true or false")


def make_cursor(list_name: str, key: Key) -> str:
    """Wrap the key of a page's last item as the cursor of the next page."""
    data = orjson.dumps({"l": list_name, "k": key})
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def read_cursor(text: str | None, list_name: str) -> Key | None:
    """Return the key a cursor of ``list_name`` carries (``InvalidInput`` naming ``cursor``)."""
    if text is None:
        return None
    try:
        data = orjson.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (binascii.Error, ValueError, orjson.JSONDecodeError):
        data = None
    if not isinstance(data, dict) or data.get("l") != list_name or "k" not in data:
        raise InvalidInput("cursor", f"is not a cursor of {list_name}: pass next_cursor as given")
    return data["k"]


def read_id_cursor(text: str | None, list_name: str) -> int | None:
    """Return the row id a cursor of a list paged by id carries."""
    key = read_cursor(text, list_name)
    if key is not None and (not isinstance(key, int) or isinstance(key, bool) or key < 1):
        raise InvalidInput("cursor", f"is not a cursor of {list_name}: pass next_cursor as given")
    return key


def read_instant(text: str, field: str, zone: ZoneInfo) -> int:
    """Read an ISO 8601 time as an instant; one without an offset is a wall time of ``zone``."""
    asked = read_asked(text, field)
    if isinstance(asked, datetime):
        return to_us(asked.replace(tzinfo=zone))
    return asked


def read_span(
    zone: ZoneInfo, since: str | None, until: str | None, wrong: list[tuple[str, str]]
) -> tuple[int | None, int | None]:
    """Read a filter's ``since`` and ``until`` (wall times of ``zone`` without an offset);
    a wrong one is added to ``wrong`` as (field, message), so a form names every one."""
    read: dict[str, int | None] = {"since": None, "until": None}
    for field, text in (("since", since), ("until", until)):
        if text:
            try:
                read[field] = read_instant(text, field, zone)
            except InvalidInput as error:
                wrong.append((error.field, error.message))
    return read["since"], read["until"]


def page_after(
    items: Sequence[T], key: Callable[[T], Any], after: Key | None, limit: int | None
) -> tuple[list[T], Any | None]:
    """Return the items after ``after`` in ``key`` order, ``limit`` of them, and the last key.

    The last key is None when no item follows the page.
    """
    ordered = sorted(items, key=key)
    if after is not None:
        mark = _comparable(after)
        try:
            ordered = [item for item in ordered if _comparable(key(item)) > mark]
        except TypeError:  # a key of another shape: not this list's cursor
            raise InvalidInput("cursor", "is not a cursor of this list") from None
    if limit is None or len(ordered) <= limit:
        return ordered, None
    page = ordered[:limit]
    return page, key(page[-1])


def _comparable(key: Key) -> Any:
    # A key back from JSON is a list where the list's own was a tuple.
    return tuple(key) if isinstance(key, list | tuple) else key
