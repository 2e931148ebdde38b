"""`dgxmm ... --offline`: every command group on a store in a temp dir, and its errors."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dgxmm.cli import app
from dgxmm.jobs import Channel, Tier
from dgxmm.server import Tokens
from dgxmm.store import Store, Trigger

runner = CliRunner()


def dgxmm(*args: str) -> tuple[int, str, str]:
    offline = () if args[0] == "cron" else ("--offline",)
    result = runner.invoke(app, [*args, *offline])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def data(tmp_path: Path) -> Path:
    place = tmp_path / "data"
    store = Store.open(place / "dgxmm.db", data_dir=place)
    with store.engine.begin() as connection:
        connection.exec_driver_sql("CREATE TABLE notes (id INTEGER PRIMARY KEY, label TEXT)")
    store.close()
    return place


def test_it_previews_a_cron_expression(tmp_path: Path) -> None:
    code, out, _ = dgxmm(
        "cron", "next", "30 2 * * *", "-n", "2", "--zone", "Europe/Berlin", "--json"
    )
    assert code == 0
    body = json.loads(out)
    assert (body["description"], body["zone"], len(body["times"])) == (
        "at 02:30",
        "Europe/Berlin",
        2,
    )
    code, _, err = dgxmm("cron", "next", "61 * * * *")
    assert code == 2
    assert "minute: 61 is out of range 0-59" in err


def test_it_defines_lists_runs_and_drops_queries_and_jobs(data: Path) -> None:
    where = ("--data", str(data))
    assert dgxmm("queries", "define", "add", "--params", '{"label": "string"}',
                 "--body", "INSERT INTO notes (label) VALUES (:label)", *where)[0] == 0  # fmt: skip
    code, out, _ = dgxmm("queries", "list", "--json", *where)
    assert [q["name"] for q in json.loads(out)] == ["add"]
    code, out, _ = dgxmm("jobs", "define", "note", "--schedule", "0 3 * * *", "--action", "query",
                         "--query", "add", "--args", '{"label": "cli"}', *where)  # fmt: skip
    assert code == 0, out
    code, out, _ = dgxmm("jobs", "list", *where)
    assert out.splitlines()[0].split()[:5] == ["NAME", "KIND", "SCHEDULE", "ACTION", "ENABLED"]
    assert out.splitlines()[1].split()[:7] == ["note", "user", "0", "3", "*", "*", "*"]
    code, out, _ = dgxmm("jobs", "run", "note", "--json", *where)
    assert (code, json.loads(out)["outcome"]) == (0, "succeeded")
    with sqlite3.connect(data / "dgxmm.db") as connection:
        assert connection.execute("SELECT label FROM notes").fetchall() == [("cli",)]
    code, out, _ = dgxmm("jobs", "history", "note", "--tier", "days", "--json", *where)
    assert [bucket["count"] for bucket in json.loads(out)] == [1]  # the run was recorded
    assert dgxmm("jobs", "enable", "note", "off", *where)[0] == 0
    assert "off" in dgxmm("jobs", "list", *where)[1]
    code, _, err = dgxmm("jobs", "history", "nope", *where)
    assert (code, err.strip()) == (2, "error: no job named 'nope'")
    code, _, err = dgxmm("queries", "drop", "add", *where)
    assert code == 1
    assert "note" in err  # refused while a job uses it, naming the job
    assert dgxmm("jobs", "drop", "note", *where)[0] == 0
    assert dgxmm("queries", "drop", "add", *where)[0] == 0


def test_it_refuses_a_bad_definition_naming_the_field(data: Path) -> None:
    code, _, err = dgxmm("jobs", "define", "bad", "--schedule", "0 25 * * *",
                         "--action", "checkpoint", "--data", str(data))  # fmt: skip
    assert code == 2
    assert err.strip() == "error: schedule: hour: 25 is out of range 0-23"
    code, _, err = dgxmm("jobs", "define", "bad", "--schedule", "0 3 * * *", "--action", "query",
                         "--args", "{not json", "--data", str(data))  # fmt: skip
    assert code == 2
    assert err.startswith("error: args: not valid JSON")
    code, _, err = dgxmm("jobs", "history", "ghost", "--tier", "weeks", "--data", str(data))
    assert (code, err.strip()) == (2, "error: tier: 'weeks' is not one of minutes, hours, days")


def test_it_defines_a_job_in_its_own_zone_and_refuses_one_that_does_not_exist(data: Path) -> None:
    where = ("--data", str(data))
    code, out, _ = dgxmm("jobs", "define", "ny", "--schedule", "0 3 * * *", "--action",
                         "checkpoint", "--time-zone", "America/New_York", "--json",
                         *where)  # fmt: skip
    assert code == 0, out
    assert json.loads(out)["definition"]["time_zone"] == "America/New_York"
    code, _, err = dgxmm("jobs", "define", "ny", "--schedule", "0 4 * * *", "--action",
                         "checkpoint", "--time-zone", "Mars/Base", *where)  # fmt: skip
    assert code == 2
    assert err.strip().startswith("error: time_zone: unknown time zone 'Mars/Base'")
    code, out, _ = dgxmm("jobs", "list", "--json", *where)
    assert [j["definition"]["schedule"] for j in json.loads(out)] == ["0 3 * * *"]  # unchanged


def test_it_switches_a_job_off_with_a_note_and_lists_it(data: Path) -> None:
    where = ("--data", str(data))
    assert dgxmm("jobs", "define", "cp", "--schedule", "0 3 * * *", "--action", "checkpoint",
                 *where)[0] == 0  # fmt: skip
    code, out, _ = dgxmm("jobs", "enable", "cp", "off", "--note", "new disk on Tuesday", *where)
    assert (code, out.strip()) == (0, "cp is off: new disk on Tuesday")
    assert "switched off: new disk on Tuesday" in dgxmm("jobs", "list", *where)[1]
    code, _, err = dgxmm("jobs", "enable", "cp", "on", "--note", "why", *where)
    assert code == 2
    assert err.strip().startswith("error: note: a pause note goes with switching a job off")
    assert dgxmm("jobs", "enable", "cp", "on", *where)[0] == 0
    assert "new disk" not in dgxmm("jobs", "list", *where)[1]


def test_it_explains_a_time_from_the_stores_records(data: Path) -> None:
    where = ("--data", str(data))
    assert dgxmm("jobs", "define", "cp", "--schedule", "*/10 * * * *", "--action", "checkpoint",
                 "--time-zone", "UTC", *where)[0] == 0  # fmt: skip
    assert dgxmm("jobs", "enable", "cp", "off", "--note", "disk", *where)[0] == 0
    code, out, err = dgxmm("jobs", "explain", "cp", "2020-01-01T10:10:00+00:00", "--json", *where)
    assert code == 0, err
    assert (json.loads(out)["verdict"], json.loads(out)["cause"]) == ("skipped", "not_defined")
    code, out, _ = dgxmm("jobs", "explain", "cp", "2099-01-01T10:10", *where)
    assert out.splitlines()[0] == "cp at 2099-01-01T10:10:00+00:00 (UTC): upcoming"
    assert "switched off now" in out.splitlines()[1]
    code, _, err = dgxmm("jobs", "explain", "cp", "2026-02-30T10:10", *where)
    assert (code, err.split(":")[:2]) == (2, ["error", " time"])


def test_it_defines_a_job_with_retries_and_refuses_retries_without_a_wait(data: Path) -> None:
    where = ("--data", str(data))
    code, out, err = dgxmm("jobs", "define", "cp", "--schedule", "0 3 * * *", "--action",
                           "checkpoint", "--retries", "3", "--retry-backoff-s", "30",
                           "--retry-backoff-max-s", "300", "--json", *where)  # fmt: skip
    assert code == 0, err
    definition = json.loads(out)["definition"]
    assert (definition["retries"], definition["retry_backoff_s"]) == (3, 30.0)
    code, _, err = dgxmm("jobs", "define", "cp", "--schedule", "0 3 * * *", "--action",
                         "checkpoint", "--retries", "2", *where)  # fmt: skip
    assert (code, err.strip()) == (
        2,
        "error: retry_backoff_s: 2 retries need a first wait, in seconds",
    )


def test_it_runs_store_operations_with_a_progress_bar(data: Path, tmp_path: Path) -> None:
    where = ("--data", str(data))
    assert dgxmm("store", "checkpoint", *where)[0] == 0
    code, out, err = dgxmm("store", "backup", str(tmp_path / "b"), "--progress", "--json", *where)
    assert code == 0
    assert json.loads(out)["method"] == "full"
    assert "backup" in err  # the bar, on stderr
    pages = json.loads(out)["items"]
    assert f"{pages}/{pages}" in err
    code, out, err = dgxmm(
        "store", "restore", str(tmp_path / "b"), str(tmp_path / "r.db"), "--progress", *where
    )
    assert code == 0
    assert "restore" in err
    assert out.startswith("restored run 1 into")
    assert dgxmm("store", "compact", *where)[0] == 0
    code, _, err = dgxmm("store", "restore", str(tmp_path / "b"), str(tmp_path / "r.db"), *where)
    assert code == 1
    assert "exists" in err


def test_it_exports_and_imports_the_catalog(data: Path, tmp_path: Path) -> None:
    where = ("--data", str(data))
    dgxmm("jobs", "define", "cp", "--schedule", "0 3 * * *", "--action", "checkpoint", *where)
    assert dgxmm("catalog", "export", str(tmp_path / "catalog.json"), *where)[0] == 0
    other = tmp_path / "other"
    other.mkdir()  # --offline opens a database only in a data directory that exists
    code, out, _ = dgxmm("catalog", "import", str(tmp_path / "catalog.json"), "--data", str(other))
    assert code == 0, out
    assert "imported 0 queries and 1 job" in out


def test_it_creates_tokens_of_a_role(data: Path) -> None:
    code, out, _ = dgxmm(
        "token", "create", "--role", "viewer", "--name", "ops", "--data", str(data)
    )
    assert code == 0
    assert out.strip().startswith("dgxmm_")
    code, _, err = dgxmm("token", "create", "--role", "root", "--data", str(data))
    assert code == 2
    assert "role" in err
    code, _, err = dgxmm("token", "create", "--expires-in-days", "4000", "--data", str(data))
    assert code == 2
    assert "expires_in_days" in err
    code, out, _ = dgxmm("token", "create", "--expires-in-days", "30", "--data", str(data))
    assert (code, out.strip().startswith("dgxmm_")) == (0, True)


def test_it_refuses_a_query_that_writes_the_audit_log_or_the_tokens(data: Path) -> None:
    # In a process of its own: the CLI must know these tables are protected without the
    # server (which registers them) having been imported by anything else.
    for table in ("audit_log", "api_tokens"):
        done = subprocess.run(
            [sys.executable, "-m", "dgxmm", "queries", "define", "sneaky", "--body",
             f"DELETE FROM {table}", "--data", str(data), "--offline"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert table in done.stderr


def test_it_lists_tokens_and_revokes_one_by_its_id(data: Path) -> None:
    code, out, _ = dgxmm("token", "create", "--role", "admin", "--name", "ops", "--data", str(data))
    token = out.strip()
    code, listed, _ = dgxmm("token", "list", "--json", "--data", str(data))
    assert code == 0
    (ops,) = [t for t in json.loads(listed)["tokens"] if t["name"] == "ops"]
    assert (ops["role"], ops["state"]) == ("admin", "live")
    assert token not in listed  # the list never carries a token
    code, shown, _ = dgxmm("token", "list", "--data", str(data))
    assert "ops" in shown
    assert "live" in shown
    assert dgxmm("token", "revoke", str(ops["id"]), "--data", str(data))[:2] == (
        0,
        f"revoked token {ops['id']}\n",
    )
    code, _, err = dgxmm("token", "revoke", str(ops["id"]), "--data", str(data))
    assert code == 2  # no live token of that id
    assert "no live token" in err
    assert dgxmm("token", "revoke", token, "--data", str(data))[0] == 2  # a secret is no id
    store = Store.open(data / "dgxmm.db", data_dir=data)
    try:
        assert Tokens(store.engine, store.clock).identify(token) is None
    finally:
        store.close()


def test_the_tokens_module_loads_without_scikit_learn() -> None:
    # `dgxmm token revoke --offline` took 5-10 s: importing the server package brought the
    # decider's feedback model, and through it scikit-learn and SciPy, into every command.
    done = subprocess.run(
        [sys.executable, "-c", "import sys, dgxmm.server.access.tokens; "
         "print(sorted(m for m in ('sklearn', 'scipy') if m in sys.modules))"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout.strip() == "[]"


def test_it_lists_restores_and_removes_the_attic(data: Path) -> None:
    where = ("--data", str(data))
    dgxmm("jobs", "define", "cp", "--schedule", "0 3 * * *", "--action", "checkpoint", *where)
    assert dgxmm("jobs", "drop", "cp", *where)[0] == 0
    code, out, _ = dgxmm("attic", "list", "--json", *where)
    assert [(e["kind"], e["name"], e["dropped_by"]) for e in json.loads(out)] == [
        ("job", "cp", "cli")
    ]
    code, out, _ = dgxmm("attic", "restore", "job", "cp", *where)
    assert (code, out) == (0, "restored job cp (catalog version 3)\n")
    code, _, err = dgxmm("attic", "restore", "job", "cp", *where)
    assert code == 2  # nothing of that name in the attic
    assert "not found" in err.lower() or "attic" in err
    assert dgxmm("jobs", "drop", "cp", *where)[0] == 0
    code, out, _ = dgxmm("attic", "remove", "job", "cp", *where)
    assert code == 0, out
    assert dgxmm("attic", "list", *where)[1] == "the attic is empty\n"
    assert dgxmm("attic", "remove", "setting", "cp", *where)[0] == 2


def test_it_rolls_the_catalog_back_with_a_preview(data: Path) -> None:
    where = ("--data", str(data))
    dgxmm("jobs", "define", "cp", "--schedule", "0 3 * * *", "--action", "checkpoint", *where)
    dgxmm("jobs", "drop", "cp", *where)
    code, out, _ = dgxmm("catalog", "rollback", "1", "--dry-run", *where)
    assert (code, out) == (0, "a rollback to version 1 would change:\ndefine job cp\n")
    assert "cp" not in dgxmm("jobs", "list", *where)[1]
    code, out, _ = dgxmm("catalog", "rollback", "1", "--json", *where)
    assert (code, json.loads(out)["version"]) == (0, 3)
    assert dgxmm("jobs", "list", *where)[1].splitlines()[1].startswith("cp ")
    code, out, _ = dgxmm("catalog", "rollback", "3", *where)
    assert out == "nothing to change: the catalog is as it was at version 3\n"
    code, _, err = dgxmm("catalog", "rollback", "9", *where)
    assert code == 2
    assert "version: 9 is out of range" in err


def test_it_runs_a_reading_query_counted_under_cli_when_the_store_closes(data: Path) -> None:
    where = ("--data", str(data))
    assert dgxmm("queries", "define", "n", "--body", "SELECT count(*) FROM notes", *where)[0] == 0
    code, out, err = dgxmm("queries", "run", "n", *where)
    assert (code, out.strip()) == (0, "ran n: 1 statement; 0 rows changed; 1 row returned")
    code, _, err = dgxmm("queries", "run", "n", "--args", "[1]", *where)
    assert (code, err.strip()) == (2, "error: args: expected an object of {parameter: value}")
    with Store.open(data / "dgxmm.db", data_dir=data) as store:  # the sidecar written at close
        buckets = store.workload_stats.channel_history(Channel.CLI, Tier.DAYS)
    assert sum(b.count for b in buckets) == 1


def test_it_defines_a_job_with_a_catch_up_and_an_overlap_and_refuses_a_negative_window(
    data: Path,
) -> None:
    where = ("--data", str(data))
    code, out, err = dgxmm("jobs", "define", "cp", "--schedule", "0 3 * * *", "--action",
                           "checkpoint", "--catchup-window-s", "3600", "--coalesce", "earliest",
                           "--overlap", "cancel_other", "--json", *where)  # fmt: skip
    assert code == 0, err
    definition = json.loads(out)["definition"]
    assert (definition["catchup_window_s"], definition["coalesce"], definition["overlap"]) == (
        3600.0,
        "earliest",
        "cancel_other",
    )
    code, _, err = dgxmm("jobs", "define", "cp", "--schedule", "0 3 * * *", "--action",
                         "checkpoint", "--catchup-window-s", "-5", *where)  # fmt: skip
    assert code == 2
    assert err.startswith("error: catchup_window_s: expected a positive number of seconds")
    code, _, err = dgxmm("jobs", "define", "cp", "--schedule", "0 3 * * *", "--action",
                         "checkpoint", "--overlap", "queue", *where)  # fmt: skip
    assert code == 2
    assert "queue" in err


def test_it_asks_to_cancel_a_run_and_refuses_an_unknown_or_ended_one(data: Path) -> None:
    where = ("--data", str(data))
    code, _, err = dgxmm("jobs", "cancel", "4242", *where)
    assert code != 0
    assert "4242" in err
    store = Store.open(data / "dgxmm.db", data_dir=data)
    try:
        scheduler = store.scheduler("UTC")
        started = scheduler.start_now("stats_flush", store.clock.now_us())
        run_id = store.runs.claim(started, Trigger.CLI)
        assert run_id is not None
        code, out, err = dgxmm("jobs", "cancel", str(run_id), *where)
        assert code == 0, err
        assert (
            out.strip() == f"run {run_id} of stats_flush: cancel asked by cli (on {store.instance})"
        )
        assert store.runs.cancels_requested() == [(run_id, "cli")]
        store.runs.finish(run_id, started.run())
        code, _, err = dgxmm("jobs", "cancel", str(run_id), *where)
        assert code != 0
        assert "has ended: succeeded" in err
    finally:
        store.close()
