"""One day of a replay as a picture: each policy's phases as bands, its requests as ticks.

The table of ``dgxmm lab replay`` says how much each policy freed and how many requests met a
cold model; the picture says *when*: which gaps a policy slept through, which requests met it
down, where a schedule and the traffic disagree. ``day_picture`` draws one deployment's day
as a self-contained SVG (no stylesheet, font or script from elsewhere, so the console can
show it inline or as an image without it borrowing or leaking styles; a ``viewBox``, so it
scales), one row per policy the comparison holds, in the comparison's order:

- a band per stretch of one phase, coloured by phase, whose ``<title>`` gives the phase and
  its local start and end, so a hover tells;
- under it two lanes of request ticks: warm above (the request met the deployment awake),
  cold below (any other phase: the ledger's definition, read from the same timeline at the
  arrival);
- beside it the policy, with the deployment's freed GiB-hours and cold requests from its
  ledger, over the whole replay as the table gives them.

The day is a local day in ``zone``, midnight to midnight: 23 or 25 hours when the clocks
change, with a gridline at every local hour (the repeated hour twice). The part of a day
outside the replay is drawn as "not replayed". ``choose_day`` picks the day (the replay's
first unless one is given) and refuses a day outside the replay; ``local_day_us`` gives a
day's bounds.

One deployment per picture, on purpose: each deployment's day is in its own zone (the
command line draws it in the deployment's ``time_zone``), and fifty days stacked make a
picture nobody reads. Call ``day_picture`` once per deployment wanted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from xml.sax.saxutils import escape
from zoneinfo import ZoneInfo

import numpy as np
import numpy.typing as npt

from dgxmm.clock import from_us
from dgxmm.errors import InvalidInput
from dgxmm.jobs import resolve_zone, zone_clock
from dgxmm.lab.compare import Comparison
from dgxmm.lab.ledger import Ledger, Phase, Timeline
from dgxmm.lab.traces.trace import Ints
from dgxmm.time_units import DAY_US, HOUR_US, MINUTE_US, SECOND_US

__all__ = ["choose_day", "day_picture", "local_day_us"]

_Bools = npt.NDArray[np.bool_]

_PHASES = tuple(Phase)
_AWAKE = _PHASES.index(Phase.AWAKE)
# Awake in a strong warm colour, asleep in blues, stopped in grey, the steps between pale.
_COLOURS = {
    Phase.AWAKE: "#e6550d",
    Phase.GOING_DOWN: "#fdae6b",
    Phase.ASLEEP_1: "#6baed6",
    Phase.ASLEEP_2: "#2171b5",
    Phase.STOPPED: "#bdbdbd",
    Phase.WAKING: "#fdd835",
    Phase.STARTING: "#9e9ac8",
}
_NOT_REPLAYED = "#f4f4f4"
# Warm and cold differ by lane as well as by colour, for readers who cannot tell the colours.
_WARM, _COLD = "#525252", "#d62728"

_LEFT = 220  # the labels' column
_DAY_W = 960  # the day's width, in the viewBox's units: the pixel columns ticks are binned in
_RIGHT = 16
_TOP = 78  # the title, the note and the hour labels above the rows
_ROW = 42
_BAND_H = 18
_STRIP_H = 5  # a gathered band's next longest phase, along its bottom
_LANE_H = 7
_MIN_BAND = 2.0  # units: shorter stretches are gathered into one band
_MAX_TICKS = 120  # requests in the day drawn one by one, each with its own title
_EPOCH = date(1970, 1, 1)
_QUARTER_S = 900


@dataclass(frozen=True, slots=True, kw_only=True)
class _Stretch:
    start_us: int
    end_us: int
    phase: Phase | None  # None: outside the replay


def local_day_us(day: date, zone: ZoneInfo | str) -> tuple[int, int]:
    """Return the instants of ``day``'s local midnight in ``zone`` and of the next one."""
    clock = zone_clock(resolve_zone(zone))

    def midnight(of: date) -> int:
        # The zones' one DST rule: a midnight the clocks skip starts the day after the gap.
        at_s, _ = clock.instant((of - _EPOCH).days * 86_400)
        return at_s * SECOND_US

    return midnight(day), midnight(day + timedelta(days=1))


def choose_day(day: date | None, zone: ZoneInfo | str, *, start_us: int, end_us: int) -> date:
    """Return ``day``, or without one the replay's first day; refuse a day outside the replay."""
    info = resolve_zone(zone)
    if day is None:
        # The local day holding the middle of the replay's first 24 hours: a replay from a UTC
        # midnight drawn in New York or Tokyo gets the day it mostly covers, not the evening
        # before it.
        return from_us(start_us + min(DAY_US, end_us - start_us) // 2, info).date()
    first_us, last_us = local_day_us(day, info)
    if last_us <= start_us or first_us >= end_us:
        first = from_us(start_us, info).date().isoformat()
        last = from_us(max(start_us, end_us - 1), info).date().isoformat()
        raise InvalidInput(
            "day", f"{day.isoformat()} is outside the replay ({first} to {last}, {info.key})"
        )
    return day


def day_picture(
    comparison: Comparison,
    deployment: str,
    day: date | None = None,
    *,
    zone: ZoneInfo | str = "UTC",
) -> str:
    """Return an SVG of ``deployment``'s local ``day`` under every policy of ``comparison``."""
    info = resolve_zone(zone)
    rows = _rows(comparison, deployment)
    replay = rows[0][2]
    chosen = choose_day(day, info, start_us=replay.start_us, end_us=replay.end_us)
    start_us, end_us = local_day_us(chosen, info)
    arrivals = comparison.arrivals[deployment]
    arrivals = arrivals[(arrivals >= start_us) & (arrivals < end_us)]
    one_by_one = len(arrivals) <= _MAX_TICKS
    canvas = _Canvas(start_us=start_us, end_us=end_us, zone=info)
    width = _LEFT + _DAY_W + _RIGHT
    legend_y = _TOP + len(rows) * _ROW + 16
    height = legend_y + 14
    hours = (end_us - start_us) / HOUR_US
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" font-family="sans-serif" '
        f'font-size="11" fill="#252525">',
        f"<title>{_esc(deployment)} on {chosen.isoformat()} ({_esc(info.key)}): each "
        "policy's phases and requests</title>",
        f'<text x="8" y="16" font-size="14" font-weight="bold">{_esc(deployment)}: '
        f"{chosen:%A} {chosen.isoformat()} in {_esc(info.key)}, {hours:g} h</text>",
        '<text x="8" y="32">Bands: each policy\'s phases; where they change too fast to draw '
        "one by one, a band shows the longest, with the next longest along its bottom.</text>",
        f'<text x="8" y="46">Ticks: requests, warm above, cold (the deployment not awake) '
        f"below. Freed and cold beside each policy: over the whole replay "
        f"({rows[0][1].hours:g} h).</text>",
        f'<rect data-role="day" x="{_LEFT}" y="{_TOP - 4}" width="{_DAY_W}" '
        f'height="{len(rows) * _ROW}" fill="none" stroke="#d9d9d9"/>',
    ]
    parts.extend(canvas.hours(_TOP - 4, _TOP + len(rows) * _ROW - 4))
    shortest_us = (end_us - start_us) * _MIN_BAND / _DAY_W
    drew_outside = False
    for index, (policy, ledger, timeline) in enumerate(rows):
        top = _TOP + index * _ROW
        stretches = _stretches(timeline, start_us, end_us)
        drew_outside |= any(stretch.phase is None for stretch in stretches)
        within = arrivals[(arrivals >= timeline.start_us) & (arrivals < timeline.end_us)]
        codes = timeline.phase_codes_at(within)
        cold: _Bools = codes != _AWAKE
        parts.append(f'<g data-policy="{_esc(policy)}">')
        parts.append(_label(policy, ledger, top, cold))
        parts.extend(canvas.band(band, top) for band in _bands(stretches, shortest_us))
        for is_cold, mask in ((False, ~cold), (True, cold)):
            y = top + _BAND_H + 2 + (_LANE_H + 1 if is_cold else 0)
            if one_by_one:
                parts.extend(
                    canvas.tick(int(at), _PHASES[int(code)], y)
                    for at, code in zip(within[mask], codes[mask], strict=True)
                )
            else:
                parts.append(canvas.binned(within[mask], y, cold=is_cold))
        parts.append("</g>")
    parts.extend(_legend(legend_y, drew_outside))
    parts.append("</svg>")
    return "\n".join(part for part in parts if part)


def _rows(comparison: Comparison, deployment: str) -> list[tuple[str, Ledger, Timeline]]:
    """Return each policy's ledger and timeline of ``deployment``, in the comparison's order."""
    rows = []
    for policy, timelines in comparison.timelines.items():
        for ledger, timeline in zip(comparison.ledgers[policy], timelines, strict=True):
            if ledger.name == deployment:
                rows.append((policy.value, ledger, timeline))
                break
    if not rows or deployment not in comparison.arrivals:
        names = ", ".join(comparison.arrivals) or "none"
        raise InvalidInput("deployment", f"{deployment!r} is not in the replay ({names})")
    return rows


def _stretches(timeline: Timeline, start_us: int, end_us: int) -> list[_Stretch]:
    """Return the timeline's stretches of one phase over ``[start_us, end_us)``, clipped."""
    low, high = max(start_us, timeline.start_us), min(end_us, timeline.end_us)
    if low >= high:
        return [_Stretch(start_us=start_us, end_us=end_us, phase=None)]
    found = [_Stretch(start_us=start_us, end_us=low, phase=None)] if start_us < low else []
    first = int(np.searchsorted(timeline.starts, low, side="right")) - 1
    last = int(np.searchsorted(timeline.starts, high, side="left"))
    starts = [int(at) for at in timeline.starts[first:last]]
    for i, code in enumerate(timeline.codes[first:last]):
        begin = max(starts[i], low)
        until = starts[i + 1] if i + 1 < len(starts) else high
        if until > begin:
            found.append(_Stretch(start_us=begin, end_us=until, phase=_PHASES[int(code)]))
    if high < end_us:
        found.append(_Stretch(start_us=high, end_us=end_us, phase=None))
    return found


@dataclass(slots=True, kw_only=True)
class _Band:
    """Stretches drawn as one band: one stretch, or short ones gathered."""

    start_us: int
    end_us: int
    held: dict[Phase | None, int]  # how long each phase lasted in it
    stretches: int

    @classmethod
    def of(cls, stretch: _Stretch) -> _Band:
        lasting = stretch.end_us - stretch.start_us
        return cls(
            start_us=stretch.start_us,
            end_us=stretch.end_us,
            held={stretch.phase: lasting},
            stretches=1,
        )

    @property
    def phase(self) -> Phase | None:
        """Return the phase that lasted longest in it, the one it is drawn in."""
        return max(self.held, key=lambda kind: self.held[kind])

    def take(self, other: _Band) -> None:
        """Take in the band that follows this one."""
        self.end_us = other.end_us
        for kind, lasting in other.held.items():
            self.held[kind] = self.held.get(kind, 0) + lasting
        self.stretches += other.stretches


def _bands(stretches: Sequence[_Stretch], shortest_us: float) -> list[_Band]:
    """Return the stretches as bands: each alone, or short ones gathered.

    A stretch narrower than ``_MIN_BAND`` cannot be seen or pointed at, and a busy day under a
    short timeout has thousands: consecutive short ones share one band until it is wide
    enough, and gathered bands drawn in the same phase next to each other (which no eye could
    tell apart) become one. That keeps the picture small and its widths exact.
    """
    bands: list[_Band] = []
    gathering: _Band | None = None
    for stretch in stretches:
        if stretch.end_us - stretch.start_us >= shortest_us:
            if gathering is not None:
                _add(bands, gathering)
                gathering = None
            bands.append(_Band.of(stretch))
            continue
        if gathering is None:
            gathering = _Band.of(stretch)
        else:
            gathering.take(_Band.of(stretch))
        if gathering.end_us - gathering.start_us >= shortest_us:
            _add(bands, gathering)
            gathering = None
    if gathering is not None:
        _add(bands, gathering)
    return bands


def _add(bands: list[_Band], gathered: _Band) -> None:
    last = bands[-1] if bands else None
    if last is not None and last.stretches > 1 and last.phase is gathered.phase:
        last.take(gathered)
    else:
        bands.append(gathered)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Canvas:
    """The day's instants placed on the drawing, and what is drawn on it."""

    start_us: int
    end_us: int
    zone: ZoneInfo

    def x(self, at_us: int) -> float:
        """Return the place of an instant, rounded as it is written."""
        share = (at_us - self.start_us) / (self.end_us - self.start_us)
        return round(_LEFT + share * _DAY_W, 2)

    def local(self, at_us: int) -> str:
        """Return an instant as local ISO 8601 with its offset (which tells a repeated hour)."""
        return from_us(at_us, self.zone).isoformat(timespec="seconds")

    def hours(self, top: int, bottom: int) -> list[str]:
        """Return a gridline and a label at every local hour of the day."""
        clock = zone_clock(self.zone)
        parts = []
        first_s = self.start_us // SECOND_US
        # Every offset in use is a whole number of quarter hours, so every local hour falls on
        # a quarter hour of UTC; walking instants (not wall times) gives a repeated hour twice.
        at_s = first_s - first_s % _QUARTER_S
        while at_s * SECOND_US < self.end_us:
            wall = clock.wall(at_s)
            if at_s >= first_s and wall % 3600 == 0:
                x = self.x(at_s * SECOND_US)
                shown = self.local(at_s * SECOND_US)
                parts.append(
                    f'<line data-role="hour" x1="{x}" x2="{x}" y1="{top}" y2="{bottom}" '
                    f'stroke="#d9d9d9" stroke-width="0.5"><title>{shown}</title></line>'
                    f'<text data-role="hour" x="{x}" y="{top - 4}" text-anchor="middle" '
                    f'font-size="9">{wall // 3600 % 24:02d}</text>'
                )
            at_s += _QUARTER_S
        return parts

    def band(self, band: _Band, top: int) -> str:
        """Return one band: a stretch in its phase, or gathered ones in the longest one's."""
        phase = band.phase
        span = f"{self.local(band.start_us)} to {self.local(band.end_us)}"
        if band.stretches == 1:
            title = f"{_name(phase)}, {span} ({_lasting(band.end_us - band.start_us)})"
        else:
            shares = ", ".join(f"{_name(kind)} {_lasting(us)}" for kind, us in band.held.items())
            title = f"mostly {_name(phase)}, {span}: {band.stretches} stretches, {shares}"
        x0, x1 = self.x(band.start_us), self.x(band.end_us)
        drawn = (
            f'<rect data-phase="{_name(phase)}" x="{x0}" y="{top}" width="{x1 - x0:.2f}" '
            f'height="{_BAND_H}" fill="{_colour(phase)}"><title>{_esc(title)}</title></rect>'
        )
        if len(band.held) == 1:
            return drawn
        # Drawn in its longest phase alone, a day that flips every few minutes would look
        # like one that never does: a strip along the bottom shows the next longest. It lets
        # a pointer through to the band's title.
        second = sorted(band.held, key=lambda kind: band.held[kind])[-2]
        return (
            f'{drawn}<rect data-next="{_name(second)}" x="{x0}" y="{top + _BAND_H - _STRIP_H}" '
            f'width="{x1 - x0:.2f}" height="{_STRIP_H}" fill="{_colour(second)}" '
            'pointer-events="none"/>'
        )

    def tick(self, at_us: int, met: Phase, y: int) -> str:
        """Return one request's tick, titled with its instant and the phase it met."""
        x = self.x(at_us)
        lane = _lane(cold=met is not Phase.AWAKE)
        return (
            f'<line data-kind="{lane}" x1="{x}" x2="{x}" y1="{y}" y2="{y + _LANE_H}" '
            f'stroke="{_tick_colour(cold=met is not Phase.AWAKE)}" stroke-width="1.5">'
            f"<title>request at {self.local(at_us)}: met it {met.value}, {lane}</title></line>"
        )

    def binned(self, arrivals: Ints, y: int, *, cold: bool) -> str:
        """Return a lane's ticks as one path, one tick per pixel column holding a request."""
        if not len(arrivals):
            return ""
        # A busy day holds tens of thousands of requests and a column shows one tick as well
        # as a hundred: one short stroke per column keeps the file small whatever the load.
        columns = np.unique((arrivals - self.start_us) * _DAY_W // (self.end_us - self.start_us))
        path = "".join(f"M{_LEFT + int(column) + 0.5} {y}v{_LANE_H}" for column in columns)
        lane = _lane(cold=cold)
        return (
            f'<path data-kind="{lane}" d="{path}" stroke="{_tick_colour(cold=cold)}" '
            f'fill="none" stroke-width="1.5"><title>{len(arrivals):,} {lane} requests, one '
            "tick per pixel column that holds any</title></path>"
        )


def _label(policy: str, ledger: Ledger, top: int, cold: _Bools) -> str:
    """Return a row's label: the policy, and its ledger's figures for the deployment."""
    today = int(np.count_nonzero(cold))
    hover = (
        f"{policy}: {today:,} of {len(cold):,} requests this day met it not awake; over the "
        f"replay {ledger.cold:,} of {ledger.requests:,}, and {ledger.freed_gib_h:,.1f} "
        "GiB-hours freed against always-on"
    )
    return (
        f'<text x="8" y="{top + 10}" font-weight="bold">{_esc(policy)}'
        f"<title>{_esc(hover)}</title></text>"
        f'<text x="8" y="{top + 25}" font-size="10">freed {ledger.freed_gib_h:,.1f} GiB-h, '
        f"{ledger.cold:,} cold</text>"
    )


def _legend(y: int, drew_outside: bool) -> list[str]:
    """Return the legend: every phase, the part not replayed when drawn, and the ticks."""
    items: list[tuple[str, str, str]] = [
        ("phase", phase.value, _COLOURS[phase]) for phase in _PHASES
    ]
    if drew_outside:
        items.append(("phase", _name(None), _NOT_REPLAYED))
    items += [("tick", "warm request", _WARM), ("tick", "cold request", _COLD)]
    parts = []
    x = 8.0
    for kind, text, colour in items:
        if kind == "phase":
            mark = f'<rect x="{x:.1f}" y="{y - 9}" width="12" height="10" fill="{colour}"/>'
        else:
            mark = (
                f'<line x1="{x + 6:.1f}" x2="{x + 6:.1f}" y1="{y - 10}" y2="{y + 1}" '
                f'stroke="{colour}" stroke-width="2"/>'
            )
        parts.append(
            f'<g data-legend="{_esc(text)}">{mark}<text x="{x + 16:.1f}" y="{y}">'
            f"{_esc(text)}</text></g>"
        )
        x += 16 + 6 * len(text) + 14
    return parts


def _name(phase: Phase | None) -> str:
    return "not replayed" if phase is None else phase.value


def _colour(phase: Phase | None) -> str:
    return _NOT_REPLAYED if phase is None else _COLOURS[phase]


def _lane(*, cold: bool) -> str:
    return "cold" if cold else "warm"


def _tick_colour(*, cold: bool) -> str:
    return _COLD if cold else _WARM


def _lasting(us: int) -> str:
    """Return a duration as a reader says it: 4 s, 12 min, 3 h 5 min."""
    if us < MINUTE_US:
        return f"{round(us / SECOND_US, 3):g} s"
    if us < HOUR_US:
        return f"{us // MINUTE_US} min {us % MINUTE_US // SECOND_US} s".removesuffix(" 0 s")
    return f"{us // HOUR_US} h {us % HOUR_US // MINUTE_US} min".removesuffix(" 0 min")


def _esc(text: str) -> str:
    # Deployment names come from the user's fleet file; quotes too, for attributes.
    return escape(text, {'"': "&quot;"})
