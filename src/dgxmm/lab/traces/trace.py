"""A request trace: when each request arrived, for which model, with its token counts.

A trace is kept as columns (numpy arrays), not one object per request: the lab replays a
million requests in seconds, and the columns are what its loops read. Arrivals are integer
microseconds since the Unix epoch, like every instant in dgxmm, sorted; a model is an index
into ``models``. Token counts are -1 where the source gave none.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["NO_TOKENS", "Ints", "Trace"]

Ints = npt.NDArray[np.int64]
NO_TOKENS = -1  # a count the source did not give


@dataclass(frozen=True, slots=True, kw_only=True)
class Trace:
    """Requests in arrival order, as columns of equal length."""

    models: tuple[str, ...]  # the names ``model`` indexes
    at_us: Ints  # arrival, microseconds since the epoch, non-decreasing
    model: Ints  # index into ``models``
    input_tokens: Ints  # NO_TOKENS where unknown
    output_tokens: Ints  # NO_TOKENS where unknown

    def __post_init__(self) -> None:
        lengths = {
            len(self.at_us),
            len(self.model),
            len(self.input_tokens),
            len(self.output_tokens),
        }
        if len(lengths) != 1:
            raise ValueError(f"a trace's columns differ in length: {sorted(lengths)}")
        if len(self.at_us) and bool(np.any(np.diff(self.at_us) < 0)):
            raise ValueError("a trace's arrivals must be in order")
        if len(self.model) and not 0 <= int(self.model.min()) <= int(self.model.max()) < len(
            self.models
        ):
            raise ValueError("a trace's model index is outside its models")

    @classmethod
    def of(
        cls,
        arrivals: Sequence[tuple[int, str]] | Sequence[tuple[int, str, int, int]],
    ) -> Trace:
        """Build a trace from ``(at_us, model)`` or ``(at_us, model, input, output)`` rows."""
        rows = sorted(arrivals, key=lambda row: row[0])
        models = tuple(sorted({str(row[1]) for row in rows}))
        index = {name: i for i, name in enumerate(models)}
        return cls(
            models=models,
            at_us=np.asarray([row[0] for row in rows], dtype=np.int64),
            model=np.asarray([index[str(row[1])] for row in rows], dtype=np.int64),
            input_tokens=np.asarray(
                [row[2] if len(row) > 2 else NO_TOKENS for row in rows], dtype=np.int64
            ),
            output_tokens=np.asarray(
                [row[3] if len(row) > 3 else NO_TOKENS for row in rows], dtype=np.int64
            ),
        )

    def __len__(self) -> int:
        return len(self.at_us)

    def arrivals_of(self, model: str) -> Ints:
        """Return the arrivals of one model's requests, in order (empty if it has none)."""
        if model not in self.models:
            return np.empty(0, dtype=np.int64)
        chosen: Ints = self.at_us[self.model == self.models.index(model)]
        return chosen

    def counts(self) -> dict[str, int]:
        """Return each model's number of requests (a model with none is left out)."""
        found = np.bincount(self.model, minlength=len(self.models))
        return {name: int(n) for name, n in zip(self.models, found, strict=True) if n}

    def only(self, models: Collection[str]) -> Trace:
        """Return the requests for ``models`` alone (the other names leave ``models`` too)."""
        kept = tuple(name for name in self.models if name in models)
        renumbered = np.full(len(self.models), -1, dtype=np.int64)
        for new, name in enumerate(kept):
            renumbered[self.models.index(name)] = new
        chosen = renumbered[self.model] >= 0
        return Trace(
            models=kept,
            at_us=self.at_us[chosen],
            model=renumbered[self.model][chosen],
            input_tokens=self.input_tokens[chosen],
            output_tokens=self.output_tokens[chosen],
        )

    @property
    def span_us(self) -> tuple[int, int]:
        """Return the first and the last arrival (0, 0 for an empty trace)."""
        if not len(self.at_us):
            return (0, 0)
        return (int(self.at_us[0]), int(self.at_us[-1]))
