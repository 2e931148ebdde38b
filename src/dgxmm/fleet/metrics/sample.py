"""What a model server's ``/metrics`` says, as one sample; and what changed between two.

A ``MetricsSample`` is read from vLLM's names. Series are summed over every label set (one
per engine under data parallelism, one per finish reason for the request counter), so a
sample describes the whole server. Gauges (running, waiting) are values at the instant;
counters (requests, latency sum and count) are cumulative since the server started, and
``delta_between`` turns two samples into what happened in between, counting a counter that
went down as a restart, the way Prometheus' ``increase()`` does.

The per-minute rollup (requests completed, mean running and waiting, mean latency) is built
from these by the store-side job.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from dgxmm.errors import InvalidInput
from dgxmm.fleet.metrics.prometheus import Exposition, parse_exposition

__all__ = [
    "LATENCY_METRIC",
    "RUNNING_METRIC",
    "SLEEP_STATE_METRIC",
    "SUCCESS_METRIC",
    "WAITING_METRIC",
    "MetricsDelta",
    "MetricsSample",
    "SleepState",
    "delta_between",
    "sample_from_text",
]

RUNNING_METRIC = "vllm:num_requests_running"
WAITING_METRIC = "vllm:num_requests_waiting"
SUCCESS_METRIC = "vllm:request_success_total"
LATENCY_METRIC = "vllm:e2e_request_latency_seconds"
SLEEP_STATE_METRIC = "vllm:engine_sleep_state"


class SleepState(Enum):
    """The engine's sleep state, named by vLLM's ``sleep_state`` label values."""

    AWAKE = "awake"
    WEIGHTS_OFFLOADED = "weights_offloaded"  # sleep level 1
    DISCARD_ALL = "discard_all"  # sleep level 2
    # Level 0 (newer vLLM: scheduling paused, memory kept) has no label of its own: every
    # series of the gauge reads 0.
    PAUSED = "paused"

    @property
    def is_asleep(self) -> bool:
        """Return whether the engine sleeps (at either level)."""
        return self is not SleepState.AWAKE


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricsSample:
    """One reading of a server's ``/metrics``; counters are cumulative since it started."""

    taken_at_us: int
    requests_running: int
    requests_waiting: int
    requests_finished_total: int  # vllm:request_success_total, every finish reason
    latency_sum_s: float  # vllm:e2e_request_latency_seconds_sum
    latency_count: int  # vllm:e2e_request_latency_seconds_count
    sleep_state: SleepState | None  # None: the server does not report it (older vLLM)

    @property
    def is_idle(self) -> bool:
        """Return whether nothing is running or waiting at the instant of the sample."""
        return self.requests_running == 0 and self.requests_waiting == 0


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricsDelta:
    """What happened between two samples of one server."""

    start_us: int
    end_us: int
    requests_finished: int
    latency_sum_s: float
    latency_count: int
    counters_reset: bool  # a counter went down: the server restarted in between

    @property
    def mean_latency_s(self) -> float | None:
        """Return the mean end-to-end latency of the requests finished, or None if none."""
        return self.latency_sum_s / self.latency_count if self.latency_count else None


def sample_from_text(text: str, *, taken_at_us: int) -> MetricsSample:
    """Read a sample from a ``/metrics`` page; refuse one that lacks what a sample needs."""
    page = parse_exposition(text)
    return MetricsSample(
        taken_at_us=taken_at_us,
        requests_running=_count(page, RUNNING_METRIC),
        requests_waiting=_count(page, WAITING_METRIC),
        requests_finished_total=_count(page, SUCCESS_METRIC),
        latency_sum_s=_total(page, f"{LATENCY_METRIC}_sum"),
        latency_count=_count(page, f"{LATENCY_METRIC}_count"),
        sleep_state=_sleep_state(page),
    )


def delta_between(earlier: MetricsSample, later: MetricsSample) -> MetricsDelta:
    """Return what happened between two samples of one server, allowing for a restart."""
    if later.taken_at_us < earlier.taken_at_us:
        raise InvalidInput("later", "was taken before the earlier sample")
    reset = (
        later.requests_finished_total < earlier.requests_finished_total
        or later.latency_count < earlier.latency_count
        or later.latency_sum_s < earlier.latency_sum_s
    )
    if reset:
        # After a restart the counters began again at zero: all they hold is new.
        return MetricsDelta(
            start_us=earlier.taken_at_us,
            end_us=later.taken_at_us,
            requests_finished=later.requests_finished_total,
            latency_sum_s=later.latency_sum_s,
            latency_count=later.latency_count,
            counters_reset=True,
        )
    return MetricsDelta(
        start_us=earlier.taken_at_us,
        end_us=later.taken_at_us,
        requests_finished=later.requests_finished_total - earlier.requests_finished_total,
        latency_sum_s=later.latency_sum_s - earlier.latency_sum_s,
        latency_count=later.latency_count - earlier.latency_count,
        counters_reset=False,
    )


def _total(page: Exposition, name: str) -> float:
    found = page.named(name)
    if not found:
        raise InvalidInput(name, "is missing from the metrics (is this a vLLM server?)")
    total = 0.0
    for series in found:
        if not math.isfinite(series.value) or series.value < 0:
            raise InvalidInput(name, f"{series.value} is not a count")
        total += series.value
    return total


def _count(page: Exposition, name: str) -> int:
    return round(_total(page, name))


def _sleep_state(page: Exposition) -> SleepState | None:
    """Read vLLM's sleep gauge: one series per engine and state, 1 for the state it is in."""
    found = page.named(SLEEP_STATE_METRIC)
    if not found:
        return None
    on = {s.label("sleep_state") for s in found if s.value == 1}
    # Engines under data parallelism sleep and wake together; one awake engine serves.
    if SleepState.AWAKE.value in on:
        return SleepState.AWAKE
    if SleepState.DISCARD_ALL.value in on:
        return SleepState.DISCARD_ALL
    if SleepState.WEIGHTS_OFFLOADED.value in on:
        return SleepState.WEIGHTS_OFFLOADED
    if any(s.label("sleep_state") == SleepState.AWAKE.value for s in found):
        return SleepState.PAUSED
    return None
