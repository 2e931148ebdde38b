"""Typed parameters of saved queries and the arguments a job gives them.

Types: ``string``, ``int``, ``float``, ``bool`` and ``timestamp`` (ISO 8601 text with an
offset, such as ``2026-03-29T02:30:00+01:00``). Arguments are JSON values, checked once when a
job is defined and again before every run (the query may have changed since). A bool is not
an int here, though Python says it is; an int is a float.

Binding: timestamps become an aware ``datetime`` on PostgreSQL and ISO 8601 text in UTC
(``2026-03-29T01:30:00.000000+00:00``, sortable as text) on SQLite, which has no time type.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import Enum

from dgxmm.errors import DefinitionError
from dgxmm.store.database import Dialect

__all__ = ["ParamType", "bind_args", "check_args", "check_params"]

_PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


class ParamType(Enum):
    """The type of one parameter of a saved query."""

    STRING = "string"
    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    TIMESTAMP = "timestamp"


def check_params(params: object) -> dict[str, ParamType]:
    """Read a ``{name: type}`` mapping; raise ``DefinitionError('params', ...)``."""
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise DefinitionError("params", "expected an object of {name: type}")
    checked: dict[str, ParamType] = {}
    known = ", ".join(t.value for t in ParamType)
    for name, kind in params.items():
        if not isinstance(name, str) or not _PARAM_NAME.fullmatch(name):
            raise DefinitionError(
                "params", f"{name!r} is not a parameter name (letters, digits, _; not first digit)"
            )
        try:
            checked[name] = ParamType(kind)
        except ValueError:
            raise DefinitionError(
                "params", f"{name}: {kind!r} is not a type (use one of {known})"
            ) from None
    return checked


def check_args(
    args: object, params: Mapping[str, ParamType], *, field: str = "args"
) -> dict[str, object]:
    """Check JSON arguments against parameters: none missing, none extra, each of its type."""
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise DefinitionError(field, "expected an object of {parameter: value}")
    missing = sorted(set(params) - set(args))
    if missing:
        raise DefinitionError(field, f"missing {', '.join(missing)} (the query needs it)")
    extra = sorted(str(name) for name in set(args) - set(params))
    if extra:
        raise DefinitionError(field, f"{', '.join(extra)}: the query has no such parameter")
    for name, kind in params.items():
        _check_value(field, name, kind, args[name])
    return {name: args[name] for name in params}


def bind_args(
    args: Mapping[str, object], params: Mapping[str, ParamType], dialect: Dialect
) -> dict[str, object]:
    """Return checked arguments as the values the driver binds."""
    bound: dict[str, object] = {}
    for name, kind in params.items():
        value = args[name]
        if kind is ParamType.TIMESTAMP:
            assert isinstance(value, str)
            moment = _timestamp(value).astimezone(UTC)
            value = (
                moment
                if dialect is Dialect.POSTGRESQL
                else moment.isoformat(timespec="microseconds")
            )
        elif kind is ParamType.FLOAT:
            assert isinstance(value, int | float)
            value = float(value)
        bound[name] = value
    return bound


def _check_value(field: str, name: str, kind: ParamType, value: object) -> None:
    ok = {
        ParamType.STRING: isinstance(value, str),
        ParamType.INT: isinstance(value, int) and not isinstance(value, bool),
        ParamType.FLOAT: isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value),
        ParamType.BOOL: isinstance(value, bool),
        ParamType.TIMESTAMP: isinstance(value, str),
    }[kind]
    if not ok:
        raise DefinitionError(field, f"{name}: expected {kind.value}, got {value!r}")
    if kind is ParamType.INT and not -(2**63) <= value < 2**63:  # type: ignore[operator]
        raise DefinitionError(field, f"{name}: {value} does not fit in 64 bits")
    if kind is ParamType.TIMESTAMP:
        assert isinstance(value, str)
        try:
            _timestamp(value)
        except ValueError as error:
            raise DefinitionError(field, f"{name}: {error}") from None


def _timestamp(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO 8601 timestamp") from None
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{text!r} has no offset (write it like 2026-03-29T02:30:00+01:00)")
    return moment
