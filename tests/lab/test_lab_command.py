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


# Two requests for a model no deployment of COMMAND_FLEET serves, and one for another.
UNKNOWN = "2026-06-01T10:00:00+00:00,code\n2026-06-01T10:05:00+00:00,code\n"
UNKNOWN += "2026-06-01T11:00:00+00:00,embed\n"


def test_requests_for_models_the_fleet_lacks_are_refused_naming_them_and_their_counts(
    tmp_path: Path,
) -> None:
    fleet, trace = files(tmp_path)
    Path(trace).write_text(REQUESTS + UNKNOWN)
    done = run("lab", "replay", "--fleet", fleet, "--trace", trace)
    assert done.code != 0
    assert "'code' (2 requests)" in done.err
    assert "'embed' (1 request)" in done.err
    assert "--ignore-unknown-models" in done.err
    assert "POLICY" not in done.out


def test_ignore_unknown_models_replays_the_rest_and_says_how_many_were_left_out(
    tmp_path: Path,
) -> None:
    fleet, trace = files(tmp_path)
    Path(trace).write_text(REQUESTS + UNKNOWN)
    done = run("lab", "replay", "--fleet", fleet, "--trace", trace, "--ignore-unknown-models")
    assert done.code == 0, done.err
    first = done.out.splitlines()[0]
    assert first.startswith("4 requests (3 left out, for models the fleet lacks: ")
    assert "'code' 2, 'embed' 1" in first
    # The same figures as the trace without them.
    (tmp_path / "alone").mkdir()
    alone = files(tmp_path / "alone")
    plain = run("lab", "replay", "--fleet", alone[0], "--trace", alone[1], "--json")
    kept = run("lab", "replay", "--fleet", fleet, "--trace", trace, "--json",
               "--ignore-unknown-models")  # fmt: skip
    assert kept.code == 0, kept.err
    assert kept.json() == plain.json()  # stdout stays JSON; the note goes to stderr
    assert "3 requests left out" in kept.err


def test_a_trace_with_no_request_for_the_fleets_models_is_refused_even_when_ignoring(
    tmp_path: Path,
) -> None:
    fleet, trace = files(tmp_path)
    Path(trace).write_text("timestamp,model\n" + UNKNOWN)
    done = run("lab", "replay", "--fleet", fleet, "--trace", trace, "--ignore-unknown-models")
    assert done.code != 0
    assert "no request for the fleet's models" in done.err


def docs_example() -> tuple[dict[str, Any], str]:
    """Return docs/savings.md's fleet file and its Azure command line's model."""
    text = (Path(__file__).parents[2] / "docs" / "savings.md").read_text(encoding="utf-8")
    fleet_part = text.split("## The fleet file", 1)[1]
    fleet = json.loads(fleet_part.split("```json\n", 1)[1].split("```", 1)[0])
    command = next(line for line in text.splitlines() if "--azure" in line and "lab replay" in line)
    return fleet, command.split("--azure", 1)[1].split()[0]


def test_the_docs_azure_example_runs_on_the_docs_fleet_and_meets_cold_requests(
    tmp_path: Path,
) -> None:
    fleet, model = docs_example()
    assert model in {each["model"] for each in fleet["deployments"]}
    (tmp_path / "fleet.json").write_text(json.dumps(fleet))
    # The Azure trace's shape: a busy few minutes on a Monday evening after the 20:00 sleep.
    rows = [f"2026-06-01 19:{minute:02d}:00.0000000,100,10" for minute in range(20, 40)]
    (tmp_path / "azure.csv").write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                        + "\n".join(rows) + "\n")  # fmt: skip
    done = run("lab", "replay", "--fleet", str(tmp_path / "fleet.json"),
               "--trace", str(tmp_path / "azure.csv"), "--azure", model, "--json")  # fmt: skip
    assert done.code == 0, done.err
    by_policy = {policy["name"]: policy for policy in done.json()["policies"]}
    assert by_policy["schedules"]["cold"] >= 1  # the 20:00 Berlin sleep met the requests
    assert by_policy["oracle"]["share_of_oracle"] == 1.0
