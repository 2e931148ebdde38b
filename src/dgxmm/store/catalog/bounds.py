"""What the catalog can hold: the bounds a value is checked against before it is written.

A catalog file may come from anywhere, and what it holds is read back by every page, every
export and every restore. So a value is checked against what each of those can take, not
only against what the database accepts:

- **instants** (``defined_at``, ``dropped_at``) from ``0001-01-02T00:00Z`` to
  ``9999-12-30T23:59:59.999999Z``: ``clock.from_us`` turns an instant into a ``datetime``,
  whose dates run from year 1 to year 9999, and a page shows it in a zone whose offset (less
  than a day) must not carry it past either end;
- **versions** from 0 to 2^63 - 1, the databases' 64-bit integers;
- **JSON values** (a job's definition, an attic entry's item) nested at most ``MAX_DEPTH``
  levels in each value of a definition, and at most ``MAX_BYTES`` of JSON for one thing as the
  attic keeps it: the server's JSON encoders recurse a few Python frames a level, so a value
  900 lists deep answers 500 wherever it is shown;
- **text** the databases can store: UTF-8 (no lone surrogate, which a JSON escape such as
  ``\\ud800`` can carry) and no NUL character (PostgreSQL's text cannot hold one).

The catalog's own writes are held to the same bounds, so whatever it holds its file carries
and imports again.
"""

from __future__ import annotations

from dgxmm.clock import EARLIEST_US, LATEST_US
from dgxmm.errors import DefinitionError
from dgxmm.store.catalog.journal import dump

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_VERSION",
    "check_instant",
    "check_text",
    "check_version",
    "json_depth",
    "json_text",
]

MAX_VERSION = 2**63 - 1
# A definition's values are a level or two deep (``args``); 32 is far past any of ours and far
# inside the encoders' recursion. A value's depth counts its lists and objects: [[1]] is 2.
MAX_DEPTH = 32
# The server's body limit: one thing larger than a request can carry is not one of ours.
MAX_BYTES = 2**20


def check_instant(value: object, field: str) -> int:
    """Return an instant (microseconds since the epoch) that every page can show."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise DefinitionError(field, f"expected an instant in microseconds, got {value!r}")
    if not EARLIEST_US <= value <= LATEST_US:
        raise DefinitionError(
            field,
            f"{value} is out of range {EARLIEST_US} to {LATEST_US} "
            "(0001-01-02 to 9999-12-30, in microseconds since 1970)",
        )
    return value


def check_version(value: object, field: str) -> int:
    """Return a catalog version the databases can hold."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise DefinitionError(field, f"expected a catalog version, got {value!r}")
    if not 0 <= value <= MAX_VERSION:
        raise DefinitionError(field, f"{value} is out of range 0 to 2^63 - 1")
    return value


def check_text(value: object, field: str, *, most: int) -> str:
    """Return text of at most ``most`` characters that both databases can store."""
    if not isinstance(value, str):
        raise DefinitionError(field, f"expected text, got {value!r}")
    if len(value) > most:
        raise DefinitionError(field, f"{len(value)} characters long; at most {most}")
    if "\x00" in value:
        raise DefinitionError(field, "holds a NUL character, which PostgreSQL cannot store")
    _utf8(value, field)
    return value


def json_text(value: object, field: str, *, depth: int = MAX_DEPTH) -> str:
    """Return a value as the catalog stores it (JSON text) when it is within the bounds."""
    deepest = json_depth(value, depth)
    if deepest > depth:
        raise DefinitionError(field, f"nests more than {depth} lists or objects deep")
    try:
        text = dump(value)
    except (TypeError, ValueError) as error:  # a value JSON cannot hold: NaN, a set, ...
        raise DefinitionError(field, f"not a JSON value ({error})") from None
    size = len(_utf8(text, field))
    if size > MAX_BYTES:
        raise DefinitionError(field, f"{size} bytes of JSON; at most {MAX_BYTES} (1 MiB)")
    return text


def json_depth(value: object, most: int) -> int:
    """Return how deep ``value`` nests, stopping once past ``most``; no recursion, so a value
    deeper than Python's recursion limit is measured too."""
    deepest = 0
    pending: list[tuple[object, int]] = [(value, 1)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, dict):
            children = list(item.values())
        elif isinstance(item, list | tuple):
            children = list(item)
        else:
            continue
        deepest = max(deepest, level)
        if deepest > most:
            break
        pending.extend((child, level + 1) for child in children)
    return deepest


def _utf8(text: str, field: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError as error:
        bad = text[error.start : error.end]
        raise DefinitionError(
            field, f"not UTF-8 text: a lone surrogate ({bad!r}) at {error.start}"
        ) from None
