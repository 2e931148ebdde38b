"""The neighbours' idle timeouts, replayed request by request (Ollama, llama-swap, Knative)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dgxmm.lab import (
    KNATIVE,
    LLAMA_SWAP_SLEEP,
    OLLAMA,
    Fixed,
    Footprint,
    IdleTimeout,
    Ledger,
    Phase,
    Replayed,
    ServerTimes,
    oracle_timeline,
    replay_idle_timeout,
)
from dgxmm.lab.traces.trace import Ints
from dgxmm.time_units import MINUTE_US, SECOND_US

M = MINUTE_US
S = SECOND_US
FOOT = Footprint(awake_gib=80.0, level_1_gib=2.0, level_2_gib=2.0)
TIMES = ServerTimes(
    stop=Fixed(value_us=5 * S), start=Fixed(value_us=60 * S),
    sleep_1=Fixed(value_us=2 * S), wake_1=Fixed(value_us=1 * S),
)  # fmt: skip
STOP = TIMES.round_trips()[Phase.STOPPED]
SLEEP = TIMES.round_trips()[Phase.ASLEEP_1]


def replay(at: Ints, policy: IdleTimeout, *, end_us: int, times: ServerTimes = TIMES) -> Replayed:
    return replay_idle_timeout(
        at, policy, times, start_us=0, end_us=end_us, rng=np.random.default_rng(1)
    )


def test_a_stopped_server_starts_for_a_request_and_the_ones_meanwhile_wait_for_it() -> None:
    at = np.asarray([0, M, 10 * M, 10 * M + 30 * S, 11 * M + 30 * S], dtype=np.int64)
    replayed = replay(at, OLLAMA, end_us=20 * M)
    assert replayed.timeline.phases() == [
        (0, Phase.AWAKE),
        (6 * M + 1, Phase.GOING_DOWN),  # 5 minutes after the request at 1 min ended
        (6 * M + 5 * S + 1, Phase.STOPPED),
        (10 * M, Phase.STARTING),
        (11 * M, Phase.AWAKE),
        (16 * M + 30 * S + 1, Phase.GOING_DOWN),
        (16 * M + 35 * S + 1, Phase.STOPPED),
    ]
    assert (replayed.waits_us // S).tolist() == [0, 0, 60, 30, 0]
    ledger = Ledger.of("a", FOOT, replayed.timeline, at, waits_us=replayed.waits_us)
    assert (ledger.cold, ledger.starts, ledger.stops) == (2, 1, 2)
    assert (ledger.wait_s(0.5), max(ledger.waits_s)) == (60.0, 60.0)


def test_a_request_that_finds_it_going_down_waits_for_the_way_down_then_up() -> None:
    at = np.asarray([0, 5 * M + 2 * S], dtype=np.int64)  # 2 s into its 5 s stop
    replayed = replay(at, OLLAMA, end_us=10 * M)
    assert replayed.waits_us[1] == (3 * S + 1) + 60 * S  # the rest of the stop, then a start


def test_llama_swaps_ttl_sleeps_and_wakes_in_a_second() -> None:
    at = np.asarray([0, 30 * M], dtype=np.int64)
    replayed = replay(at, LLAMA_SWAP_SLEEP, end_us=31 * M)
    ledger = Ledger.of("a", FOOT, replayed.timeline, at, waits_us=replayed.waits_us)
    assert (ledger.sleeps, ledger.wakes, ledger.cold, ledger.waits_s) == (1, 1, 1, (1.0,))


def test_knative_goes_to_zero_after_ninety_seconds() -> None:
    replayed = replay(np.asarray([0], dtype=np.int64), KNATIVE, end_us=10 * M)
    assert replayed.timeline.phases()[1] == (90 * S + 1, Phase.GOING_DOWN)


def test_a_timeout_longer_than_the_span_is_always_on() -> None:
    at = np.asarray([0, M], dtype=np.int64)
    never = IdleTimeout(name="never", idle_us=60 * M, rest=Phase.STOPPED)
    replayed = replay(at, never, end_us=30 * M)
    assert replayed.timeline.phases() == [(0, Phase.AWAKE)]


@pytest.mark.parametrize(
    ("idle_us", "rest"),
    [pytest.param(-1, Phase.STOPPED, id="negative"), pytest.param(1, Phase.AWAKE, id="not-a-rest")],
)
def test_a_timeout_that_cannot_be_is_refused(idle_us: int, rest: Phase) -> None:
    with pytest.raises(ValueError, match="idle timeout"):
        IdleTimeout(name="x", idle_us=idle_us, rest=rest)


@given(
    gaps=st.lists(st.integers(min_value=0, max_value=4 * 3600), max_size=40),
    idle_s=st.integers(min_value=0, max_value=3600),
    sleeps=st.booleans(),
)
def test_exactly_the_requests_that_waited_were_cold_and_none_beats_the_oracle_warm(
    gaps: list[int], idle_s: int, sleeps: bool
) -> None:
    at = np.cumsum(np.asarray(gaps, dtype=np.int64) * S) if gaps else np.empty(0, np.int64)
    end = int(at[-1]) + S if len(at) else S
    policy = IdleTimeout(
        name="t", idle_us=idle_s * S, rest=Phase.ASLEEP_1 if sleeps else Phase.STOPPED
    )
    trip = SLEEP if sleeps else STOP  # the oracle's: the fixed times' own
    replayed = replay(at, policy, end_us=end)
    ledger = Ledger.of("a", FOOT, replayed.timeline, at, waits_us=replayed.waits_us)
    assert bool(np.all(replayed.waits_us >= 0))
    assert ledger.cold == int(np.count_nonzero(replayed.waits_us > 0))
    assert 0 <= ledger.freed_gib_h <= ledger.always_on_gib_h + 1e-9
    oracle = Ledger.of(
        "a", FOOT, oracle_timeline(at, FOOT, {policy.rest: trip}, start_us=0, end_us=end), at
    )
    if ledger.cold == 0:  # without a cold request, nothing frees more than the oracle
        assert ledger.freed_gib_h <= oracle.freed_gib_h + 1e-9
