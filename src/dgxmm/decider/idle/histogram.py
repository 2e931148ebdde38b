"""The histogram policy: keep-alive and pre-wake windows learned from a deployment's idle gaps.

After Shahrad et al., "Serverless in the Wild" (USENIX ATC 2020), whose hybrid histogram
policy cut cold starts on Azure Functions' replay at less memory than a fixed keep-alive.
Per deployment, the gaps between consecutive requests of the last ``days`` days go into a
histogram of 1-minute bins over a 4-hour range (the paper's choice); a gap past the range is
counted apart. From it (``windows``):

- the **keep-alive window**: the upper edge of the bin holding the 99th percentile of gaps,
  plus a 10 % margin (the paper's): after a request the deployment stays awake that long;
- the **pre-wake window**: the lower edge of the bin holding the 5th percentile, less a 10 %
  margin. When it is not zero the next request is unlikely sooner, so the deployment sleeps
  right after a request and is woken that long after it, less its measured wake time, then
  kept awake until the keep-alive window ends.

The histogram is **not representative** (``windows`` returns None, and the caller falls back
to the ladder, as the paper falls back to a fixed keep-alive) when it holds fewer than
``MIN_GAPS`` gaps, when the coefficient of variation of its bin counts is below ``MIN_CV``
(the paper's 2: counts spread evenly over the bins say nothing of when the next request
comes), or when more gaps fall past the range than within it (the paper forecasts those with
ARIMA; dgxmm does not, and falls back).

``GapHistogram`` is an accumulator, updated in place on every request: the lab adds a
million gaps a run, and the product keeps one per deployment in memory beside its counters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dgxmm.fleet import IdleLadder
from dgxmm.time_units import DAY_US, HOUR_US, MINUTE_US

Ints = npt.NDArray[np.int64]

__all__ = [
    "MIN_CV",
    "MIN_GAPS",
    "GapHistogram",
    "HistogramWindows",
    "ladder_in_effect",
    "pre_wake_at",
]

RANGE_US = 4 * HOUR_US
BIN_US = MINUTE_US
HEAD, TAIL = 0.05, 0.99
MARGIN = 0.10
MIN_CV = 2.0
MIN_GAPS = 20  # where the paper is silent: fewer gaps than this are not a distribution
DAYS = 7  # a week of gaps: the weekly pattern and not much more


@dataclass(frozen=True, slots=True, kw_only=True)
class HistogramWindows:
    """What the histogram says after a request: stay awake this long; pre-wake after that."""

    keep_alive_us: int  # from the request on, awake until then
    pre_wake_us: int  # 0: stay awake from the request on; else sleep, wake at this offset
    gaps: int  # how many gaps it was learned from
    cv: float


class GapHistogram:
    """Idle gaps of the last ``days`` days (UTC days: a gap's length has no zone), binned."""

    def __init__(self, *, days: int = DAYS, range_us: int = RANGE_US, bin_us: int = BIN_US):
        self.days = days
        self.bin_us = bin_us
        self.bins = range_us // bin_us
        self._rows = np.zeros((days, self.bins + 1), dtype=np.int64)  # last column: past range
        self._row_day = np.full(days, -1, dtype=np.int64)  # which day each row holds
        self._total = np.zeros(self.bins + 1, dtype=np.int64)
        self._day = -1  # the latest day seen
        self._cached: tuple[int, HistogramWindows | None] | None = None  # (version, windows)
        self._version = 0

    def add(self, gap_us: int, at_us: int) -> None:
        """Count one idle gap, ended by a request at ``at_us`` (not before the latest one)."""
        self._move_to(at_us // DAY_US)
        column = min(max(gap_us, 0) // self.bin_us, self.bins)
        self._rows[self._day % self.days, column] += 1
        self._total[column] += 1
        self._version += 1

    def add_many(self, gaps_us: Ints, at_us: Ints) -> None:
        """Count many gaps at once, as ``add`` one by one would (``at_us`` in order)."""
        if not len(gaps_us):
            return
        days = at_us // DAY_US
        firsts = np.flatnonzero(np.diff(days)) + 1
        for begin, end in zip(
            np.concatenate(([0], firsts)).tolist(),
            np.concatenate((firsts, [len(days)])).tolist(),
            strict=True,
        ):
            self._move_to(int(days[begin]))
            columns = np.minimum(np.maximum(gaps_us[begin:end], 0) // self.bin_us, self.bins)
            counted = np.bincount(columns, minlength=self.bins + 1)
            self._rows[self._day % self.days] += counted
            self._total += counted
        self._version += 1

    def windows(self, now_us: int) -> HistogramWindows | None:
        """Return the windows of the gaps of the last days, or None when not representative."""
        self._move_to(now_us // DAY_US)  # let days older than the window go
        if self._cached is not None and self._cached[0] == self._version:
            return self._cached[1]
        found = self._windows()
        self._cached = (self._version, found)
        return found

    def _windows(self) -> HistogramWindows | None:
        counts = self._total[: self.bins]
        inside = int(counts.sum())
        past = int(self._total[self.bins])
        if inside < MIN_GAPS or past > inside:
            return None
        mean = inside / self.bins
        cv = float(counts.std()) / mean
        if cv < MIN_CV:
            return None
        cumulative = np.cumsum(counts)
        head = int(np.searchsorted(cumulative, math.ceil(HEAD * inside)))
        tail = int(np.searchsorted(cumulative, math.ceil(TAIL * inside)))
        keep_alive = round((tail + 1) * self.bin_us * (1 + MARGIN))
        pre_wake = round(head * self.bin_us * (1 - MARGIN))
        return HistogramWindows(keep_alive_us=keep_alive, pre_wake_us=pre_wake, gaps=inside, cv=cv)

    def _move_to(self, day: int) -> None:
        # Days only move forward (requests come in order); on a new day, the rows of days
        # that fell out of the window are emptied, the new day's row among them.
        if day <= self._day:
            return
        self._day = day
        for row in range(self.days):
            held = int(self._row_day[row])
            if held >= 0 and day - held >= self.days:
                self._total -= self._rows[row]
                self._rows[row] = 0
                self._row_day[row] = -1
                self._version += 1
        self._row_day[day % self.days] = day


def ladder_in_effect(
    ladder: IdleLadder,
    windows: HistogramWindows | None,
    *,
    pre_wake_lead_us: int,
    sleep_us: int,
    pre_woken: bool,
) -> IdleLadder:
    """Return the ladder the histogram policy steps by after a request, given its windows.

    Not representative (``windows`` None): the deployment's own ladder. Else the sleep
    comes right after the request (a minute: one pass) when a pre-wake can follow it, or at
    the end of the keep-alive window; the ladder's deeper steps count on from that end.

    ``pre_wake_lead_us``: the measured level-1 wake time the pre-wake begins ahead by;
    ``sleep_us``: how long a sleep takes; ``pre_woken``: the deployment was pre-woken and no
    request came since (it stays up for the keep-alive, not to sleep at once again).
    """
    if windows is None:
        return ladder
    # Sleep right after the request only when a pre-wake can follow: the pre-wake window,
    # less the wake time, must end after that sleep. Else (a short 5th percentile, a long
    # wake) no pre-wake is planned and every next request would meet it asleep.
    ahead = windows.pre_wake_us - pre_wake_lead_us
    keep = windows.keep_alive_us
    sleep = MINUTE_US if ahead > MINUTE_US + sleep_us and not pre_woken else keep
    # Counted from the request, a 15-minute deepening fell due inside a 34-minute keep-alive
    # and took a pre-woken server straight down to level 2 (found by the lab).
    return IdleLadder(
        sleep_after_us=sleep,
        deepen_after_us=None if ladder.deepen_after_us is None else keep + ladder.deepen_after_us,
        stop_after_us=None if ladder.stop_after_us is None else keep + ladder.stop_after_us,
    )


def pre_wake_at(last_request_us: int, windows: HistogramWindows | None, lead_us: int) -> int | None:
    """Return when a pre-wake begins after a sleep that followed ``last_request_us``, or None.

    At the pre-wake window after the request, less the measured wake time (issue 25, point
    3), so that the model is up when the next request is likely; None when the histogram
    plans none (not representative, or a 5th percentile of zero: stay awake instead).
    """
    if windows is None or not windows.pre_wake_us:
        return None
    return last_request_us + windows.pre_wake_us - lead_us
