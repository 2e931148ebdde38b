"""The fleet file: a good one read whole, a wrong one refused naming each field and its line."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgxmm.decider import ScheduleAction
from dgxmm.decider.idle import IdleLadder
from dgxmm.errors import DefinitionError, NotFound
from dgxmm.fleet import IdlePolicy, WaitBudget
from dgxmm.lab import (
    Fixed,
    Footprint,
    LabFleet,
    LabSchedule,
    ServerTimes,
    parse_fleet,
    read_fleet,
)
from dgxmm.time_units import SECOND_US

S = SECOND_US
GOOD: dict[str, Any] = {
    "gpus": [{"index": 0, "name": "H100", "memory_gib": 80}, {"index": 1, "memory_gib": 80}],
    "deployments": [
        {
            "name": "chat",
            "model": "llama-3.1-8b",
            "gpus": [0, 1],
            "memory_gib_awake": 72,
            "memory_gib_asleep": 2,
            "memory_gib_asleep_2": 1,
            "sleep_level": 1,
            "priority": 80,
            "time_zone": "Europe/Berlin",
            "schedules": [
                {"action": "sleep", "days": ["mon", "Tue"], "time": "20:00"},
                {"action": "wake", "days": 31, "time": "07:30", "time_zone": "UTC"},
            ],
            "idle": {"sleep_after_s": 300, "deepen_after_s": 3600, "stop_after_s": 86400},
            "durations": {"wake_1": 0.5},
        },
        {
            "name": "code",
            "model": "qwen-coder",
            "gpus": [1],
            "memory_gib_awake": 40,
            "memory_gib_asleep": 3,
        },
    ],
}


def text_of(document: object) -> str:
    return json.dumps(document, indent=2)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fleet.json"
    path.write_text(text)
    return path


def refusal(document: object) -> DefinitionError:
    text = text_of(document)
    with pytest.raises(DefinitionError) as refused:
        parse_fleet(document, "fleet.json", text=text)
    return refused.value


def line_of(text: str, needle: str, occurrence: int = 1) -> int:
    """Return the line of the ``occurrence``-th line holding ``needle``."""
    found = [n for n, line in enumerate(text.splitlines(), start=1) if needle in line]
    return found[occurrence - 1]


def test_it_reads_a_good_file(tmp_path: Path) -> None:
    fleet = read_fleet(write(tmp_path, text_of(GOOD)))
    chat = fleet.deployment("chat")
    assert [gpu.memory_gib for gpu in fleet.gpus] == [80.0, 80.0]
    assert chat.gpus == (0, 1)
    assert chat.priority == 80
    assert chat.schedules == (
        LabSchedule(action=ScheduleAction.SLEEP, days=3, time="20:00", time_zone="Europe/Berlin"),
        LabSchedule(action=ScheduleAction.WAKE, days=31, time="07:30", time_zone="UTC"),
    )
    assert chat.idle == IdleLadder(
        sleep_after_us=300 * S, deepen_after_us=3600 * S, stop_after_us=86400 * S
    )
    assert chat.durations == ServerTimes(wake_1=Fixed(value_us=500_000))


def test_it_gives_the_product_defaults_where_a_deployment_is_silent() -> None:
    code = parse_fleet(GOOD, "fleet.json").deployment("code")
    assert (code.priority, code.sleep_level, code.time_zone) == (50, 1, "UTC")
    assert code.memory_gib_asleep_2 == code.memory_gib_asleep == 3.0
    assert code.schedules == ()
    assert code.idle == IdleLadder()
    assert code.durations == ServerTimes()


def test_a_deployment_may_name_the_priced_idle_policy_and_it_reads_back() -> None:
    fleet = parse_fleet(_set("deployments.0.idle_policy", "priced"), "fleet.json")
    assert fleet.deployments[0].idle_policy is IdlePolicy.PRICED
    assert fleet.deployments[1].idle_policy is IdlePolicy.LADDER  # silent: the product's default
    assert parse_fleet(fleet.to_json(), "again") == fleet


def test_a_deployment_may_give_a_wait_budget_and_it_reads_back() -> None:
    given = {"mean_ms": 50, "p99_s": 5}
    fleet = parse_fleet(_set("deployments.0.idle_wait_budget", given), "fleet.json")
    assert fleet.deployments[0].idle_wait_budget == WaitBudget(mean_ms=50, p99_s=5)
    assert fleet.deployments[1].idle_wait_budget is None  # silent: none
    assert parse_fleet(fleet.to_json(), "again") == fleet


def test_it_sums_a_footprint_over_the_deployments_gpus() -> None:
    fleet = parse_fleet(GOOD, "fleet.json")
    assert fleet.footprint("chat") == Footprint(awake_gib=144.0, level_1_gib=4.0, level_2_gib=2.0)
    assert fleet.footprint("code") == Footprint(awake_gib=40.0, level_1_gib=3.0, level_2_gib=3.0)
    with pytest.raises(NotFound):
        fleet.footprint("nobody")


def test_a_fleet_written_out_reads_back_equal(tmp_path: Path) -> None:
    fleet = parse_fleet(GOOD, "fleet.json")
    again = read_fleet(write(tmp_path, text_of(fleet.to_json())))
    assert again == fleet
    assert isinstance(again, LabFleet)


def _set(path: str, value: object) -> dict[str, Any]:
    """Return GOOD with the value at a dotted path set (``!`` deletes it)."""
    document = copy.deepcopy(GOOD)
    *parents, last = re.findall(r"[^.\[\]]+", path)
    target: Any = document
    for step in parents:
        target = target[int(step)] if step.isdigit() else target[step]
    key: Any = int(last) if last.isdigit() else last
    if value == "!":
        del target[key]
    else:
        target[key] = value
    return document


# (the change, the field refused, what the line holding the field contains: #2 for the second)
REFUSALS = [
    pytest.param("gpus.1.memory_gib", -80, "gpus[1].memory_gib", '"memory_gib": -80', id="gpu"),
    pytest.param("gpus", [], "gpus", '"gpus": []', id="no-machine"),
    pytest.param("deployments", {}, "deployments", '"deployments": {}', id="deployments"),
    pytest.param("colour", "red", "colour", '"colour"', id="top-level-field"),
    pytest.param(
        "deployments.1.memory_gib_awake",
        -3,
        "deployments[1].memory_gib_awake",
        '"memory_gib_awake": -3',
        id="memory-negative",
    ),
    pytest.param(
        "deployments.1.memory_gib_awake",
        81,
        "deployments[1].memory_gib_awake",
        '"memory_gib_awake": 81',
        id="memory-above-gpu",
    ),
    pytest.param(
        "deployments.0.memory_gib_asleep_2",
        5,
        "deployments[0].memory_gib_asleep_2",
        '"memory_gib_asleep_2": 5',
        id="level-2-above-level-1",
    ),
    pytest.param(
        "deployments.1.memory_gib_asleep",
        "!",
        "deployments[1].memory_gib_asleep",
        '"name": "code"',  # missing: the line its deployment begins on, just above
        id="missing-field",
    ),
    pytest.param("deployments.1.gpus", [713], "deployments[1].gpus[0]", "713", id="unknown-gpu"),
    pytest.param("deployments.1.gpus", [], "deployments[1].gpus", '"gpus": []', id="no-gpu"),
    pytest.param(
        "deployments.1.priority", 101, "deployments[1].priority", '"priority": 101', id="prio"
    ),
    pytest.param(
        "deployments.1.sleep_level", 3, "deployments[1].sleep_level", '"sleep_level": 3', id="level"
    ),
    pytest.param(
        "deployments.1.time_zone", "Mars/Base", "deployments[1].time_zone", "Mars", id="zone"
    ),
    pytest.param(
        "deployments.1.name", "chat", "deployments[1].name", '"name": "chat"#2', id="same-name"
    ),
    pytest.param(
        "deployments.1.model",
        "llama-3.1-8b",
        "deployments[1].model",
        '"llama-3.1-8b"#2',
        id="same-model",
    ),
    pytest.param("deployments.1.size", 3, "deployments[1].size", '"size"', id="unknown-field"),
    pytest.param(
        "deployments.0.schedules.0.time",
        "7:5",
        "deployments[0].schedules[0].time",
        '"7:5"',
        id="schedule-time",
    ),
    pytest.param(
        "deployments.0.schedules.0.action",
        "nap",
        "deployments[0].schedules[0].action",
        '"nap"',
        id="schedule-action",
    ),
    pytest.param(
        "deployments.0.schedules.1.days",
        128,
        "deployments[0].schedules[1].days",
        '"days": 128',
        id="schedule-mask",
    ),
    pytest.param(
        "deployments.0.schedules.0.days",
        ["mon", "someday"],
        "deployments[0].schedules[0].days[1]",
        '"someday"',
        id="schedule-day-name",
    ),
    pytest.param(
        "deployments.0.schedules.1.time_zone",
        "Nowhere",
        "deployments[0].schedules[1].time_zone",
        '"Nowhere"',
        id="schedule-zone",
    ),
    pytest.param(
        "deployments.0.idle.stop_after_s",
        60,
        "deployments[0].idle.stop_after_s",
        '"stop_after_s": 60',
        id="idle-order",
    ),
    pytest.param(
        "deployments.0.idle.sleep_after_s",
        -1,
        "deployments[0].idle.sleep_after_s",
        '"sleep_after_s": -1',
        id="idle-negative",
    ),
    pytest.param(
        "deployments.0.idle_policy",
        "cheapest",
        "deployments[0].idle_policy",
        '"idle_policy": "cheapest"',
        id="idle-policy",
    ),
    pytest.param(
        "deployments.0.idle_wait_budget",
        {"mean_ms": -1},
        "deployments[0].idle_wait_budget.mean_ms",
        '"mean_ms": -1',
        id="wait-budget",
    ),
    pytest.param(
        "deployments.0.durations.wake_1",
        {"kind": "gamma"},
        "deployments[0].durations.wake_1.kind",
        '"kind": "gamma"',
        id="duration-kind",
    ),
    pytest.param(
        "deployments.0.durations.reload",
        3,
        "deployments[0].durations.reload",
        '"reload": 3',
        id="duration-step",
    ),
    pytest.param(
        "deployments.1.memory_gib_awake",
        10**30,
        "deployments[1].memory_gib_awake",
        "1000000000000000000000000000000",
        id="huge-number",
    ),
]


@pytest.mark.parametrize(("change", "value", "field", "on_line"), REFUSALS)
def test_it_refuses_a_wrong_field_naming_it_and_its_line(
    change: str, value: object, field: str, on_line: str
) -> None:
    document = _set(change, value)
    error = refusal(document)
    needle, _, occurrence = on_line.partition("#")
    line = line_of(text_of(document), needle, int(occurrence or 1))
    if change.endswith("memory_gib_asleep"):  # missing: its deployment's opening brace
        line -= 1
    assert error.field == field
    assert f"line {line} of fleet.json" in error.message
    assert error.errors[0] == (error.field, error.message)


def test_it_names_every_wrong_field_at_once_in_the_order_of_the_file() -> None:
    document = _set("deployments.0.idle.stop_after_s", 60)
    document["deployments"][1]["priority"] = -1
    document["colour"] = "red"
    error = refusal(document)
    assert [wrong for wrong, _ in error.errors] == [
        "deployments[0].idle.stop_after_s",
        "deployments[1].priority",
        "colour",
    ]
    lines = [int(re.findall(r"line (\d+)", message)[0]) for _, message in error.errors]
    assert lines == sorted(lines)


def test_it_refuses_a_key_given_twice() -> None:
    text = text_of(GOOD).replace('"priority": 80,', '"priority": 80, "priority": 10,')
    with pytest.raises(DefinitionError) as refused:
        parse_fleet(json.loads(text), "fleet.json", text=text)
    assert refused.value.field == "deployments[0].priority"
    line = line_of(text, '"priority": 80')
    assert f"line {line} of" in refused.value.message


def test_it_refuses_a_file_that_is_not_json_at_its_line(tmp_path: Path) -> None:
    text = text_of(GOOD).replace('"priority": 80,', '"priority": 80,,')
    with pytest.raises(DefinitionError) as refused:
        read_fleet(write(tmp_path, text))
    assert refused.value.field == str(tmp_path / "fleet.json")
    assert f"line {line_of(text, '80,,')}, column" in refused.value.message


def test_it_refuses_a_file_it_cannot_read(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError) as refused:
        read_fleet(tmp_path / "missing.json")
    assert "cannot be read" in refused.value.message


def test_without_the_text_it_names_the_field_and_no_line() -> None:
    with pytest.raises(DefinitionError) as refused:
        parse_fleet(_set("deployments.1.priority", 101), "fleet.json")
    assert refused.value.field == "deployments[1].priority"
    assert refused.value.message.startswith("in fleet.json: ")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
PATHS = [
    "gpus",
    "gpus.0",
    "gpus.0.memory_gib",
    "gpus.0.index",
    "deployments",
    "deployments.0",
    "deployments.0.gpus",
    "deployments.0.memory_gib_awake",
    "deployments.0.memory_gib_asleep_2",
    "deployments.0.name",
    "deployments.0.model",
    "deployments.0.time_zone",
    "deployments.0.schedules",
    "deployments.0.schedules.0",
    "deployments.0.schedules.0.days",
    "deployments.0.schedules.1.time",
    "deployments.0.idle",
    "deployments.0.idle.deepen_after_s",
    "deployments.0.durations",
    "deployments.0.durations.wake_1",
    "deployments.1",
    "deployments.1.priority",
    "deployments.1.sleep_level",
]


def _check_any(document: object) -> None:
    """Parse ``document``: a fleet, or a refusal naming fields; any other exception fails."""
    text = json.dumps(document)
    refused: DefinitionError | None = None
    try:
        fleet = parse_fleet(document, "fleet.json", text=text)
    except DefinitionError as error:
        refused = error
    if refused is None:
        assert fleet.deployments
        return
    assert refused.errors
    assert isinstance(refused.field, str)  # a path: "" is the document itself (or a key "")
    assert all(isinstance(wrong, str) and message for wrong, message in refused.errors)
    assert "fleet.json" in refused.message


@settings(max_examples=150, deadline=None)
@given(JSON)
def test_any_json_document_parses_or_is_refused_naming_a_field(document: object) -> None:
    _check_any(document)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(PATHS), JSON)
def test_a_good_file_with_any_value_anywhere_parses_or_is_refused(path: str, value: object) -> None:
    _check_any(_set(path, value))
