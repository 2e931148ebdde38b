"""A metrics sample read from vLLM's names, and the deltas the per-minute rollup is built from."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import at

from dgxmm.errors import InvalidInput
from dgxmm.fleet import MetricsSample, SleepState, delta_between, sample_from_text

T0 = at("2026-11-02T09:00:00+00:00")
T1 = at("2026-11-02T09:01:00+00:00")


def page(
    running: str = "0.0",
    waiting: str = "0.0",
    stop: str = "0.0",
    abort: str = "0.0",
    latency_sum: str = "0.0",
    latency_count: str = "0.0",
    sleep: str | None = "awake",
    engines: tuple[str, ...] = ("0",),
) -> str:
    """Return a /metrics page shaped like vLLM's, the same values on every engine."""
    lines = []
    for engine in engines:
        base = f'model_name="m",engine="{engine}"'
        lines += [
            f"vllm:num_requests_running{{{base}}} {running}",
            f"vllm:num_requests_waiting{{{base}}} {waiting}",
            f'vllm:request_success_total{{{base},finished_reason="stop"}} {stop}',
            f'vllm:request_success_total{{{base},finished_reason="abort"}} {abort}',
            f'vllm:request_success_created{{{base},finished_reason="stop"}} 1.7e9',
            f'vllm:e2e_request_latency_seconds_bucket{{{base},le="+Inf"}} {latency_count}',
            f"vllm:e2e_request_latency_seconds_sum{{{base}}} {latency_sum}",
            f"vllm:e2e_request_latency_seconds_count{{{base}}} {latency_count}",
        ]
        if sleep is not None:
            for state in ("awake", "weights_offloaded", "discard_all"):
                on = "1.0" if state == sleep else "0.0"
                lines.append(f'vllm:engine_sleep_state{{{base},sleep_state="{state}"}} {on}')
    return "\n".join(lines) + "\n"


def test_it_reads_a_sample() -> None:
    text = page("2.0", "1.0", "7.0", "1.0", "12.5", "8.0", "awake")
    sample = sample_from_text(text, taken_at_us=T0)
    assert sample == MetricsSample(
        taken_at_us=T0,
        requests_running=2,
        requests_waiting=1,
        requests_finished_total=8,  # every finish reason counts as activity
        latency_sum_s=12.5,
        latency_count=8,
        sleep_state=SleepState.AWAKE,
    )
    assert not sample.is_idle


def test_it_sums_the_engines_of_a_data_parallel_server() -> None:
    sample = sample_from_text(page("2.0", "3.0", "5.0", engines=("0", "1")), taken_at_us=T0)
    assert (sample.requests_running, sample.requests_waiting) == (4, 6)
    assert sample.requests_finished_total == 10


@pytest.mark.parametrize(
    ("sleep", "state"),
    [
        pytest.param("awake", SleepState.AWAKE, id="awake"),
        pytest.param("weights_offloaded", SleepState.WEIGHTS_OFFLOADED, id="level-1"),
        pytest.param("discard_all", SleepState.DISCARD_ALL, id="level-2"),
        pytest.param("none-of-them", SleepState.PAUSED, id="level-0"),
        pytest.param(None, None, id="older-vllm-without-the-gauge"),
    ],
)
def test_it_reads_the_sleep_state(sleep: str | None, state: SleepState | None) -> None:
    sample = sample_from_text(page(sleep=sleep), taken_at_us=T0)
    assert sample.sleep_state is state
    assert sample.is_idle


@pytest.mark.parametrize(
    ("text", "field"),
    [
        pytest.param("process_open_fds 3\n", "vllm:num_requests_running", id="not-vllm"),
        pytest.param(
            page().replace("vllm:num_requests_waiting", "other"),
            "vllm:num_requests_waiting",
            id="no-waiting",
        ),
        pytest.param(page(running="NaN"), "vllm:num_requests_running", id="nan-gauge"),
        pytest.param(page(stop="-1.0"), "vllm:request_success_total", id="negative-counter"),
        pytest.param(
            page(latency_sum="+Inf"), "vllm:e2e_request_latency_seconds_sum", id="inf-sum"
        ),
    ],
)
def test_it_refuses_a_page_it_cannot_read_as_a_sample(text: str, field: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        sample_from_text(text, taken_at_us=T0)
    assert refused.value.field == field


def sample(at_us: int, finished: int, latency_sum: float, latency_count: int) -> MetricsSample:
    return MetricsSample(
        taken_at_us=at_us,
        requests_running=0,
        requests_waiting=0,
        requests_finished_total=finished,
        latency_sum_s=latency_sum,
        latency_count=latency_count,
        sleep_state=SleepState.AWAKE,
    )


def test_a_delta_is_what_happened_in_between() -> None:
    delta = delta_between(sample(T0, 10, 20.0, 10), sample(T1, 16, 23.0, 16))
    assert (delta.start_us, delta.end_us) == (T0, T1)
    assert delta.requests_finished == 6
    assert delta.latency_count == 6
    assert delta.latency_sum_s == pytest.approx(3.0)
    assert delta.mean_latency_s == pytest.approx(0.5)
    assert not delta.counters_reset


def test_a_quiet_minute_has_no_mean_latency() -> None:
    delta = delta_between(sample(T0, 10, 20.0, 10), sample(T1, 10, 20.0, 10))
    assert delta.requests_finished == 0
    assert delta.mean_latency_s is None


def test_a_counter_that_went_down_means_a_restart() -> None:
    # The server restarted and has served 3 requests since: those 3 are the delta.
    delta = delta_between(sample(T0, 500, 900.0, 500), sample(T1, 3, 1.5, 3))
    assert delta.counters_reset
    assert delta.requests_finished == 3
    assert delta.latency_count == 3
    assert delta.mean_latency_s == pytest.approx(0.5)


def test_samples_out_of_order_are_refused() -> None:
    with pytest.raises(InvalidInput, match="taken before"):
        delta_between(sample(T1, 0, 0.0, 0), sample(T0, 0, 0.0, 0))


counters = st.tuples(
    st.integers(0, 10**9), st.floats(0, 1e9, allow_nan=False), st.integers(0, 10**9)
)


@given(counters, counters)
def test_a_delta_is_never_negative(
    first: tuple[int, float, int], second: tuple[int, float, int]
) -> None:
    delta = delta_between(sample(T0, *first), sample(T1, *second))
    assert delta.requests_finished >= 0
    assert delta.latency_count >= 0
    assert delta.latency_sum_s >= 0
    if not delta.counters_reset:
        assert delta.requests_finished == second[0] - first[0]
