"""The hold's bounds, from the store's settings: how many requests, for how long.

``proxy.max_held`` (default 1000) is how many requests one deployment may have held while
it wakes; the next is answered 503 at once. ``proxy.max_hold_s`` (default 600, vLLM's
start-up timeout) is how long one request is held; then it is answered 503 (the wake goes
on). Both apply to each deployment on its own. A setting that is not a positive number is
reported once in the log and the default used: a typo must not stop every request.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dgxmm.errors import InvalidInput

__all__ = [
    "DEFAULT_BOUNDS",
    "MAX_HELD_SETTING",
    "MAX_HOLD_SETTING",
    "HoldBounds",
    "check_bounds",
    "read_bounds",
]

log = logging.getLogger(__name__)

MAX_HELD_SETTING = "proxy.max_held"
MAX_HOLD_SETTING = "proxy.max_hold_s"


@dataclass(frozen=True, slots=True, kw_only=True)
class HoldBounds:
    """How many requests one deployment may hold, and how long each may wait."""

    max_held: int = 1000
    max_hold_s: float = 600.0

    def to_json(self) -> dict[str, Any]:
        """Return the bounds as the API shows them."""
        return {"max_held": self.max_held, "max_hold_s": self.max_hold_s}


DEFAULT_BOUNDS = HoldBounds()


def read_bounds(get_setting: Callable[[str, Any], Any]) -> HoldBounds:
    """Return the bounds the settings give; the default for a setting it cannot use."""
    held = get_setting(MAX_HELD_SETTING, DEFAULT_BOUNDS.max_held)
    hold = get_setting(MAX_HOLD_SETTING, DEFAULT_BOUNDS.max_hold_s)
    if isinstance(held, bool) or not isinstance(held, int) or held < 0:
        log.warning("%s: %r is not a whole number 0 or more; using %s",
                    MAX_HELD_SETTING, held, DEFAULT_BOUNDS.max_held)  # fmt: skip
        held = DEFAULT_BOUNDS.max_held
    if (
        isinstance(hold, bool)
        or not isinstance(hold, int | float)
        or not math.isfinite(hold)
        or hold < 0
    ):
        log.warning("%s: %r is not a number of seconds 0 or more; using %s",
                    MAX_HOLD_SETTING, hold, DEFAULT_BOUNDS.max_hold_s)  # fmt: skip
        hold = DEFAULT_BOUNDS.max_hold_s
    return HoldBounds(max_held=held, max_hold_s=float(hold))


def check_bounds(max_held: Any, max_hold_s: Any) -> HoldBounds:
    """Return the bounds given; ``InvalidInput`` names the one it cannot use."""
    if isinstance(max_held, bool) or not isinstance(max_held, int) or not 0 <= max_held <= 10**6:
        raise InvalidInput("max_held", f"{max_held!r} is not a whole number 0-1000000")
    if (
        isinstance(max_hold_s, bool)
        or not isinstance(max_hold_s, int | float)
        or not math.isfinite(max_hold_s)
        or not 0 <= max_hold_s <= 86400
    ):
        raise InvalidInput("max_hold_s", f"{max_hold_s!r} is not a number of seconds 0-86400")
    return HoldBounds(max_held=max_held, max_hold_s=float(max_hold_s))
