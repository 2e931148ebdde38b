"""Write the Prometheus text exposition format: the lines of the stand-in's ``/metrics``.

``dgxmm.fleet.metrics.prometheus`` reads what this writes (the tests check the round trip).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["format_series", "format_value"]


def format_value(value: float) -> str:
    """Write a sample value as Prometheus does: ``+Inf``, ``-Inf``, ``NaN`` or a float."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def format_series(name: str, labels: Iterable[tuple[str, str]], value: float) -> str:
    """Write one sample line, escaping label values."""
    pairs = ",".join(f'{key}="{_escape(val)}"' for key, val in labels)
    return f"{name}{{{pairs}}} {format_value(value)}" if pairs else f"{name} {format_value(value)}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
