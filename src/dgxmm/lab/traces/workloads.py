"""Synthetic request traces for the lab: seeded generators, and the standard workloads.

Every generator takes a model name, a span ``[start_us, start_us + weeks)`` and a seed, and
returns a ``Trace``; the same arguments give the identical trace (the seed starts one
``numpy.random.Generator``, drawn from in a fixed order). Arrivals are integer microseconds.
Local time is read through the zone's own rules (``dgxmm.jobs.cron.zones``, the rule every
schedule uses), so office hours in Berlin stay 08:00 to 18:00 local across a change of clocks.

- ``office_hours``: weekdays between two local times at a rate, a few requests outside them
  (at any hour of a working or weekend day), and none on the given holidays (local dates);
- ``diurnal``: a smooth day curve, every day (``Envelope``);
- ``bursty``: on and off periods of exponential length, a rate inside the on periods;
- ``rare``: a few requests a day at random times;
- ``tiled``: a short real trace played over weeks, its speed following an ``Envelope``.

``Envelope`` is a day's curve and a week's: the share of the peak rate at each instant, a
raised cosine from ``night`` (twelve hours from the peak) up to 1 at ``peak_hour`` local time,
times ``weekend`` on Saturdays and Sundays.

**Tiling keeps the burstiness by changing the speed, not by thinning.** The hour is played as
a film is: at envelope ``e`` and scale ``s`` one real second shows ``s * e`` seconds of the
hour, so a quiet night plays it slowly and a busy afternoon fast. Each copy of the hour starts
at a random point of it (a rotation, so copies differ with the seed) and plays to its end and
round. Any window of the result is the hour's own arrivals with its gaps stretched by one
factor, and a coefficient of variation does not change when every gap is stretched alike: the
bursts are kept. Thinning each copy's requests with probability ``e`` (the other way to follow
an envelope) keeps the count but not the bursts: independent thinning turns any process into a
Poisson one as the probability falls. On the real code service (CV of its gaps 13.2) thinning
to 10 % gives 4.4, and to 1 % gives 1.5; here it stays 13.2 at every speed.
The price: a day's count follows the envelope times the hour's own rate over the part of the
hour that day plays. A day that plays several copies of the hour comes within a few % of
the envelope; the standard ``azure-chat`` weekday plays about four minutes of it, so its days
differ as those minutes do (the chat hour's five-minute counts run from 951 to 2,243).

The real hour is the Azure LLM inference trace 2023 (``../shared/data/azure-llm-2023/`` from
the project's root, ``AZURE_DIR``), Creative Commons Attribution 4.0, by Pratyush Patel, Esha
Choukse, Chaojie Zhang, Aashaka Shah, Íñigo Goiri, Saeed Maleki and Ricardo Bianchini,
"Splitwise: Efficient generative LLM inference using phase splitting", ISCA 2024; copied
unchanged from Azure/AzurePublicDataset.

``STANDARD`` names the workloads a benchmark runs, each with its parameters and seed fixed, as
a function of ``(start_us, weeks)``; each names its model as itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import date, time
from pathlib import Path
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from dgxmm.clock import EARLIEST_US, LATEST_US
from dgxmm.errors import InvalidInput
from dgxmm.jobs.cron.zones import ZoneClock, resolve_zone, zone_clock
from dgxmm.lab.traces.readers import read_azure_trace
from dgxmm.lab.traces.trace import NO_TOKENS, Ints, Trace
from dgxmm.time_units import DAY_US, HOUR_US, MINUTE_US, SECOND_US, WEEK_US

__all__ = [
    "AZURE_CHAT",
    "AZURE_CODE",
    "AZURE_DIR",
    "BERLIN_HOLIDAYS_2026",
    "STANDARD",
    "Envelope",
    "Workload",
    "bursty",
    "diurnal",
    "office_hours",
    "rare",
    "tiled",
]

Floats = npt.NDArray[np.float64]
Workload = Callable[[int, float], Trace]  # (start_us, weeks) -> the trace

# src/dgxmm/lab/traces/workloads.py -> the project's root is four folders up; the data beside it.
AZURE_DIR = Path(__file__).resolve().parents[4].parent / "shared" / "data" / "azure-llm-2023"
AZURE_CHAT = AZURE_DIR / "AzureLLMInferenceTrace_conv.csv"
AZURE_CODE = AZURE_DIR / "AzureLLMInferenceTrace_code.csv"
# Berlin's public holidays in 2026 (New Year, Women's Day, Good Friday, Easter Monday, Labour
# Day, Ascension, Whit Monday, German Unity, Christmas).
BERLIN_HOLIDAYS_2026 = frozenset(
    date(2026, month, day)
    for month, day in (
        (1, 1), (3, 8), (4, 3), (4, 6), (5, 1), (5, 14), (5, 25), (10, 3), (12, 25), (12, 26),
    )
)  # fmt: skip

_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_THURSDAY = 3  # 1970-01-01 was a Thursday: weekday of epoch day d is (d + 3) % 7, Monday 0
_SATURDAY = 5
_DAY_S = DAY_US // SECOND_US
_MAX_REQUESTS = 50_000_000  # past this a generator's arrays would not fit in this machine


# The checks come first: the generators' default ``Envelope()`` runs one as they are defined.
def _rate(field: str, value: float) -> None:
    if not (math.isfinite(value) and value >= 0):
        raise InvalidInput(field, f"{value}: give a rate of 0 or more")


def _positive(field: str, value: float) -> float:
    if not (math.isfinite(value) and value > 0):
        raise InvalidInput(field, f"{value}: give a positive number")
    return value


def _share(field: str, value: float) -> None:
    if not (math.isfinite(value) and 0 < value <= 1):
        raise InvalidInput(field, f"{value}: give a share above 0 and at most 1")


@dataclass(frozen=True, slots=True, kw_only=True)
class Envelope:
    """The share of the peak rate at each instant: a day's curve times a week's."""

    zone: str = "UTC"  # the IANA zone whose local hours and weekdays the curve follows
    peak_hour: float = 14.0  # local hour of the day's highest rate (share 1)
    night: float = 0.1  # the share twelve hours from the peak, the day's lowest
    weekend: float = 1.0  # the factor on Saturdays and Sundays

    def __post_init__(self) -> None:
        resolve_zone(self.zone, "zone")
        if not (math.isfinite(self.peak_hour) and 0 <= self.peak_hour < 24):
            raise InvalidInput("peak_hour", f"{self.peak_hour}: give a local hour from 0 to 24")
        _share("night", self.night)
        _share("weekend", self.weekend)

    def at(self, at_us: Ints) -> Floats:
        """Return the share of the peak rate at each instant, in (0, 1]."""
        wall = at_us + _offsets_us(at_us, zone_clock(self.zone))
        hours = (wall % DAY_US) / HOUR_US
        rise = (1 + np.cos(2 * np.pi * (hours - self.peak_hour) / 24)) / 2
        weekday = (wall // DAY_US + _THURSDAY) % 7
        factor = np.where(weekday >= _SATURDAY, self.weekend, 1.0)
        share: Floats = (self.night + (1 - self.night) * rise) * factor
        return share


def office_hours(
    model: str,
    *,
    start_us: int,
    weeks: float,
    seed: int,
    zone: str = "Europe/Berlin",
    opens: time = time(8),
    closes: time = time(18),
    per_hour: float = 20.0,
    outside_per_day: float = 2.0,
    holidays: Collection[date] = (),
    weekdays: Collection[int] = range(5),
) -> Trace:
    """Generate weekday office-hours traffic in a zone, a few requests outside, none on holidays.

    ``weekdays`` are ``date.weekday()`` numbers (Monday 0); ``outside_per_day`` is the mean
    count outside office hours on each day that is not a holiday, at a uniform time of them.
    """
    _check_model(model)
    end_us = _span_end(start_us, weeks)
    clock = zone_clock(resolve_zone(zone, "zone"))
    _rate("per_hour", per_hour)
    _rate("outside_per_day", outside_per_day)
    opens_s, closes_s = _seconds_of(opens, "opens"), _seconds_of(closes, "closes")
    if opens_s >= closes_s:
        raise InvalidInput("closes", f"{closes.isoformat()} is not after opens {opens.isoformat()}")
    working = set(weekdays)
    if not working <= set(range(7)):
        raise InvalidInput("weekdays", f"{sorted(working)}: give numbers 0 (Monday) to 6")
    off = {day.toordinal() - _EPOCH_ORDINAL for day in holidays}
    rng = np.random.default_rng(seed)
    pieces: list[Ints] = []
    first = clock.wall(start_us // SECOND_US) // _DAY_S
    last = clock.wall((end_us - 1) // SECOND_US) // _DAY_S
    for day in range(first, last + 1):
        if day in off:
            continue
        midnight, next_midnight = _local_us(clock, day, 0), _local_us(clock, day + 1, 0)
        if (day + _THURSDAY) % 7 in working:
            open_us, close_us = _local_us(clock, day, opens_s), _local_us(clock, day, closes_s)
            inside = rng.poisson(per_hour * (close_us - open_us) / HOUR_US)
            pieces.append(rng.integers(open_us, close_us, size=inside, dtype=np.int64))
            closed = [(midnight, open_us), (close_us, next_midnight)]
        else:
            closed = [(midnight, next_midnight)]
        pieces.append(_uniform_in(rng, closed, int(rng.poisson(outside_per_day))))
    return _single(model, _within(pieces, start_us, end_us))


def diurnal(
    model: str,
    *,
    start_us: int,
    weeks: float,
    seed: int,
    peak_per_hour: float = 30.0,
    envelope: Envelope = Envelope(),  # a frozen value: safe to share
) -> Trace:
    """Generate traffic whose rate follows a smooth day curve, every day."""
    _check_model(model)
    end_us = _span_end(start_us, weeks)
    _rate("peak_per_hour", peak_per_hour)
    rng = np.random.default_rng(seed)
    # A Poisson process at the peak rate, each request kept with the envelope's share: the
    # kept ones are a Poisson process whose rate is the envelope (thinning, Lewis & Shedler).
    count = _count(rng, peak_per_hour * (end_us - start_us) / HOUR_US)
    candidates = np.sort(rng.integers(start_us, end_us, size=count, dtype=np.int64))
    kept = candidates[rng.random(count) < envelope.at(candidates)]
    return _single(model, kept)


def bursty(
    model: str,
    *,
    start_us: int,
    weeks: float,
    seed: int,
    on_minutes: float = 15.0,
    off_minutes: float = 180.0,
    per_minute: float = 2.0,
) -> Trace:
    """Generate on/off traffic: exponential on and off periods, a Poisson rate while on."""
    _check_model(model)
    end_us = _span_end(start_us, weeks)
    mean_on, mean_off = _positive("on_minutes", on_minutes), _positive("off_minutes", off_minutes)
    _rate("per_minute", per_minute)
    span = end_us - start_us
    rng = np.random.default_rng(seed)
    # The state at the start is drawn with its long-run odds; an exponential period has no
    # memory, so the first one's remainder is as long as any: the process is stationary.
    starts_on = bool(rng.random() < mean_on / (mean_on + mean_off))
    lengths: list[Floats] = []
    covered = 0.0
    while covered < span:
        pairs = int(span / ((mean_on + mean_off) * MINUTE_US)) + 16
        on = rng.exponential(mean_on * MINUTE_US, size=pairs)
        off = rng.exponential(mean_off * MINUTE_US, size=pairs)
        both = np.column_stack((on, off) if starts_on else (off, on)).ravel()
        lengths.append(both)
        covered += float(both.sum())
    length = np.concatenate(lengths)
    begin = start_us + np.concatenate(([0.0], np.cumsum(length)[:-1]))
    is_on = np.arange(len(length)) % 2 == (0 if starts_on else 1)
    on_begin, on_length = begin[is_on & (begin < end_us)], length[is_on & (begin < end_us)]
    counts = rng.poisson(per_minute * on_length / MINUTE_US)
    if int(counts.sum()) > _MAX_REQUESTS:
        raise InvalidInput("per_minute", f"{per_minute}: more than {_MAX_REQUESTS} requests")
    offsets = rng.random(int(counts.sum())) * np.repeat(on_length, counts)
    arrivals = (np.repeat(on_begin, counts) + offsets).astype(np.int64)
    return _single(model, _within([arrivals], start_us, end_us))


def rare(model: str, *, start_us: int, weeks: float, seed: int, per_day: float = 3.0) -> Trace:
    """Generate a rarely used model's traffic: a few requests a day at random times."""
    _check_model(model)
    end_us = _span_end(start_us, weeks)
    _rate("per_day", per_day)
    rng = np.random.default_rng(seed)
    count = _count(rng, per_day * (end_us - start_us) / DAY_US)
    return _single(model, np.sort(rng.integers(start_us, end_us, size=count, dtype=np.int64)))


def tiled(
    source: Trace,
    model: str,
    *,
    start_us: int,
    weeks: float,
    seed: int,
    scale: float = 1.0,
    envelope: Envelope = Envelope(),  # a frozen value: safe to share
    window_us: tuple[int, int] | None = None,
) -> Trace:
    """Play a short trace over weeks at a speed following an envelope, keeping its bursts.

    ``window_us`` is the stretch of time the source covers, played round; by default it runs
    from the first arrival to one mean gap after the last, so that the seam between the end
    and the start is a gap like any other. At the envelope's peak the source plays at
    ``scale`` times its own speed: the peak rate is ``scale`` times the source's. The source's
    token counts go with its requests; every request is for ``model``.
    """
    _check_model(model)
    end_us = _span_end(start_us, weeks)
    _positive("scale", scale)
    if not len(source):
        raise InvalidInput("source", "the trace to tile has no request")
    first, last = source.span_us
    # Not the files' nominal hour (18:15 to 19:15): the chat file's requests run from
    # 18:15:46 to 19:14:08, and a service at 5 requests a second did not pause 98 s at each
    # seam; the window is where the arrivals are.
    origin, until = window_us or (first, last + max(1, (last - first) // max(1, len(source) - 1)))
    if not origin <= first <= last < until:
        raise InvalidInput(
            "window_us", f"({origin}, {until}) does not hold the source's arrivals {first}..{last}"
        )
    period = until - origin
    # The speed per minute of the span; played time is its running sum (in source µs).
    edges = np.append(np.arange(start_us, end_us, MINUTE_US, dtype=np.int64), end_us)
    widths = np.diff(edges)
    speed = scale * envelope.at(edges[:-1] + widths // 2)
    played = np.concatenate(([0.0], np.cumsum(speed * widths)))
    copies = math.ceil(played[-1] / period)
    if copies * len(source) > _MAX_REQUESTS:
        raise InvalidInput("scale", f"{scale}: more than {_MAX_REQUESTS} requests")
    rng = np.random.default_rng(seed)
    relative = source.at_us - origin
    at_played: list[Ints] = []
    picked: list[Ints] = []
    for copy in range(copies):
        rotated = (relative + rng.integers(0, period)) % period
        order = np.argsort(rotated, kind="stable")
        at_played.append(copy * period + rotated[order])
        picked.append(order)
    played_us = np.concatenate(at_played)
    which = np.concatenate(picked)
    inside = played_us < played[-1]
    # Played time back to real time: the running sum is increasing (the speed is never 0).
    real = np.interp(played_us[inside], played, (edges - start_us).astype(np.float64))
    at_us = np.minimum(start_us + np.rint(real).astype(np.int64), end_us - 1)
    which = which[inside]
    return Trace(
        models=(model,),
        at_us=at_us,
        model=np.zeros(len(at_us), dtype=np.int64),
        input_tokens=source.input_tokens[which],
        output_tokens=source.output_tokens[which],
    )


def _azure(path: Path, name: str, seed: int, scale: float, weekend: float) -> Workload:
    envelope = Envelope(zone="America/Los_Angeles", peak_hour=13.0, night=0.1, weekend=weekend)

    def workload(start_us: int, weeks: float) -> Trace:
        return tiled(
            read_azure_trace(path, name),
            name,
            start_us=start_us,
            weeks=weeks,
            seed=seed,
            scale=scale,
            envelope=envelope,
        )

    return workload


def _office(start_us: int, weeks: float) -> Trace:
    return office_hours(
        "office-hours",
        start_us=start_us,
        weeks=weeks,
        seed=2401,
        zone="Europe/Berlin",
        per_hour=20.0,
        outside_per_day=2.0,
        holidays=BERLIN_HOLIDAYS_2026,
    )


def _diurnal(start_us: int, weeks: float) -> Trace:
    envelope = Envelope(zone="America/New_York", peak_hour=15.0, night=0.05)
    return diurnal(
        "diurnal", start_us=start_us, weeks=weeks, seed=2402, peak_per_hour=30.0, envelope=envelope
    )


def _bursty(start_us: int, weeks: float) -> Trace:
    return bursty(
        "bursty",
        start_us=start_us,
        weeks=weeks,
        seed=2403,
        on_minutes=15.0,
        off_minutes=180.0,
        per_minute=2.0,
    )


def _rare(start_us: int, weeks: float) -> Trace:
    return rare("rare", start_us=start_us, weeks=weeks, seed=2404, per_day=3.0)


# Peak rates: office hours 20 an hour, diurnal 30, bursty 120 inside a burst, rare 3 a day;
# the chat hour (19,366 requests) at 1/200 of its speed peaks near 97 an hour, the code hour
# (8,819) at 1/100 near 88.
STANDARD: Mapping[str, Workload] = MappingProxyType(
    {
        "office-hours": _office,
        "diurnal": _diurnal,
        "bursty": _bursty,
        "rare": _rare,
        "azure-chat": _azure(AZURE_CHAT, "azure-chat", seed=2405, scale=0.005, weekend=0.4),
        "azure-code": _azure(AZURE_CODE, "azure-code", seed=2406, scale=0.01, weekend=0.25),
    }
)


def _offsets_us(at_us: Ints, clock: ZoneClock) -> Ints:
    """Return the zone's UTC offset at each instant, in microseconds."""
    if not len(at_us):
        return np.zeros(0, dtype=np.int64)
    low = int(at_us.min()) // SECOND_US
    high = int(at_us.max()) // SECOND_US
    # Offsets sampled hourly, each change found to the second by bisection (zones change
    # at most once in an hour); then one sorted search for all the instants.
    changes: list[int] = []
    offsets = [clock.offset_at(low)]
    before = low
    for sample in range(low + 3600, high + 3600, 3600):
        offset = clock.offset_at(sample)
        if offset != offsets[-1]:
            a, b = before, sample  # offset_at(a) is the old offset, offset_at(b) the new
            while b - a > 1:
                middle = (a + b) // 2
                a, b = (middle, b) if clock.offset_at(middle) == offsets[-1] else (a, middle)
            changes.append(b)
            offsets.append(offset)
        before = sample
    where = np.searchsorted(np.asarray(changes, dtype=np.int64) * SECOND_US, at_us, side="right")
    found: Ints = np.asarray(offsets, dtype=np.int64)[where] * SECOND_US
    return found


def _local_us(clock: ZoneClock, day: int, seconds: int) -> int:
    """Return the instant of a local wall time (epoch day, seconds into it), by dgxmm's rule."""
    return clock.instant(day * _DAY_S + seconds)[0] * SECOND_US


def _uniform_in(rng: np.random.Generator, stretches: list[tuple[int, int]], count: int) -> Ints:
    """Return ``count`` instants uniform over the union of half-open stretches."""
    lengths = np.asarray([b - a for a, b in stretches], dtype=np.int64)
    if not count or not int(lengths.sum()):
        return np.zeros(0, dtype=np.int64)
    position = rng.integers(0, int(lengths.sum()), size=count, dtype=np.int64)
    bounds = np.cumsum(lengths)
    k = np.searchsorted(bounds, position, side="right")
    starts = np.asarray([a for a, _ in stretches], dtype=np.int64)
    placed: Ints = starts[k] + position - (bounds[k] - lengths[k])
    return placed


def _within(pieces: list[Ints], start_us: int, end_us: int) -> Ints:
    arrivals = np.sort(np.concatenate(pieces)) if pieces else np.zeros(0, dtype=np.int64)
    kept: Ints = arrivals[(arrivals >= start_us) & (arrivals < end_us)]
    return kept


def _check_model(model: str) -> None:
    if not isinstance(model, str) or not model.strip():
        raise InvalidInput("model", f"{model!r}: give the model's name")


def _single(model: str, arrivals: Ints) -> Trace:
    count = len(arrivals)
    return Trace(
        models=(model,),
        at_us=arrivals.astype(np.int64),
        model=np.zeros(count, dtype=np.int64),
        input_tokens=np.full(count, NO_TOKENS, dtype=np.int64),
        output_tokens=np.full(count, NO_TOKENS, dtype=np.int64),
    )


def _span_end(start_us: int, weeks: float) -> int:
    if not (math.isfinite(weeks) and weeks > 0):
        raise InvalidInput("weeks", f"{weeks}: give a positive number of weeks")
    end_us = start_us + round(weeks * WEEK_US)
    if not EARLIEST_US <= start_us < end_us <= LATEST_US:
        raise InvalidInput("start_us", f"{start_us} and {weeks} weeks: outside the years 1 to 9999")
    return end_us


def _count(rng: np.random.Generator, mean: float) -> int:
    if mean > _MAX_REQUESTS:
        raise InvalidInput("rate", f"{mean:.0f} requests expected: more than {_MAX_REQUESTS}")
    return int(rng.poisson(mean))


def _seconds_of(moment: time, field: str) -> int:
    if moment.tzinfo is not None:
        raise InvalidInput(field, f"{moment.isoformat()}: give a local time without a zone")
    return moment.hour * 3600 + moment.minute * 60 + moment.second
