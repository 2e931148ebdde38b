"""Catalog documents for the import tests: a file's document, an attic entry, deep values.

Import as ``from store.catalogkit import catalog_document, attic_entry, nested`` (the store
tests and the API's alike).
"""

from __future__ import annotations

from typing import Any


def catalog_document(**parts: Any) -> dict[str, Any]:
    """Return a catalog file's document (format 2), empty but for ``parts``."""
    return {"format": 2, "kind": "dgxmm-catalog", "queries": [], "jobs": [], "attic": [], **parts}


def attic_entry(**changes: Any) -> dict[str, Any]:
    """Return an attic entry as a catalog file holds it: job ``other``, a checkpoint."""
    definition = {"name": "other", "schedule": "0 3 * * *", "action": "checkpoint"}
    return {
        "kind": "job",
        "name": "other",
        "item": {"definition": definition, "effects": []},
        "defined_version": 1,
        "defined_by": "alice",
        "defined_at": 0,
        "dropped_version": 2,
        "dropped_by": "bob",
        "dropped_at": 0,
        "why": "dropped",
        **changes,
    }


def nested(depth: int) -> Any:
    """Return ``1`` inside ``depth`` lists: ``nested(2) == [[1]]``."""
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def comparable(document: dict[str, Any]) -> dict[str, Any]:
    """Return an exported document without what differs between two exports of one catalog."""
    return {k: v for k, v in document.items() if k not in ("catalog_version", "exported_at_us")}
