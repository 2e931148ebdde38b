"""One day's picture: each policy's phases as bands and its requests as warm or cold ticks."""

from __future__ import annotations

import itertools
import json
import xml.etree.ElementTree as ET
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest
from cli.clikit import run
from lab.labkit import COMMAND_FLEET, FIXED_TIMES, lab_deployment, lab_fleet

from dgxmm.decider.schedules import ScheduleAction
from dgxmm.errors import InvalidInput
from dgxmm.lab import (
    Comparison,
    LabSchedule,
    Ledger,
    Phase,
    Trace,
    compare,
)
from dgxmm.lab.picture import choose_day, day_picture, local_day_us
from dgxmm.time_units import HOUR_US, SECOND_US

S = SECOND_US
SVG = "{http://www.w3.org/2000/svg}"
NOON_SLEEP = LabSchedule(
    action=ScheduleAction.SLEEP, days=127, time="12:00", time_zone="Europe/Berlin"
)
# A Monday in Berlin: two requests in the morning (awake under the schedules), one at 15:00
# (after the schedules' sleep at 12:00: it meets the deployment asleep).
MORNING = "2026-06-01T08:00:00+02:00"
AFTERNOON = "2026-06-01T15:00:00+02:00"
MONDAY = ("2026-06-01T00:00:00+02:00", MORNING, "2026-06-01T08:01:00+02:00", AFTERNOON)


def us(iso: str) -> int:
    return int(datetime.fromisoformat(iso).timestamp()) * S


def replayed(
    instants: list[int], *, start: str, end: str, name: str = "chat"
) -> tuple[Comparison, str]:
    """Replay requests of one deployment; return the comparison and the deployment's name."""
    fleet = lab_fleet(
        lab_deployment(name, model="llama", schedules=(NOON_SLEEP,), durations=FIXED_TIMES)
    )
    trace = Trace.of([(at, "llama") for at in instants])
    return compare(trace, fleet, start_us=us(start), end_us=us(end), seed=1), name


def monday(name: str = "chat") -> tuple[Comparison, str]:
    instants = [us(at) for at in MONDAY[1:]]
    return replayed(instants, start=MONDAY[0], end="2026-06-02T00:00:00+02:00", name=name)


def drawn(comparison: Comparison, name: str, day: date, zone: str = "Europe/Berlin") -> ET.Element:
    return ET.fromstring(day_picture(comparison, name, day, zone=zone))


def rows(svg: ET.Element) -> dict[str, ET.Element]:
    return {
        row.attrib["data-policy"]: row for row in svg.iter(f"{SVG}g") if "data-policy" in row.attrib
    }


def bands(row: ET.Element) -> list[tuple[float, float, str]]:
    return [
        (float(rect.attrib["x"]), float(rect.attrib["width"]), rect.attrib["data-phase"])
        for rect in row.iter(f"{SVG}rect")
        if "data-phase" in rect.attrib  # not the strip of a gathered band's next longest phase
    ]


def ticks(row: ET.Element, kind: str) -> list[str]:
    """Return the titles of a row's ticks of one kind (warm or cold), drawn one by one."""
    return [
        "".join(line.itertext())
        for line in row.iter(f"{SVG}line")
        if line.attrib.get("data-kind") == kind
    ]


def ledger_of(comparison: Comparison, policy: str) -> Ledger:
    """Return the one deployment's ledger under the policy of this value."""
    (ledger,) = next(found for p, found in comparison.ledgers.items() if p.value == policy)
    return ledger


def day_frame(svg: ET.Element) -> tuple[float, float]:
    frame = next(rect for rect in svg.iter(f"{SVG}rect") if rect.get("data-role") == "day")
    return float(frame.attrib["x"]), float(frame.attrib["width"])


def test_it_draws_one_row_per_policy_in_the_comparisons_order() -> None:
    comparison, name = monday()
    svg = drawn(comparison, name, date(2026, 6, 1))
    assert list(rows(svg)) == [policy.value for policy in comparison.timelines]
    labels = ["".join(text.itertext()) for text in svg.iter(f"{SVG}text")]
    schedules = ledger_of(comparison, "schedules")
    assert f"freed {schedules.freed_gib_h:,.1f} GiB-h, 1 cold" in labels


def test_each_rows_bands_fill_the_day_edge_to_edge_without_a_gap() -> None:
    comparison, name = monday()
    svg = drawn(comparison, name, date(2026, 6, 1))
    left, width = day_frame(svg)
    for policy, row in rows(svg).items():
        found = bands(row)
        assert found[0][0] == left, policy
        for (x, w, _), (next_x, _, _) in itertools.pairwise(found):
            assert next_x == pytest.approx(x + w, abs=0.011), policy
        assert sum(w for _, w, _ in found) == pytest.approx(width, abs=0.011), policy
    # The schedules' day: awake until the sleep at noon, asleep until the 15:00 request.
    phases = [phase for _, _, phase in bands(rows(svg)["schedules"])]
    assert phases[:3] == ["awake", "going_down", "asleep_1"]


def test_a_request_that_meets_the_schedules_sleep_is_cold_and_the_morning_ones_are_warm() -> None:
    comparison, name = monday()
    svg = drawn(comparison, name, date(2026, 6, 1))
    schedules = rows(svg)["schedules"]
    assert ticks(schedules, "cold") == ["request at 2026-06-01T15:00:00+02:00: met it waking, cold"]
    assert ticks(schedules, "warm") == [
        "request at 2026-06-01T08:00:00+02:00: met it awake, warm",
        "request at 2026-06-01T08:01:00+02:00: met it awake, warm",
    ]
    assert ticks(rows(svg)["always-on"], "cold") == []
    # Every row draws as many cold ticks as its ledger counts cold requests.
    for policy, row in rows(svg).items():
        ledger = ledger_of(comparison, policy)
        assert len(ticks(row, "cold")) == ledger.cold, policy


def test_a_name_with_markup_is_escaped_and_reads_back_as_given() -> None:
    name = 'a<b&"c'
    comparison, _ = monday(name)
    text = day_picture(comparison, name, date(2026, 6, 1), zone="Europe/Berlin")
    assert "<b&" not in text
    svg = ET.fromstring(text)
    title = svg.find(f"{SVG}title")
    assert title is not None
    assert title.text == f"{name} on 2026-06-01 (Europe/Berlin): each policy's phases and requests"


def hour_lines(svg: ET.Element) -> list[tuple[float, str]]:
    return [
        (float(line.attrib["x1"]), "".join(line.itertext()))
        for line in svg.iter(f"{SVG}line")
        if line.get("data-role") == "hour"
    ]


def hour_labels(svg: ET.Element) -> list[str]:
    return [t.text or "" for t in svg.iter(f"{SVG}text") if t.get("data-role") == "hour"]


@pytest.mark.parametrize(
    ("day", "hours", "labels", "around"),
    [
        (
            date(2026, 3, 29),
            23,
            ["00", "01", *(f"{h:02d}" for h in range(3, 24))],
            ["2026-03-29T01:00:00+01:00", "2026-03-29T03:00:00+02:00"],
        ),
        (
            date(2026, 10, 25),
            25,
            ["00", "01", "02", "02", *(f"{h:02d}" for h in range(3, 24))],
            [
                "2026-10-25T01:00:00+02:00",
                "2026-10-25T02:00:00+02:00",
                "2026-10-25T02:00:00+01:00",
                "2026-10-25T03:00:00+01:00",
            ],
        ),
    ],
    ids=["spring-forward-23h", "fall-back-25h"],
)
def test_a_day_the_clocks_change_in_berlin_has_its_23_or_25_local_hours(
    day: date, hours: int, labels: list[str], around: list[str]
) -> None:
    start, end = local_day_us(day, "Europe/Berlin")
    assert (end - start) // HOUR_US == hours
    comparison, name = replayed(
        [start + 5 * HOUR_US],
        start=f"{day - timedelta(days=1)}T00:00:00+00:00",
        end=f"{day + timedelta(days=2)}T00:00:00+00:00",
    )
    svg = drawn(comparison, name, day)
    title = "".join(next(svg.iter(f"{SVG}text")).itertext())
    assert title.endswith(f"in Europe/Berlin, {hours} h")
    assert hour_labels(svg) == labels
    lines = hour_lines(svg)
    assert [shown for _, shown in lines[1 : 1 + len(around)]] == around
    left, width = day_frame(svg)
    # The hours are equally wide: a repeated hour is drawn as long as any other.
    assert [x for x, _ in lines] == pytest.approx(
        [left + k * width / hours for k in range(hours)], abs=0.011
    )


def test_a_busy_day_stays_small_its_ticks_binned_per_column_and_its_stretches_gathered() -> None:
    # A request every 100 s all day: Knative (90 s idle) scales to zero in every gap.
    start = us("2026-06-01T00:00:00+02:00")
    instants = [start + k * 100 * S for k in range(864)]
    comparison, name = replayed(
        instants, start="2026-06-01T00:00:00+02:00", end="2026-06-02T00:00:00+02:00"
    )
    text = day_picture(comparison, name, date(2026, 6, 1), zone="Europe/Berlin")
    assert len(text) < 17_000 * len(comparison.timelines)  # whatever the requests
    svg = ET.fromstring(text)
    _, width = day_frame(svg)
    knative = rows(svg)["knative-scale-to-zero"]
    assert ticks(knative, "cold") == []  # no tick drawn one by one...
    paths = {p.attrib["data-kind"]: p for p in knative.iter(f"{SVG}path")}
    # ...but one stroke per column in one path: every other request starts it again, 432
    # cold requests about 2.2 columns apart, so nearly as many columns.
    assert 400 < paths["cold"].attrib["d"].count("M") <= 432
    found = bands(knative)
    assert len(found) <= width / 2 + 1
    assert sum(w for _, w, _ in found) == pytest.approx(width, abs=0.011)
    titles = ["".join(rect.itertext()) for rect in knative.iter(f"{SVG}rect")]
    assert titles[0].startswith("mostly awake, 2026-06-01T00:00:00+02:00 to ")
    # Its stops show as the strip of the next longest phase, under the band.
    strips = [rect.get("data-next") for rect in knative.iter(f"{SVG}rect")]
    assert "starting" in strips
    # Every row's cold lane counts the requests its ledger counts cold, one tick per column.
    for policy, row in rows(svg).items():
        ledger = ledger_of(comparison, policy)
        cold = [p for p in row.iter(f"{SVG}path") if p.get("data-kind") == "cold"]
        titles = ["".join(path.itertext()) for path in cold]
        assert titles == (
            [f"{ledger.cold:,} cold requests, one tick per pixel column that holds any"]
            if ledger.cold
            else []
        ), policy


def test_every_phase_is_in_the_legend_with_the_part_not_replayed_when_drawn() -> None:
    comparison, name = monday()
    # The replay ends at Berlin's midnight, two hours before the UTC day does.
    svg = drawn(comparison, name, date(2026, 6, 1), zone="UTC")
    legend = [g.attrib["data-legend"] for g in svg.iter(f"{SVG}g") if "data-legend" in g.attrib]
    assert legend == [
        *(phase.value for phase in Phase),
        "not replayed",
        "warm request",
        "cold request",
    ]
    assert [phase for _, _, phase in bands(rows(svg)["always-on"])] == ["awake", "not replayed"]


def test_it_picks_the_day_the_replay_mostly_covers_and_refuses_one_outside_it() -> None:
    start, end = us("2026-06-01T00:00:00+00:00"), us("2026-06-03T00:00:00+00:00")
    assert choose_day(None, "America/New_York", start_us=start, end_us=end) == date(2026, 6, 1)
    assert choose_day(None, "Asia/Tokyo", start_us=start, end_us=end) == date(2026, 6, 1)
    with pytest.raises(InvalidInput) as refused:
        choose_day(date(2026, 6, 4), "UTC", start_us=start, end_us=end)
    assert refused.value.field == "day"
    assert "2026-06-04 is outside the replay (2026-06-01 to 2026-06-02, UTC)" in str(refused.value)


def test_a_deployment_not_in_the_replay_is_refused_naming_the_field() -> None:
    comparison, _ = monday()
    with pytest.raises(InvalidInput) as refused:
        day_picture(comparison, "code", date(2026, 6, 1))
    assert refused.value.field == "deployment"
    assert "'code' is not in the replay (chat)" in str(refused.value)


REQUESTS = "timestamp,model\n2026-06-01T08:00:00+00:00,chat\n2026-06-01T15:00:00+00:00,chat\n"


def lab_files(tmp_path: Path) -> list[str]:
    (tmp_path / "fleet.json").write_text(json.dumps(COMMAND_FLEET.to_json()))
    (tmp_path / "requests.csv").write_text(REQUESTS)
    return [
        "lab",
        "replay",
        "--fleet",
        str(tmp_path / "fleet.json"),
        "--trace",
        str(tmp_path / "requests.csv"),
    ]


def test_dgxmm_lab_replay_svg_writes_the_first_days_picture_of_the_first_deployment(
    tmp_path: Path,
) -> None:
    picture = tmp_path / "day.svg"
    done = run(*lab_files(tmp_path), "--svg", str(picture))
    assert done.code == 0, done.err
    svg = ET.parse(picture).getroot()
    printed = [line.split()[0] for line in done.out.splitlines()[2:]]
    assert list(rows(svg)) == printed
    title = "".join(next(svg.iter(f"{SVG}text")).itertext())
    assert title == "chat: Monday 2026-06-01 in UTC, 24 h"
    assert ticks(rows(svg)["schedules"], "cold") == [
        "request at 2026-06-01T15:00:00+00:00: met it waking, cold"
    ]


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (("--day", "2026-13-01"), "error: day: '2026-13-01' is not a date (YYYY-MM-DD)"),
        (("--day", "2026-07-01"), "error: day: 2026-07-01 is outside the replay"),
        (("--deployment", "code"), "error: deployment: 'code' is not in the fleet (chat)"),
    ],
    ids=["not-a-date", "outside-the-replay", "unknown-deployment"],
)
def test_a_wrong_day_or_deployment_is_refused_naming_the_field_and_nothing_is_written(
    tmp_path: Path, given: tuple[str, str], said: str
) -> None:
    picture = tmp_path / "day.svg"
    done = run(*lab_files(tmp_path), "--svg", str(picture), *given)
    assert done.code == 2
    assert said in done.err
    assert not picture.exists()
    assert "POLICY" not in done.out
