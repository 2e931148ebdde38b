"""The rows a query job's run returned, kept with its run: the first ones, bounded.

A run reads what it reads chunk by chunk and lets go of it (``query_runs.py``); a person who
looks at the run later wants to see what it found. So the run keeps the first
``KEPT_ROWS`` rows of its last statement that returned rows (a body that writes and then
reads a summary ends with the summary), at most ``KEPT_BYTES`` of JSON in all, and says
when it cut. Values that JSON has no form for (bytes, decimals, dates) are kept as text.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from dgxmm.errors import StoreError
from dgxmm.jobs import RunContext

__all__ = ["KEPT_BYTES", "KEPT_ROWS", "KeptRows", "RowKeeper"]

KEPT_ROWS = 100
KEPT_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class KeptRows:
    """The first rows of a run, as kept: ``returned`` counts every row of that statement."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    returned: int
    cut: bool  # fewer rows kept than returned

    def to_json(self) -> dict[str, Any]:
        """Return them as plain JSON values."""
        return {
            "columns": list(self.columns),
            "rows": [list(row) for row in self.rows],
            "returned": self.returned,
            "kept": len(self.rows),
            "cut": self.cut,
            "max_rows": KEPT_ROWS,
            "max_bytes": KEPT_BYTES,
        }

    def dumps(self) -> str:
        """Return the text stored in ``job_run_rows.body``."""
        body = {"columns": self.columns, "rows": self.rows, "returned": self.returned}
        return orjson.dumps({**body, "cut": self.cut}).decode()

    @classmethod
    def loads(cls, text: str) -> KeptRows:
        """Read a stored body back."""
        try:
            data = orjson.loads(text)
            return cls(
                columns=tuple(str(c) for c in data["columns"]),
                rows=tuple(tuple(row) for row in data["rows"]),
                returned=int(data["returned"]),
                cut=bool(data["cut"]),
            )
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as error:
            raise StoreError(f"job_run_rows: a kept body could not be read: {error}") from None


class RowKeeper:
    """Keeps a run's first rows while it reads them; a new statement with rows starts over."""

    __slots__ = ("_bytes", "_columns", "_cut", "_returned", "_rows")

    def __init__(self) -> None:
        self._columns: tuple[str, ...] | None = None
        self._rows: list[tuple[Any, ...]] = []
        self._bytes = 0
        self._returned = 0
        self._cut = False

    def start(self, columns: Iterable[str]) -> None:
        """Begin the rows of a statement (the last statement's rows are the ones kept)."""
        self._columns = tuple(columns)
        self._rows = []
        self._bytes = len(orjson.dumps(self._columns))
        self._returned = 0
        self._cut = False

    def add(self, rows: Sequence[Sequence[Any]]) -> None:
        """Count a chunk of rows, keeping those that fit within the bounds."""
        self._returned += len(rows)
        for row in rows:
            if self._cut:
                return
            if len(self._rows) >= KEPT_ROWS:
                self._cut = True
                return
            kept = tuple(_plain(value) for value in row)
            size = len(orjson.dumps(kept)) + 1
            if self._bytes + size > KEPT_BYTES:
                self._cut = True
                return
            self._rows.append(kept)
            self._bytes += size

    def keep_in(self, ctx: RunContext) -> None:
        """Hand what was kept to the run, which stores it with its record (if any was)."""
        kept = self.kept()
        if kept is not None:
            ctx.keep(kept.dumps())

    def kept(self) -> KeptRows | None:
        """Return what was kept, or None when no statement returned rows."""
        if self._columns is None:
            return None
        return KeptRows(
            columns=self._columns,
            rows=tuple(self._rows),
            returned=self._returned,
            cut=self._cut or len(self._rows) < self._returned,
        )


def _plain(value: Any) -> Any:
    """Return a value JSON can hold as it is, else its text."""
    if value is None or isinstance(value, bool | int | float | str):
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**63:
            return str(value)  # beyond what orjson (and a browser's number) holds exactly
        if isinstance(value, float) and not math.isfinite(value):  # JSON has no NaN or inf
            return str(value)
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return "base64:" + base64.b64encode(bytes(value)).decode()
    return str(value)
