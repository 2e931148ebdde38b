"""The lab's workloads: seeded generators, office hours in local time, and the tiled Azure hour.

The tiled hour is the Azure LLM inference trace 2023 (``../shared/data/azure-llm-2023/``,
Creative Commons Attribution 4.0), from Patel, Choukse, Zhang, Shah, Goiri, Maleki and
Bianchini, "Splitwise: Efficient generative LLM inference using phase splitting", ISCA 2024.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from functools import partial
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from lab.labkit import azure
from support import at

from dgxmm.errors import InvalidInput
from dgxmm.lab import (
    AZURE_CHAT,
    AZURE_CODE,
    NO_TOKENS,
    STANDARD,
    Envelope,
    Trace,
    bursty,
    diurnal,
    office_hours,
    rare,
    tiled,
)
from dgxmm.lab.traces.trace import Ints
from dgxmm.time_units import DAY_US, HOUR_US, WEEK_US

BERLIN = ZoneInfo("Europe/Berlin")
MONDAY = at("2026-11-02T00:00:00+00:00")  # no change of clocks near, in UTC or Berlin
Generator = Callable[..., Trace]


def chat_hour() -> Trace:
    return azure(AZURE_CHAT, "chat")


def cv(arrivals: Ints) -> float:
    gaps = np.diff(arrivals).astype(np.float64)
    return float(gaps.std() / gaps.mean())


GENERATORS = [
    pytest.param(office_hours, id="office-hours"),
    pytest.param(diurnal, id="diurnal"),
    pytest.param(bursty, id="bursty"),
    pytest.param(partial(rare, per_day=20.0), id="rare"),
    pytest.param(
        lambda *args, **options: tiled(azure(AZURE_CODE, "code"), *args, scale=0.01, **options),
        id="tiled",
    ),
]


@pytest.mark.parametrize("generate", GENERATORS)
def test_the_same_seed_gives_the_same_trace_and_another_seed_another(generate: Generator) -> None:
    first = generate("m", start_us=MONDAY, weeks=1, seed=7)
    again = generate("m", start_us=MONDAY, weeks=1, seed=7)
    other = generate("m", start_us=MONDAY, weeks=1, seed=8)

    assert len(first) > 50
    assert first.at_us.tolist() == again.at_us.tolist()
    assert first.input_tokens.tolist() == again.input_tokens.tolist()
    assert first.at_us.tolist() != other.at_us.tolist()
    assert first.models == ("m",)
    assert MONDAY <= first.span_us[0] <= first.span_us[1] < MONDAY + WEEK_US


def test_the_standard_workloads_are_named_and_fixed() -> None:
    assert set(STANDARD) == {
        "office-hours",
        "diurnal",
        "bursty",
        "rare",
        "azure-chat",
        "azure-code",
    }
    for name, workload in STANDARD.items():
        if name.startswith("azure-"):
            azure(AZURE_CHAT, "skip without the data")  # the real hour must be there
        trace = workload(MONDAY, 1)
        assert trace.models == (name,), name
        assert len(trace) > 10, name
        assert MONDAY <= trace.span_us[0] <= trace.span_us[1] < MONDAY + WEEK_US, name
        assert workload(MONDAY, 1).at_us.tolist() == trace.at_us.tolist(), name


def local(trace: Trace) -> list[datetime]:
    return [datetime.fromtimestamp(int(t) / 1e6, BERLIN) for t in trace.at_us]


def test_office_hours_fall_on_working_days_between_eight_and_six_local() -> None:
    # Three weeks around Easter 2026 in Berlin: Good Friday (3 April) and Easter Monday (6).
    holidays = {date(2026, 4, 3), date(2026, 4, 6)}
    trace = office_hours(
        "m",
        start_us=at("2026-03-23T00:00:00+01:00"),
        weeks=3,
        seed=1,
        per_hour=30.0,
        outside_per_day=0.0,
        holidays=holidays,
    )

    moments = local(trace)
    days = {moment.date() for moment in moments}
    assert len(trace) > 3000
    assert all(moment.weekday() < 5 for moment in moments)
    assert all(8 <= moment.hour < 18 for moment in moments)
    assert not days & holidays
    assert len(days) == 13  # 15 weekdays less the two holidays


def test_office_hours_allow_a_few_requests_outside_but_none_on_a_holiday() -> None:
    holidays = {date(2026, 4, 3), date(2026, 4, 6)}
    trace = office_hours(
        "m",
        start_us=at("2026-03-23T00:00:00+01:00"),
        weeks=3,
        seed=1,
        per_hour=30.0,
        outside_per_day=2.0,
        holidays=holidays,
    )

    moments = local(trace)
    outside = [m for m in moments if m.weekday() >= 5 or not 8 <= m.hour < 18]
    assert 10 <= len(outside) <= 80  # about 2 a day over 19 days, never a flood
    assert not {m.date() for m in moments} & holidays


@pytest.mark.parametrize(
    ("friday_opens", "friday_closes", "monday_opens", "monday_closes"),
    [
        pytest.param(
            "2026-03-27T07:00:00+00:00",
            "2026-03-27T17:00:00+00:00",
            "2026-03-30T06:00:00+00:00",
            "2026-03-30T16:00:00+00:00",
            id="spring-forward-2026-03-29",
        ),
        pytest.param(
            "2026-10-23T06:00:00+00:00",
            "2026-10-23T16:00:00+00:00",
            "2026-10-26T07:00:00+00:00",
            "2026-10-26T17:00:00+00:00",
            id="fall-back-2026-10-25",
        ),
    ],
)
def test_office_hours_stay_eight_to_six_local_across_a_change_of_clocks(
    friday_opens: str, friday_closes: str, monday_opens: str, monday_closes: str
) -> None:
    trace = office_hours(
        "m",
        start_us=at(friday_opens) - 10 * HOUR_US,
        weeks=4 / 7,
        seed=3,
        per_hour=600.0,  # 10 a minute: the first and last of a day come within a minute
        outside_per_day=0.0,
    )

    for opens, closes in ((friday_opens, friday_closes), (monday_opens, monday_closes)):
        day = trace.at_us[
            (trace.at_us >= at(opens) - 4 * HOUR_US) & (trace.at_us < at(closes) + 4 * HOUR_US)
        ]
        assert at(opens) <= int(day[0]) < at(opens) + 60_000_000
        assert at(closes) - 60_000_000 < int(day[-1]) < at(closes)


def test_diurnal_traffic_follows_its_day_curve_every_day() -> None:
    envelope = Envelope(zone="UTC", peak_hour=14.0, night=0.1)
    trace = diurnal("m", start_us=MONDAY, weeks=1, seed=5, peak_per_hour=100.0, envelope=envelope)

    hour = (trace.at_us % DAY_US) // HOUR_US
    per_day = np.bincount((trace.at_us - MONDAY) // DAY_US, minlength=7)
    assert np.sum(hour == 14) / np.sum(hour == 2) > 5  # 1 against 0.1 and a little
    assert per_day.min() > 0.85 * per_day.mean()  # Saturday and Sunday too


def test_bursty_traffic_comes_in_bursts() -> None:
    trace = bursty("m", start_us=MONDAY, weeks=2, seed=2, on_minutes=10, off_minutes=120)

    # Poisson arrivals have a CV of 1; on/off ones far more.
    assert cv(trace.at_us) > 3


def test_rare_traffic_is_a_few_requests_a_day() -> None:
    trace = rare("m", start_us=MONDAY, weeks=4, seed=4, per_day=3.0)

    assert 60 <= len(trace) <= 110  # 84 expected
    assert trace.input_tokens.tolist() == [NO_TOKENS] * len(trace)


@pytest.mark.parametrize(
    "path", [pytest.param(AZURE_CHAT, id="chat"), pytest.param(AZURE_CODE, id="code")]
)
def test_tiling_keeps_the_real_hours_burstiness(path: Path) -> None:
    hour = azure(path, "azure")
    # A flat envelope plays the hour at one speed: the weeks' gaps are the hour's, stretched.
    flat = tiled(
        hour, "m", start_us=MONDAY, weeks=1, seed=1, scale=0.1, envelope=Envelope(night=1.0)
    )
    # A day's curve: in the two hours round its peak it plays at nearly one speed.
    curve = Envelope(zone="UTC", peak_hour=14.0, night=0.2, weekend=0.5)
    daily = tiled(hour, "m", start_us=MONDAY, weeks=1, seed=1, scale=0.5, envelope=curve)
    hour_of_day = (daily.at_us % DAY_US) // HOUR_US
    day = (daily.at_us - MONDAY) // DAY_US
    peaks = [daily.at_us[(day == d) & (hour_of_day >= 13) & (hour_of_day < 15)] for d in range(5)]
    peak_gaps = np.concatenate([np.diff(p) for p in peaks]).astype(np.float64)

    assert cv(flat.at_us) == pytest.approx(cv(hour.at_us), rel=0.02)
    assert float(peak_gaps.std() / peak_gaps.mean()) == pytest.approx(cv(hour.at_us), rel=0.05)


def test_tiled_counts_per_day_follow_the_envelope() -> None:
    hour = chat_hour()
    curve = Envelope(zone="UTC", peak_hour=14.0, night=0.2, weekend=0.5)
    trace = tiled(hour, "m", start_us=MONDAY, weeks=1, seed=2, scale=0.5, envelope=curve)

    first, last = hour.span_us
    per_hour = len(hour) / ((last - first) / HOUR_US)
    # A raised cosine from 0.2 to 1 averages 0.6 over a day; weekends count half.
    weekday = per_hour * 0.5 * 24 * 0.6
    expected = np.array([weekday] * 5 + [weekday / 2] * 2)
    per_day = np.bincount((trace.at_us - MONDAY) // DAY_US, minlength=7)
    assert per_day / expected == pytest.approx(np.ones(7), abs=0.05)
    # The tokens travel with their requests.
    assert set(trace.input_tokens.tolist()) <= set(hour.input_tokens.tolist())


@pytest.mark.parametrize(
    ("call", "field"),
    [
        pytest.param(lambda: rare("m", start_us=MONDAY, weeks=0, seed=1), "weeks", id="no-weeks"),
        pytest.param(
            lambda: rare("m", start_us=MONDAY, weeks=1, seed=1, per_day=-1),
            "per_day",
            id="negative-rate",
        ),
        pytest.param(
            lambda: rare(" ", start_us=MONDAY, weeks=1, seed=1), "model", id="blank-model"
        ),
        pytest.param(
            lambda: office_hours("m", start_us=MONDAY, weeks=1, seed=1, zone="Mars/Olympus"),
            "zone",
            id="unknown-zone",
        ),
        pytest.param(lambda: Envelope(night=0.0), "night", id="night-of-zero"),
        pytest.param(
            lambda: bursty("m", start_us=MONDAY, weeks=1, seed=1, on_minutes=float("nan")),
            "on_minutes",
            id="nan-period",
        ),
        pytest.param(
            lambda: tiled(chat_hour(), "m", start_us=MONDAY, weeks=1, seed=1, scale=0),
            "scale",
            id="no-speed",
        ),
    ],
)
def test_a_workload_refuses_a_wrong_parameter_naming_it(
    call: Callable[[], object], field: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        call()

    assert refused.value.field == field
