"""`dgxmm deployments`, `schedules`, `insights`, `audit` and `proposals` against a live server."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

from cli.clikit import Live
from sqlalchemy import insert
from support import free_port

from dgxmm.decider.proposals.rows import change_proposal
from dgxmm.fleet import InsightKind, Severity
from dgxmm.fleet.backends.process import LOG_NAME
from dgxmm.fleet.deployments.tables import metric_rollups
from dgxmm.store import writing

EXTERNAL = ("--model", "llama-model", "--backend", "external", "--base-url", "http://127.0.0.1:9",
            "--gpus", "0", "--memory-awake", "40", "--memory-asleep", "4")  # fmt: skip


def test_it_creates_changes_plans_and_removes_a_deployment(live: Live) -> None:
    made = live.cli("deployments", "create", "llama", *EXTERNAL, "--json")
    assert made.code == 0, made.err
    key = made.json()["id"]
    listed = live.cli("deployments", "list")
    header, row = listed.out.splitlines()
    assert header.split()[:3] == ["ID", "NAME", "STATE"]
    assert row.split()[:4] == [str(key), "llama", "stopped", "external"]
    changed = live.cli("deployments", "update", "llama", "--priority", "80", "--name", "big")
    assert changed.out.strip() == f"updated deployment big (id {key})", changed.err
    shown = live.cli("deployments", "show", str(key), "--json")  # by id too
    assert (shown.json()["name"], shown.json()["priority"]) == ("big", 80)
    assert live.cli("deployments", "plan", "big").out.strip() == (
        "it fits now: nothing would be evicted"
    )
    events = live.cli("deployments", "events", "big")
    assert events.out.splitlines()[0].split()[:3] == ["AT", "ACTION", "OUTCOME"]
    assert [line.split()[1] for line in events.out.splitlines()[1:]] == ["update", "create"]
    table = live.cli("audit", "list").out.splitlines()
    assert table[0].split() == ["AT", "ACTOR", "ACTION", "SUBJECT", "ID", "WHAT"]
    # Local times, and what changed in a line, not the record's dict.
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d  user:alice", table[1]), table[1]
    assert table[1].endswith("name llama -> big, priority 50 -> 80"), table[1]
    assert table[2].endswith("new llama"), table[2]
    assert max(len(line) for line in table) <= 200
    audit = live.cli("audit", "list", "--json")
    assert [r["action"] for r in audit.json()][:2] == ["deployment.update", "deployment.create"]
    assert audit.json()[0]["actor"] == "user:alice"
    removed = live.cli("deployments", "remove", "big")
    assert removed.out.strip() == f"removed deployment big (id {key})"
    assert live.cli("deployments", "list").out.strip() == "no deployments"


def test_it_exits_2_naming_an_unknown_deployment_or_a_bad_field(live: Live) -> None:
    for args in (("deployments", "show", "ghost"), ("deployments", "start", "ghost"),
                 ("schedules", "list", "ghost"), ("proposals", "list", "ghost")):  # fmt: skip
        answered = live.cli(*args)
        assert (answered.code, answered.err.strip()) == (2, "error: no deployment named 'ghost'")
    bad = live.cli("deployments", "create", "x y", *EXTERNAL, "--priority", "500",
                   "--zone", "Mars/Olympus")  # fmt: skip
    assert bad.code == 2
    # Every wrong field, one line each.
    assert [line.split(":")[:2] for line in bad.err.splitlines()] == [
        ["error", " name"], ["error", " priority"], ["error", " time_zone"]
    ]  # fmt: skip
    assert live.cli("deployments", "list").out.strip() == "no deployments"  # nothing changed
    assert live.cli("proposals", "show", "99").code == 2
    assert live.cli("insights", "dismiss", "99").code == 2


def test_it_manages_a_deployments_schedules(live: Live) -> None:
    assert live.cli("deployments", "create", "llama", *EXTERNAL).code == 0
    made = live.cli("schedules", "create", "llama", "--action", "sleep", "--days", "mon-fri",
                    "--time", "22:00", "--zone", "UTC", "--json")  # fmt: skip
    assert made.code == 0, made.err
    schedule = made.json()
    assert (schedule["days"], schedule["days_text"]) == (31, "Monday to Friday")
    listed = live.cli("schedules", "list", "llama")
    header, row = listed.out.splitlines()
    assert header.split()[:4] == ["ID", "ACTION", "DAYS", "TIME"]
    assert "Monday to Friday  22:00  UTC" in row
    assert live.cli("deployments", "update", "llama", "--wake-lead", "30").code == 0
    woken = live.cli("schedules", "create", "llama", "--action", "wake", "--days", "mon-fri",
                     "--time", "07:00", "--zone", "UTC", "--json")  # fmt: skip
    assert woken.code == 0, woken.err
    assert "begins 30 s early: set: 30 s" in live.cli("schedules", "list", "llama").out
    woken_id = woken.json()["id"]
    assert live.cli("schedules", "delete", "llama", str(woken_id)).code == 0
    changed = live.cli("schedules", "update", "llama", str(schedule["id"]), "--days", "sat,sun")
    assert changed.out.strip() == (
        f"schedule {schedule['id']}: sleep Saturday and Sunday at 22:00 UTC"
    ), changed.err
    bad = live.cli("schedules", "create", "llama", "--action", "sleep", "--days", "someday",
                   "--time", "22:00")  # fmt: skip
    assert (bad.code, bad.err.startswith("error: days: ")) == (2, True)
    late = live.cli("schedules", "create", "llama", "--action", "wake", "--days", "all",
                    "--time", "25:00")  # fmt: skip
    assert (late.code, late.err.startswith("error: time: ")) == (2, True)
    assert live.cli("schedules", "pause-all", "on").out.strip() == "every schedule is paused"
    assert live.schedules.paused_all()
    assert "every schedule is paused" in live.cli("schedules", "list", "llama").out
    assert live.cli("schedules", "pause-all", "off").code == 0
    assert live.cli("schedules", "delete", "llama", str(schedule["id"])).code == 0
    assert live.cli("schedules", "list", "llama").out.strip() == "no schedules for llama"


def test_it_lists_and_dismisses_insights_and_lists_proposals(live: Live) -> None:
    assert live.cli("insights", "list").out.strip() == "no insights"
    key = live.cli("deployments", "create", "llama", *EXTERNAL, "--json").json()["id"]
    insight = live.fleet.insights.raise_insight(
        InsightKind.SCHEDULE_FAILED, deployment_id=key, severity=Severity.WARNING,
        message="the 22:00 sleep failed",
    )  # fmt: skip
    assert insight is not None
    header, row = live.cli("insights", "list", "--deployment", "llama").out.splitlines()
    assert header.split() == ["ID", "AT", "SEVERITY", "KIND", "DEPLOYMENT", "MESSAGE"]
    assert row.endswith("warning   schedule_failed  llama       the 22:00 sleep failed")
    assert live.cli("insights", "dismiss", str(insight.id)).code == 0
    assert live.cli("insights", "list").out.strip() == "no insights"
    assert len(live.cli("insights", "list", "--all", "--json").json()) == 1
    assert live.cli("proposals", "list", "llama").out.strip() == "no proposals for llama"


def test_it_sets_sleep_fields_and_prints_a_server_logs_tail(live: Live) -> None:
    made = live.cli("deployments", "create", "proc", "--model", "m", "--backend", "process",
                    "--command", "python3 -m http.server {port}", "--port", str(free_port()),
                    "--gpus", "0", "--sleep-level", "2", "--sleep-timeout", "30",
                    "--no-wake-on-request", "--json")  # fmt: skip
    assert made.code == 0, made.err
    row = made.json()
    assert (row["command"], row["sleep_level"], row["sleep_timeout_s"], row["wake_on_request"]) == (
        ["python3", "-m", "http.server", "{port}"], 2, 30.0, False,
    )  # fmt: skip
    log = live.fleet.backends.run_dir(row["id"]) / LOG_NAME
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("loading weights\nready\n")
    tail = live.cli("deployments", "log", "proc", "--bytes", "6")
    assert (tail.code, tail.out) == (0, "ready\n")
    assert live.cli("deployments", "log", "proc", "--json").json()["size"] == 22
    assert live.cli("deployments", "create", "ext", *EXTERNAL).code == 0
    external = live.cli("deployments", "log", "ext")
    assert external.code == 2  # an external server's log is not dgxmm's to read
    assert "ext" in external.err


def test_it_sets_shows_and_clears_the_idle_settings(live: Live) -> None:
    made = live.cli("deployments", "create", "idle", *EXTERNAL, "--idle-sleep-after", "300",
                    "--idle-deepen-after", "1800", "--idle-policy", "histogram",
                    "--wake-lead", "measured", "--json")  # fmt: skip
    assert made.code == 0, made.err
    row = made.json()
    assert (row["idle_sleep_after_s"], row["idle_deepen_after_s"], row["idle_stop_after_s"]) == (
        300.0, 1800.0, None,
    )  # fmt: skip
    assert (row["idle_policy"], row["wake_lead"]) == ("histogram", "measured")
    shown = live.cli("deployments", "show", "idle").out.splitlines()
    fields = {line.split()[0]: line.split(maxsplit=1)[1] for line in shown}
    assert fields["idle_sleep_after_s"] == "300.0"
    assert fields["idle_stop_after_s"] == "off"
    assert (fields["idle_policy"], fields["wake_lead"]) == ("histogram", "measured")

    changed = live.cli("deployments", "update", "idle", "--idle-deepen-after", "off",
                       "--idle-stop-after", "7200", "--wake-lead", "45", "--json")  # fmt: skip
    assert changed.code == 0, changed.err
    after = changed.json()
    assert (after["idle_sleep_after_s"], after["idle_deepen_after_s"]) == (300.0, None)
    assert (after["idle_stop_after_s"], after["wake_lead"]) == (7200.0, 45.0)

    before = live.cli("deployments", "show", "idle", "--json").json()
    for args, field in (
        (("--idle-stop-after", "200"), "idle_stop_after_s"),  # before the sleep: out of order
        (("--idle-sleep-after", "-5"), "idle_sleep_after_s"),
        (("--idle-sleep-after", "soon"), "idle_sleep_after_s"),
        (("--idle-policy", "sometimes"), "idle_policy"),
        (("--wake-lead", "soon"), "wake_lead"),
    ):
        refused = live.cli("deployments", "update", "idle", *args)
        assert (refused.code, refused.err.split(":")[:2]) == (2, ["error", f" {field}"]), args
    assert live.cli("deployments", "show", "idle", "--json").json() == before  # nothing changed
    priced = live.cli("deployments", "update", "idle", "--idle-policy", "priced", "--json")
    assert (priced.code, priced.json()["idle_policy"]) == (0, "priced"), priced.err


def test_it_sets_replaces_and_clears_a_wait_budget(live: Live) -> None:
    made = live.cli("deployments", "create", "budgeted", *EXTERNAL, "--idle-policy", "priced",
                    "--wait-budget", "mean_ms=50,p99_s=5", "--json")  # fmt: skip
    assert made.code == 0, made.err
    assert made.json()["idle_wait_budget"] == {"mean_ms": 50.0, "p99_s": 5.0}
    shown = live.cli("deployments", "update", "budgeted", "--wait-budget", "p99_s=2", "--json")
    assert shown.json()["idle_wait_budget"] == {"p99_s": 2.0}  # whole: the mean is gone
    before = live.cli("deployments", "show", "budgeted", "--json").json()
    for text, field in (
        ("mean_ms=-1", "idle_wait_budget.mean_ms"),
        ("mean_ms=soon", "idle_wait_budget.mean_ms"),
        ("p50_s=1", "idle_wait_budget.p50_s"),
        ("50", "idle_wait_budget"),
    ):
        refused = live.cli("deployments", "update", "budgeted", "--wait-budget", text)
        assert (refused.code, refused.err.split(":")[:2]) == (2, ["error", f" {field}"]), text
    assert live.cli("deployments", "show", "budgeted", "--json").json() == before
    cleared = live.cli("deployments", "update", "budgeted", "--wait-budget", "off", "--json")
    assert (cleared.code, cleared.json()["idle_wait_budget"]) == (0, None), cleared.err


def test_it_lists_shows_and_accepts_a_proposal(live: Live) -> None:
    key = live.cli("deployments", "create", "llama", *EXTERNAL, "--zone", "UTC",
                   "--json").json()["id"]  # fmt: skip
    now = live.store.clock.now_us()
    minute = 60_000_000
    start = now - now % minute - 28 * 1440 * minute
    rows = []
    for at_us in range(start, now, 2 * minute):  # four weeks: busy 07:00-22:00 on weekdays
        local = datetime.fromtimestamp(at_us / 1_000_000, UTC)
        busy = local.weekday() < 5 and 7 <= local.hour < 22
        rows.append(
            {"deployment_id": key, "minute_us": at_us, "requests": 2 if busy else 0,
             "mean_running": 1.0 if busy else 0.0, "mean_waiting": 0.0,
             "mean_latency_s": 1.5 if busy else None, "samples": 4}
        )  # fmt: skip
    with writing(live.store.engine) as connection:
        connection.execute(insert(metric_rollups), rows)
    live.proposals.profiles.rebuild(key)
    live.proposals.propose(key)
    listed = live.cli("proposals", "list", "llama", "--status", "open")
    header, *found = listed.out.splitlines()
    assert header.split()[:4] == ["ID", "STATUS", "SLEEP", "WAKE"]
    assert found, "no proposal was made from four weeks of office hours"
    proposal = int(found[0].split()[0])
    shown = live.cli("proposals", "show", str(proposal), "--json").json()
    assert (shown["id"], shown["status"]) == (proposal, "open")
    # A backtest in which 2 requests would have waited: accept asks first.
    # Its one week is a day and a half, with the waits kept since issue 42.
    week = {"start_us": 0, "end_us": 36 * 3600 * 10**6, "freed_gib_h": 100.0, "requests": 40,
            "cold": 2, "wait_p50_s": 1.0, "wait_p99_s": 3.0, "wait_max_s": 3.0,
            "held_gib_h": 50.0, "wait_total_s": 4.0, "wait_mean_s": 0.1, "wait_p99_all_s": 3.0,
            "in_force_wait_total_s": 0.0}  # fmt: skip
    tested = {"learned_from_us": 0, "tested_from_us": 0, "tested_until_us": week["end_us"],
              "held_out": True, "freed_gib_h": 100.0, "cold": 2, "weeks": [week]}  # fmt: skip
    with writing(live.store.engine) as connection:
        change_proposal(connection, proposal, {"backtest": json.dumps(tested)})
    said = live.cli("proposals", "show", str(proposal)).out
    # A fact a line, local times: no dict's repr, no microseconds, no line past a screen.
    assert re.search(r"^  made: +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$", said, re.M), said
    assert "{'" not in said
    assert "_us" not in said
    assert max(len(line) for line in said.splitlines()) <= 120
    assert re.search(r"^  sleep: +\w+ at \d\d:\d\d$", said, re.M), said
    assert "backtest (held out): 1 week of traffic replayed with it" in said
    assert "week 1 (partial: 1.5 of 7 days): frees 100 GiB-h" in said
    assert "2 of 40 requests would have waited (p50 1.0 s, p99 3.0 s)" in said
    assert "added wait 4 request-s, mean 0.100 s, p99 of all 3.0 s; saves 100 GiB-h at 0.1" in said
    priced = live.cli("proposals", "show", str(proposal), "--price", "10").out
    assert "saves 60 GiB-h at 10 GiB-h per request-s" in priced
    refused = live.cli("proposals", "show", str(proposal), "--price", "-1")
    assert refused.code != 0
    assert "price" in refused.err
    asked = live.cli("proposals", "accept", str(proposal))
    assert asked.code == 2
    assert asked.err.startswith("error: yes: 2 requests would have waited")
    assert live.schedules.list(key) == []  # nothing accepted
    accepted = live.cli("proposals", "accept", str(proposal), "--yes", "--json")
    assert accepted.code == 0, accepted.err
    made = [s["id"] for s in accepted.json()["schedules"]]
    assert [s.id for s in live.schedules.list(key)] == made
    assert {s.creator for s in live.schedules.list(key)} == {"user:alice"}
    again = live.cli("proposals", "accept", str(proposal))
    assert again.code == 1  # already accepted: a refusal, not a wrong name


def test_it_prints_the_savings_per_deployment_and_day(live: Live) -> None:
    assert live.cli("deployments", "create", "llama", *EXTERNAL).code == 0
    shown = live.cli("savings", "--deployment", "llama")
    assert shown.code == 0, shown.err
    header, *rows, summary = shown.out.splitlines()
    assert header.split()[:4] == ["DEPLOYMENT", "DAY", "FREED", "GIB-H"]
    assert len(rows) == 7  # the last 7 local days by default
    assert all(row.split()[0] == "llama" for row in rows)
    assert "GiB-hours freed" in summary
    as_json = live.cli("savings", "--from", "2026-01-01", "--to", "2026-01-02", "--json")
    assert [d["day"] for d in as_json.json()["deployments"][0]["days"]] == [
        "2026-01-01",
        "2026-01-02",
    ]
    refused = live.cli("savings", "--from", "someday")
    assert (refused.code, refused.err.startswith("error: from: ")) == (2, True)
    # The waits over every request and the cost at a price (issue 42), who put it down (45).
    assert header.split()[-6:] == ["WAKES", "STARTS", "SLEEPS", "STOPS", "FREED", "BY"]
    assert "WAIT S" in header
    assert "P99 ALL S" in header
    assert "COST" in header
    assert "cost 0.0 GiB-h at 0.1 GiB-h per request-s" in summary
    priced = live.cli("savings", "--price", "2", "--json").json()
    assert priced["price"] == 2.0
    assert {"wait_total_s", "wait_mean_s", "wait_p99_all_s", "cost", "freed_by"} <= set(
        priced["totals"]
    )
    wrong = live.cli("savings", "--price", "-2")
    assert (wrong.code, wrong.err.startswith("error: price: ")) == (2, True)


def test_it_switches_forecast_only_on_and_off(live: Live) -> None:
    on = live.cli("schedules", "forecast-only", "on")
    assert (on.code, on.out.strip()) == (
        0,
        "forecast only: the decider records what it would do, and does none of it",
    )
    assert live.schedules.forecast_only()
    off = live.cli("schedules", "forecast-only", "off", "--json")
    assert off.json() == {"forecast_only": False}


def test_it_sets_replaces_and_drops_aliases(live: Live) -> None:
    made = live.cli("deployments", "create", "llama", *EXTERNAL, "--alias", "chat",
                    "--alias", "llama-fast", "--json")  # fmt: skip
    assert made.code == 0, made.err
    assert made.json()["aliases"] == ["chat", "llama-fast"]
    shown = live.cli("deployments", "show", "llama").out.splitlines()
    assert {line.split()[0]: line.split(maxsplit=1)[1] for line in shown}["aliases"] == (
        "chat, llama-fast"
    )
    taken = live.cli("deployments", "create", "other", "--model", "m2", "--backend", "external",
                     "--base-url", "http://127.0.0.1:9", "--alias", "chat")  # fmt: skip
    assert (taken.code, taken.err.strip()) == (
        1,
        "error: aliases: 'chat' is an alias of deployment 'llama'",
    )
    assert [line.split()[1] for line in live.cli("deployments", "list").out.splitlines()[1:]] == [
        "llama"
    ]  # nothing made
    replaced = live.cli("deployments", "update", "llama", "--alias", "fast", "--json")
    assert replaced.json()["aliases"] == ["fast"]
    dropped = live.cli("deployments", "update", "llama", "--no-aliases", "--json")
    assert dropped.json()["aliases"] == []
    both = live.cli("deployments", "update", "llama", "--alias", "x", "--no-aliases")
    assert (both.code, both.err.split(":")[:2]) == (2, ["error", " alias"])


def test_it_sets_and_lifts_the_proxys_limits(live: Live) -> None:
    made = live.cli("deployments", "create", "busy", *EXTERNAL, "--max-concurrent", "4",
                    "--max-queued", "0", "--loading-progress", "--json")  # fmt: skip
    assert made.code == 0, made.err
    row = made.json()
    limits = ("max_concurrent_requests", "max_queued_requests", "loading_progress")
    assert [row[key] for key in limits] == [4, 0, True]
    bad = live.cli("deployments", "update", "busy", "--max-concurrent", "0")
    assert (bad.code, bad.err.strip()) == (
        2, "error: max_concurrent_requests: 0 is out of range 1-10000",
    )  # fmt: skip
    lifted = live.cli("deployments", "update", "busy", "--max-concurrent", "off",
                      "--no-loading-progress", "--json")  # fmt: skip
    assert (lifted.json()["max_concurrent_requests"], lifted.json()["loading_progress"]) == (
        None, False,
    )  # fmt: skip
