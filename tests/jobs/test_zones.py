"""ZoneClock against zoneinfo itself: offsets and wall-time instants around every transition."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from dgxmm.jobs.cron.zones import ZoneClock

ZONES = [
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "Pacific/Apia",
    "America/Santiago",
    "Europe/Dublin",
    "Africa/Casablanca",
    "Africa/Freetown",
    "Asia/Gaza",
    "America/Noronha",
]


def transitions(zone: ZoneInfo, start: datetime, end: datetime) -> list[int]:
    """Instants where the offset changes, found by an hourly walk (slow and obvious)."""
    found = []
    t = int(start.timestamp())
    previous = datetime.fromtimestamp(t, zone).utcoffset()
    while t < int(end.timestamp()):
        t += 3600
        offset = datetime.fromtimestamp(t, zone).utcoffset()
        if offset != previous:
            low = t - 3600
            while t - low > 1:
                mid = (low + t) // 2
                if datetime.fromtimestamp(mid, zone).utcoffset() == previous:
                    low = mid
                else:
                    t = mid
            found.append(t)
        previous = offset
    return found


def reference_instant(zone: ZoneInfo, w: int) -> int:
    """The DST rule by brute force: the first instant showing wall time w, else the gap's end."""
    naive = datetime(1970, 1, 1) + timedelta(seconds=w)
    candidates = []
    for fold in (0, 1):
        local = naive.replace(tzinfo=zone, fold=fold)
        t = int(local.timestamp())
        if datetime.fromtimestamp(t, zone).replace(tzinfo=None) == naive:
            candidates.append(t)
    if candidates:
        return min(candidates)
    t = int(naive.replace(tzinfo=zone, fold=0).timestamp()) - 86400
    while datetime.fromtimestamp(t, zone).replace(tzinfo=None) < naive:
        t += 60
    while datetime.fromtimestamp(t - 1, zone).replace(tzinfo=None) >= naive:
        t -= 1
    return t


@pytest.mark.parametrize("name", ZONES)
def test_it_agrees_with_zoneinfo_around_every_transition(name: str) -> None:
    zone = ZoneInfo(name)
    clock = ZoneClock(zone)
    years = (
        (datetime(1939, 1, 1, tzinfo=UTC), datetime(1940, 1, 1, tzinfo=UTC))
        if name == "Africa/Freetown"
        else (datetime(2000, 1, 1, tzinfo=UTC), datetime(2003, 1, 1, tzinfo=UTC))
        if name == "America/Noronha"
        else (datetime(2011, 1, 1, tzinfo=UTC), datetime(2013, 1, 1, tzinfo=UTC))
        if name == "Pacific/Apia"
        else (datetime(2025, 1, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC))
    )
    changes = transitions(zone, *years)
    assert changes, f"no transition found for {name} in {years}"
    for change in changes:
        for delta in (-7201, -3600, -1, 0, 1, 1799, 3600, 5400):
            t = change + delta
            expected = datetime.fromtimestamp(t, zone).utcoffset()
            assert expected is not None
            assert clock.offset_at(t) == int(expected.total_seconds()), (name, t)
            wall = t + clock.offset_at(t)
            for w in (wall, wall - wall % 60, wall - 1800, wall + 1800):
                assert clock.instant(w)[0] == reference_instant(zone, w), (name, w)


def test_it_joins_weeks_at_a_transition_exactly_on_the_week_boundary() -> None:
    # Weeks are counted from the epoch, so they start on Thursdays at 00:00 UTC; Baghdad moved
    # its clocks from +03 to +04 at exactly such an instant, 2004-04-01T00:00:00Z.
    zone = ZoneInfo("Asia/Baghdad")
    clock = ZoneClock(zone)
    boundary = int(datetime(2004, 4, 1, tzinfo=UTC).timestamp())
    assert boundary % (7 * 86400) == 0
    assert clock.offset_at(boundary - 1) == 3 * 3600
    assert clock.offset_at(boundary) == 4 * 3600
    wall = boundary + 3 * 3600  # 03:00 local, the first wall time of the gap
    assert clock.instant(wall + 1800) == (boundary, True)
    for w in range(wall - 20 * 3600, wall + 20 * 3600, 900):
        assert clock.instant(w)[0] == reference_instant(zone, w), w
