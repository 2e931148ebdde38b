"""The simulated server's durations: draws, medians, the published defaults, the file format."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from dgxmm.errors import DefinitionError
from dgxmm.lab import (
    Duration,
    Empirical,
    Fixed,
    LogNormal,
    Phase,
    RoundTrip,
    ServerTimes,
    Uniform,
    duration_from_json,
)
from dgxmm.time_units import DAY_US, SECOND_US

S = SECOND_US
STEPS = [f.name for f in fields(ServerTimes)]
KINDS: list[Duration] = [
    Fixed(value_us=2 * S),
    Uniform(low_us=1 * S, high_us=3 * S),
    LogNormal.of_p90(800_000, 4 * S),
    Empirical(values_us=(300_000, 400_000, 2_100_000)),
]
IDS = ["fixed", "uniform", "lognormal", "empirical"]


@pytest.mark.parametrize("duration", KINDS, ids=IDS)
def test_it_draws_the_same_durations_from_the_same_seed(duration: Duration) -> None:
    first = duration.draw(np.random.default_rng(7), 1000)
    again = duration.draw(np.random.default_rng(7), 1000)
    assert first.dtype == np.int64
    assert len(first) == 1000
    assert np.array_equal(first, again)
    assert int(first.min()) >= 0


@pytest.mark.parametrize("duration", KINDS[1:], ids=IDS[1:])
def test_it_draws_other_durations_from_another_seed(duration: Duration) -> None:
    first = duration.draw(np.random.default_rng(7), 1000)
    other = duration.draw(np.random.default_rng(8), 1000)
    assert not np.array_equal(first, other)


@pytest.mark.parametrize(
    ("duration", "median_us"),
    [
        pytest.param(Fixed(value_us=2 * S), 2 * S, id="fixed"),
        pytest.param(Uniform(low_us=1 * S, high_us=4 * S), 2_500_000, id="uniform-middle"),
        pytest.param(LogNormal(median_us=800_000, sigma=1.0), 800_000, id="lognormal"),
        pytest.param(Empirical(values_us=(5, 1, 100)), 5, id="empirical-odd"),
        pytest.param(Empirical(values_us=(1, 2, 4, 100)), 3, id="empirical-even"),
    ],
)
def test_it_gives_the_median(duration: Duration, median_us: int) -> None:
    assert duration.median_us == median_us


@pytest.mark.parametrize("duration", KINDS, ids=IDS)
def test_its_draws_have_about_the_median_it_gives(duration: Duration) -> None:
    drawn = duration.draw(np.random.default_rng(11), 10_000)
    spread = max(duration.median_us * 0.05, 1)
    # An empirical sample's median is one of its values; the draws' median may be a neighbour.
    if isinstance(duration, Empirical):
        assert int(np.median(drawn)) in duration.values_us
    else:
        assert abs(float(np.median(drawn)) - duration.median_us) <= spread


def test_a_lognormal_draws_its_p90_within_tolerance() -> None:
    duration = LogNormal.of_p90(800_000, 4 * S)
    assert duration.p90_us == pytest.approx(4 * S, abs=1)
    drawn = duration.draw(np.random.default_rng(2024), 10_000)
    # 10,000 draws: the sample's 90th percentile is within a few percent of the true one
    # (its standard error is about 2 % here); with this seed well within 5 %.
    assert float(np.quantile(drawn, 0.9)) == pytest.approx(4 * S, rel=0.05)
    assert float(np.mean(drawn <= 4 * S)) == pytest.approx(0.9, abs=0.01)


def test_a_uniform_draws_both_ends_and_nothing_outside() -> None:
    drawn = Uniform(low_us=10, high_us=12).draw(np.random.default_rng(1), 1000)
    assert set(drawn.tolist()) == {10, 11, 12}


def test_a_lognormal_with_a_wild_spread_never_draws_more_than_a_day() -> None:
    drawn = LogNormal(median_us=3600 * S, sigma=20.0).draw(np.random.default_rng(3), 10_000)
    assert int(drawn.max()) == DAY_US
    assert int(drawn.min()) >= 0


def test_the_defaults_are_vllms_published_figures() -> None:
    times = ServerTimes()
    medians = {step: getattr(times, step).median_us / S for step in STEPS}
    assert medians == {
        "start": 48.0,
        "stop": 3.0,
        "sleep_1": 1.0,
        "sleep_2": 0.3,
        "wake_1": 0.8,
        "wake_2": 2.6,
    }
    assert isinstance(times.start, LogNormal)
    assert times.start.p90_us == pytest.approx(100 * S, abs=1)
    assert isinstance(times.wake_1, LogNormal)
    assert times.wake_1.p90_us == pytest.approx(4 * S, abs=1)


def test_its_round_trips_are_the_medians_the_oracle_takes() -> None:
    times = ServerTimes(wake_1=Fixed(value_us=5 * S), stop=Uniform(low_us=0, high_us=2 * S))
    assert times.round_trips() == {
        Phase.ASLEEP_1: RoundTrip(down_us=1 * S, up_us=5 * S),
        Phase.ASLEEP_2: RoundTrip(down_us=300_000, up_us=2_600_000),
        Phase.STOPPED: RoundTrip(down_us=1 * S, up_us=48 * S),
    }


@pytest.mark.parametrize(
    ("written", "read"),
    [
        pytest.param(2.5, Fixed(value_us=2_500_000), id="bare-number"),
        pytest.param(0, Fixed(value_us=0), id="zero"),
        pytest.param({"kind": "fixed", "value_s": 1}, Fixed(value_us=S), id="fixed"),
        pytest.param(
            {"kind": "uniform", "low_s": 1, "high_s": 3},
            Uniform(low_us=S, high_us=3 * S),
            id="uniform",
        ),
        pytest.param(
            {"kind": "lognormal", "median_s": 0.8, "p90_s": 4},
            LogNormal.of_p90(800_000, 4 * S),
            id="lognormal-p90",
        ),
        pytest.param(
            {"kind": "lognormal", "median_s": 2, "sigma": 0.5},
            LogNormal(median_us=2 * S, sigma=0.5),
            id="lognormal-sigma",
        ),
        pytest.param(
            {"kind": "empirical", "values_s": [0.5, 1]},
            Empirical(values_us=(500_000, S)),
            id="empirical",
        ),
    ],
)
def test_it_reads_a_duration_as_a_fleet_file_writes_it(written: object, read: Duration) -> None:
    assert duration_from_json(written, "d") == read
    assert duration_from_json(read.to_json(), "d") == read


@pytest.mark.parametrize(
    ("written", "field"),
    [
        pytest.param(-1, "d", id="negative"),
        pytest.param(86_401, "d", id="over-a-day"),
        pytest.param(10**400, "d", id="huge-int"),
        pytest.param(float("nan"), "d", id="nan"),
        pytest.param(True, "d", id="bool"),
        pytest.param("3s", "d", id="text"),
        pytest.param([1, 2], "d", id="list"),
        pytest.param({"kind": "gamma"}, "d.kind", id="unknown-kind"),
        pytest.param({"value_s": 1}, "d.kind", id="no-kind"),
        pytest.param({"kind": "fixed"}, "d.value_s", id="fixed-without-value"),
        pytest.param({"kind": "fixed", "value_s": 1, "p90_s": 2}, "d.p90_s", id="foreign-key"),
        pytest.param({"kind": "uniform", "low_s": 3, "high_s": 1}, "d.high_s", id="upside-down"),
        pytest.param({"kind": "lognormal", "median_s": 0, "sigma": 1}, "d.median_s", id="ln-0"),
        pytest.param({"kind": "lognormal", "median_s": 1}, "d", id="ln-no-spread"),
        pytest.param(
            {"kind": "lognormal", "median_s": 1, "p90_s": 2, "sigma": 1}, "d", id="ln-both"
        ),
        pytest.param({"kind": "lognormal", "median_s": 2, "p90_s": 1}, "d.p90_s", id="ln-p90"),
        pytest.param({"kind": "lognormal", "median_s": 2, "sigma": -1}, "d.sigma", id="ln-sigma"),
        pytest.param({"kind": "empirical", "values_s": []}, "d.values_s", id="empty-sample"),
        pytest.param({"kind": "empirical", "values_s": [1, -2]}, "d.values_s[1]", id="sample"),
    ],
)
def test_it_refuses_a_duration_naming_the_field(written: object, field: str) -> None:
    with pytest.raises(DefinitionError) as refused:
        duration_from_json(written, "d")
    assert refused.value.field == field


def test_it_overrides_some_steps_and_keeps_the_defaults_of_the_others() -> None:
    times = ServerTimes().overridden({"start": 3.2, "wake_2": {"kind": "fixed", "value_s": 1}}, "x")
    assert times.start == Fixed(value_us=3_200_000)
    assert times.wake_2 == Fixed(value_us=S)
    assert times.wake_1 == ServerTimes().wake_1
    assert ServerTimes().overridden(times.to_json(), "x") == times


def test_it_refuses_an_override_of_a_step_it_does_not_have() -> None:
    with pytest.raises(DefinitionError) as refused:
        ServerTimes().overridden({"reload": 3}, "deployments[0].durations")
    assert refused.value.field == "deployments[0].durations.reload"
    assert "wake_1" in refused.value.message
