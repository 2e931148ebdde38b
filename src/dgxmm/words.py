"""Counted nouns on pages, in the CLI and in recorded details: "1 run", "2 runs", "1 query"."""

from __future__ import annotations

__all__ = ["counted"]

# The plurals that do not just add an "s".
_PLURALS: dict[str, str] = {"query": "queries"}


def counted(count: int, noun: str) -> str:
    """Return ``count`` and ``noun``, the noun plural unless the count is one.

    Only the last word is made plural: "cold request" becomes "cold requests".
    """
    if count == 1:
        return f"{count} {noun}"
    head, _, last = noun.rpartition(" ")
    plural = _PLURALS.get(last, last + "s")
    return f"{count} {head + ' ' if head else ''}{plural}"
