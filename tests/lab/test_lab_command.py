"""``dgxmm lab replay``: a trace on a fleet under every policy, in one table or as JSON."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from cli.clikit import run
from lab.labkit import COMMAND_FLEET, lab_fleet

# A Monday: three requests in the morning, one in the afternoon (it meets the schedule's sleep).
REQUESTS = """timestamp,model
2026-06-01T08:00:00+00:00,chat
2026-06-01T08:01:00+00:00,chat
2026-06-01T09:30:00+00:00,chat
2026-06-01T15:00:00+00:00,chat
"""


def files(tmp_path: Path, fleet: dict[str, Any] | None = None) -> tuple[str, str]:
    """Write the fleet file (``COMMAND_FLEET`` unless given) and the requests."""
    document = COMMAND_FLEET.to_json() if fleet is None else fleet
    (tmp_path / "fleet.json").write_text(json.dumps(document))
    (tmp_path / "requests.csv").write_text(REQUESTS)
    return str(tmp_path / "fleet.json"), str(tmp_path / "requests.csv")


def test_it_prints_every_policy_beside_the_oracle(tmp_path: Path) -> None:
    fleet, trace = files(tmp_path)
    done = run("lab", "replay", "--fleet", fleet, "--trace", trace)
    assert done.code == 0, done.err
    lines = done.out.splitlines()
    assert "4 requests, 1 deployment, 24 h" in lines[0]
    assert "the oracles ignore schedules" in lines[0]
    assert "cost = GiB-h held + 0.1 x request-s waited" in lines[0]  # the default price
    policies = [line.split()[0] for line in lines[2:]]
    assert policies == [
        "always-on",
        "ollama-keep-alive-5m",
        "llama-swap-ttl-sleep-5m",
        "knative-scale-to-zero",
        "schedules",
        "proposals",
        "idle-ladder",
        "ladder-wake-ahead",
        "histogram",
        "priced",
        "oracle",
        "lazy-oracle",
    ]
    oracle = lines[-2].split()
    assert (oracle[2], oracle[3]) == ("100.0%", "0")  # its share, and no cold request


def test_its_json_holds_each_policys_figures_and_the_schedules_sleep_meets_a_request(
    tmp_path: Path,
) -> None:
    fleet, trace = files(tmp_path)
    done = run("lab", "replay", "--fleet", fleet, "--trace", trace, "--json")
    assert done.code == 0, done.err
    by_policy = {policy["name"]: policy for policy in done.json()["policies"]}
    assert by_policy["always-on"]["freed_gib_h"] == 0.0
    assert by_policy["always-on"]["cold"] == 0
    # Asleep from 12:00, the 15:00 request is held for one wake.
    assert (by_policy["schedules"]["cold"], by_policy["schedules"]["wakes"]) == (1, 1)
    assert 0 < by_policy["schedules"]["freed_gib_h"] < by_policy["oracle"]["freed_gib_h"]
    assert by_policy["oracle"]["share_of_oracle"] == 1.0


def test_a_wrong_fleet_file_is_refused_naming_the_field_and_nothing_runs(tmp_path: Path) -> None:
    wrong = COMMAND_FLEET.to_json()
    wrong["deployments"][0]["memory_gib_awake"] = -3
    fleet, trace = files(tmp_path, wrong)
    done = run("lab", "replay", "--fleet", fleet, "--trace", trace)
    assert done.code != 0
    assert "deployments[0].memory_gib_awake" in done.err
    assert "POLICY" not in done.out


def test_its_worker_processes_give_the_same_figures(tmp_path: Path) -> None:
    fleet, trace = files(tmp_path)
    alone = run("lab", "replay", "--fleet", fleet, "--trace", trace, "--json")
    two = run("lab", "replay", "--fleet", fleet, "--trace", trace, "--json", "--workers", "2")
    assert (alone.code, two.code) == (0, 0), two.err
    assert two.json() == alone.json()
    refused = run("lab", "replay", "--fleet", fleet, "--trace", trace, "--workers", "0")
    assert refused.code != 0
    assert "--workers" in refused.err


def test_it_prints_each_deployments_figures_under_each_policy_too(tmp_path: Path) -> None:
    (chat,) = COMMAND_FLEET.deployments
    code = replace(chat, name="code", model="code", gpus=(1,), schedules=())
    fleet, trace = files(tmp_path, lab_fleet(chat, code, gpus=2).to_json())
    done = run("lab", "replay", "--fleet", fleet, "--trace", trace)
    assert done.code == 0, done.err
    header, *rest = done.out.split("\n\n")[1].splitlines()
    names = ["POLICY", "FREED GIB-H", "COLD", "SLEEPS", "STOPS", "REFUSED"]
    at = {name: header.index(name) for name in names}

    def cell(line: str, name: str) -> str:  # the table's columns are padded to their names
        return line[at[name] :].split(maxsplit=1)[0]

    rows = {cell(line, "POLICY"): line for line in rest}
    assert set(rows) >= {"schedules/chat", "schedules/code", "idle-ladder/code", "oracle/code"}
    # No request for code all day: the default ladder sleeps it after 5 minutes, deepens it
    # after 15 (a sleep too) and stops it after an hour.
    ladder = rows["idle-ladder/code"]
    assert [cell(ladder, name) for name in ("SLEEPS", "STOPS", "COLD")] == ["2", "1", "0"]
    assert cell(rows["schedules/code"], "FREED GIB-H") == "0.0"  # no schedule: always on


def test_its_json_gives_each_policy_its_waits_and_its_cost_at_the_price(tmp_path: Path) -> None:
    fleet, trace = files(tmp_path)
    done = run("lab", "replay", "--fleet", fleet, "--trace", trace, "--json", "--price", "1")
    assert done.code == 0, done.err
    document = done.json()
    assert document["price"] == 1.0
    by_policy = {policy["name"]: policy for policy in document["policies"]}
    for policy in by_policy.values():
        for key in ("wait_total_s", "wait_mean_s", "wait_p99_all_s", "cost"):
            assert key in policy, (policy["name"], key)
        held = policy["held_awake_gib_h"] + policy["held_asleep_gib_h"]
        assert policy["cost"] == pytest.approx(held + 1.0 * policy["wait_total_s"])
        assert policy["wait_mean_s"] == pytest.approx(policy["wait_total_s"] / policy["requests"])
    # The schedules' one cold request waited a wake, and is the mean's only wait.
    schedules = by_policy["schedules"]
    assert schedules["wait_total_s"] > 0
    assert schedules["cost_over_lazy_oracle"] >= 1.0
    assert by_policy["oracle"]["wait_total_s"] == 0.0
    assert by_policy["lazy-oracle"]["cost_over_lazy_oracle"] == 1.0
    # The lazy oracle costs no more than any anchor that also wakes on arrival.
    for anchor in ("ollama-keep-alive-5m", "llama-swap-ttl-sleep-5m", "knative-scale-to-zero"):
        assert by_policy[anchor]["cost_over_lazy_oracle"] >= 1.0


@pytest.mark.parametrize(
    "price",
    [pytest.param("-0.1", id="negative"), pytest.param("cheap", id="text"),
     pytest.param("nan", id="nan"), pytest.param("inf", id="infinite")],
)  # fmt: skip
def test_a_price_that_is_not_one_is_refused_naming_it_and_nothing_runs(
    tmp_path: Path, price: str
) -> None:
    fleet, trace = files(tmp_path)
    done = run("lab", "replay", "--fleet", fleet, "--trace", trace, "--price", price)
    assert done.code != 0
    assert "price" in done.err
    assert "POLICY" not in done.out


def test_a_price_of_zero_counts_the_memory_alone(tmp_path: Path) -> None:
    fleet, trace = files(tmp_path)
    done = run("lab", "replay", "--fleet", fleet, "--trace", trace, "--json", "--price", "0")
    assert done.code == 0, done.err
    for policy in done.json()["policies"]:
        held = policy["held_awake_gib_h"] + policy["held_asleep_gib_h"]
        assert policy["cost"] == pytest.approx(held)
