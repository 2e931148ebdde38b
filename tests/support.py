"""Shared test helpers: skip-or-fail for missing services, literal instants.

Import as `from support import need, at` (tests/ is on pytest's pythonpath)."""

from __future__ import annotations

import os
from datetime import datetime

import pytest

from dgxmm.clock import to_us

IN_CI = os.environ.get("CI") == "true"


def need(condition: bool, reason: str) -> None:
    """Skip when a service or binary is missing on a developer's machine; under CI, fail."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"CI=true, and this test needs something missing: {reason}")
    pytest.skip(reason)


def at(iso: str) -> int:
    """Return an ISO 8601 time with an offset as microseconds since the epoch."""
    return to_us(datetime.fromisoformat(iso))
