"""The hold's bounds, from the store's settings: how many requests, how many bytes, how long.

Per deployment, each on its own: ``proxy.max_held`` (default 1000) requests held while it
wakes, ``proxy.max_held_bytes`` (default 128 MiB) bytes of their bodies; and
``proxy.max_held_bytes_total`` (default 512 MiB), the bodies held for every deployment
together, since they all live in the one process that also serves the API, the store and
the jobs. A request past one of them is answered 503 at once. ``proxy.max_hold_s``
(default 600, vLLM's start-up timeout) is how long one request is held; then it is
answered 503 (the wake goes on). A setting that is not a number 0 or more is reported in
the log and its default used: a typo must not stop every request.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import Any

from dgxmm.errors import InvalidInput

__all__ = [
    "DEFAULT_BOUNDS",
    "MAX_HELD_BYTES_SETTING",
    "MAX_HELD_BYTES_TOTAL_SETTING",
    "MAX_HELD_SETTING",
    "MAX_HOLD_SETTING",
    "HoldBounds",
    "bound_settings",
    "check_bounds",
    "read_bounds",
]

log = logging.getLogger(__name__)

MAX_HELD_SETTING = "proxy.max_held"
MAX_HOLD_SETTING = "proxy.max_hold_s"
MAX_HELD_BYTES_SETTING = "proxy.max_held_bytes"
MAX_HELD_BYTES_TOTAL_SETTING = "proxy.max_held_bytes_total"

_MIB = 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class HoldBounds:
    """How many requests and bytes the hold keeps, and how long each request may wait."""

    max_held: int = 1000
    max_hold_s: float = 600.0
    # Four of the largest bodies the proxy reads (32 MiB) per deployment; chat bodies are KiB.
    max_held_bytes: int = 128 * _MIB
    max_held_bytes_total: int = 512 * _MIB

    def to_json(self) -> dict[str, Any]:
        """Return the bounds as the API shows them."""
        return {field.name: getattr(self, field.name) for field in fields(self)}


DEFAULT_BOUNDS = HoldBounds()


@dataclass(frozen=True, slots=True, kw_only=True)
class _Bound:
    """One bound: its field, its store setting, and what it may be."""

    field: str
    setting: str
    whole: bool  # a whole number (a count, bytes) or seconds
    most: float  # the largest value the API takes

    def usable(self, value: Any, *, most: float = math.inf) -> bool:
        """Tell whether the value can be this bound (0 to ``most``)."""
        if isinstance(value, bool) or not isinstance(value, int if self.whole else int | float):
            return False
        return math.isfinite(value) and 0 <= value <= most

    def describe(self) -> str:
        """Say what a value of this bound must be."""
        return "a whole number" if self.whole else "a number of seconds"


_BOUNDS = (
    _Bound(field="max_held", setting=MAX_HELD_SETTING, whole=True, most=10**6),
    _Bound(field="max_hold_s", setting=MAX_HOLD_SETTING, whole=False, most=86400),
    _Bound(field="max_held_bytes", setting=MAX_HELD_BYTES_SETTING, whole=True, most=2**40),
    _Bound(
        field="max_held_bytes_total", setting=MAX_HELD_BYTES_TOTAL_SETTING, whole=True, most=2**40
    ),
)


def read_bounds(get_setting: Callable[[str, Any], Any]) -> HoldBounds:
    """Return the bounds the settings give; the default for a setting it cannot use."""
    values: dict[str, Any] = {}
    for bound in _BOUNDS:
        default = getattr(DEFAULT_BOUNDS, bound.field)
        value = get_setting(bound.setting, default)
        if not bound.usable(value):
            log.warning("%s: %r is not %s 0 or more; using %s",
                        bound.setting, value, bound.describe(), default)  # fmt: skip
            value = default
        values[bound.field] = value if bound.whole else float(value)
    return HoldBounds(**values)


def check_bounds(now: HoldBounds, given: dict[str, Any]) -> HoldBounds:
    """Return ``now`` with the bounds ``given``; ``InvalidInput`` names those it cannot use.

    Its ``field`` and ``message`` are the first; its ``errors`` list every one.
    """
    values: dict[str, Any] = {}
    refused: list[tuple[str, str]] = []
    for bound in _BOUNDS:
        value = given.get(bound.field, getattr(now, bound.field))
        if not bound.usable(value, most=bound.most):
            refused.append(
                (bound.field, f"{value!r} is not {bound.describe()} 0-{int(bound.most)}")
            )
        else:
            values[bound.field] = value if bound.whole else float(value)
    if refused:
        raise InvalidInput.every(refused)
    return HoldBounds(**values)


def bound_settings(bounds: HoldBounds, names: Iterable[str]) -> dict[str, Any]:
    """Return the store settings that keep the bounds ``names`` of ``bounds``, by setting."""
    wanted = set(names)
    return {b.setting: getattr(bounds, b.field) for b in _BOUNDS if b.field in wanted}
