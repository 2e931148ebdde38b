"""What the priced policy reads in the product (issue 42): measured durations, and the
published figures it falls back to, held to the lab's."""

from __future__ import annotations

import pytest

from dgxmm.decider.idle import IdleStep
from dgxmm.decider.idle.pricing import PUBLISHED, measured
from dgxmm.lab.durations import ServerTimes
from dgxmm.lab.replay.priced import measured_duration
from dgxmm.lab.replay.server import PRODUCT_BOUNDS

S = 1_000_000


def test_the_published_figures_are_the_labs_defaults_cut_at_the_products_bounds() -> None:
    times, bounds = ServerTimes(), PRODUCT_BOUNDS
    sleep, up = bounds.sleep_timeout_us, bounds.startup_timeout_us
    labs = {
        (IdleStep.SLEEP, False): measured_duration(times.sleep_1, sleep),
        (IdleStep.DEEPEN, False): measured_duration(times.sleep_2, sleep),
        (IdleStep.STOP, False): measured_duration(times.stop, bounds.stop_grace_us),
        (IdleStep.SLEEP, True): measured_duration(times.wake_1, up),
        (IdleStep.DEEPEN, True): measured_duration(times.wake_2, up),
        (IdleStep.STOP, True): measured_duration(times.start, up),
    }
    assert labs == PUBLISHED


@pytest.mark.parametrize(
    ("samples", "expected"),
    [([], (7, 8)), ([2 * S, 2 * S], (2 * S, S)), ([S, 3 * S], (2 * S, round(1.25 * S)))],
    ids=["none-measured", "fixed-half-left", "spread-more-left"],
)
def test_measured_is_the_mean_and_the_time_a_request_that_meets_it_waits(
    samples: list[int], expected: tuple[int, int]
) -> None:
    assert measured(samples, (7, 8)) == expected


def test_a_sleep_that_timed_out_at_its_bound_raises_the_mean_and_the_wait_of_one_met() -> None:
    # Four sleeps of 2 s and one that timed out at its 300 s bound: leaving it out would
    # price the way down at 2 s; counted at its bound, the mean is 61.6 s, and a request
    # that meets a sleep waits what is left of the long one far more than half the mean.
    quick = [2 * S] * 4
    assert measured(quick, (7, 8)) == (2 * S, S)
    mean, left = measured([*quick, 300 * S], (7, 8))
    assert mean == round(61.6 * S)
    assert left == round((4 * 4 + 300 * 300) / 5 / (2 * 61.6) * S)
    assert left > mean  # the long tail: E[D^2] / 2E[D] past the mean
