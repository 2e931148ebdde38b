"""Counted nouns on the console's pages: "1 run", "2 runs", never "2 run(s)"."""

from __future__ import annotations

__all__ = ["counted"]

# The plurals that do not just add an "s".
_PLURALS: dict[str, str] = {}


def counted(count: int, noun: str) -> str:
    """Return ``count`` and ``noun``, the noun plural unless the count is one."""
    return f"{count} {noun if count == 1 else _PLURALS.get(noun, noun + 's')}"
