"""The checks of a channel's and a rule's keys: every wrong field named, nothing written.

``Refusals`` and ``check_name`` are the jobs engine's (``jobs/keys.py``): one way to gather
every wrong field of a definition.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from dgxmm.errors import DefinitionError
from dgxmm.jobs.keys import Refusals, check_name

__all__ = ["Refusals", "check_known_keys", "check_name", "check_whole"]


def check_known_keys(keys: Mapping[str, Any], known: Collection[str]) -> None:
    """Refuse a key that is not one of ``known`` (the first, by name)."""
    for key in sorted(keys):
        if key not in known:
            raise DefinitionError(key, f"{key} is not a known field ({', '.join(sorted(known))})")


def check_whole(value: object, *, field: str, least: int, most: int) -> int:
    """Check a whole number in ``least..most`` (a boolean is not one)."""
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        raise DefinitionError(field, f"{value!r} is not a whole number in {least}-{most}")
    return value
