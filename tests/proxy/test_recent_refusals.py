"""The proxy's refusals of the last hour, by reason: what the console's Proxy page shows."""

from __future__ import annotations

from support import at

from dgxmm.clock import ManualClock
from dgxmm.proxy import ProxyStats, Refusal
from dgxmm.time_units import MINUTE_US


def test_it_counts_the_refusals_of_the_last_hour_by_reason() -> None:
    clock = ManualClock(at("2026-06-01T10:00:00+00:00"))
    stats = ProxyStats(clock)
    stats.refused(Refusal.HOLD_FULL)
    clock.advance(30 * MINUTE_US)
    stats.refused(Refusal.HOLD_FULL)
    stats.refused(Refusal.WAKE_FAILED)
    assert stats.recent_refusals() == {"hold_full": 2, "wake_failed": 1}
    clock.advance(31 * MINUTE_US)  # the first is now more than an hour old
    assert stats.recent_refusals() == {"hold_full": 1, "wake_failed": 1}
    clock.advance(60 * MINUTE_US)
    assert stats.recent_refusals() == {}
    assert stats.snapshot().refused == {"hold_full": 2, "wake_failed": 1}  # since start: kept
