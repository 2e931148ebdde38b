"""`dgxmm jobs`, `queries`, `store`, `catalog`, `attic` and `token` against a live server."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

from cli.clikit import Live

from dgxmm.jobs import Outcome
from dgxmm.server import Role, Tokens


def test_it_defines_runs_and_switches_jobs_on_the_server(live: Live) -> None:
    assert live.cli("queries", "define", "add", "--params", '{"label": "string"}',
                    "--body", "INSERT INTO notes (label) VALUES (:label)").code == 0  # fmt: skip
    queries = live.cli("queries", "list")
    assert queries.out.splitlines()[0].split() == ["NAME", "PARAMETERS", "SQL"]
    defined = live.cli("jobs", "define", "note", "--schedule", "0 3 * * *", "--action", "query",
                       "--query", "add", "--args", '{"label": "cli"}')  # fmt: skip
    assert defined.code == 0, defined.err
    listed = live.cli("jobs", "list")
    header, *rows = listed.out.splitlines()
    assert header.split()[:4] == ["NAME", "KIND", "SCHEDULE", "ACTION"]
    assert any(row.split()[:2] == ["stats_flush", "system"] for row in rows)  # the server's
    ran = live.cli("jobs", "run", "note", "--json")
    assert (ran.code, ran.json()["outcome"]) == (0, "succeeded")
    with live.store.engine.begin() as connection:
        labels = connection.exec_driver_sql("SELECT label FROM notes").fetchall()
    assert labels == [("cli",)]  # the server ran it, in its database
    history = live.cli("jobs", "history", "note", "--tier", "days", "--json")
    assert [bucket["count"] for bucket in history.json()] == [1]
    header, row = live.cli("jobs", "runs", "note").out.splitlines()
    assert header.split() == ["ID", "STARTED", "TRIGGER", "OUTCOME", "MS", "ERROR", "OR", "RESULT"]
    assert re.match(r"\d+ +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +manual +succeeded ", row), row
    assert [r["job"] for r in live.cli("jobs", "runs", "note", "--json").json()] == ["note"]
    assert live.cli("jobs", "enable", "note", "off").out.strip() == "note is off"
    note = next(j for j in live.cli("jobs", "list", "--json").json() if j["name"] == "note")
    assert note["enabled"] is False
    assert live.cli("jobs", "enable", "note", "on").code == 0
    refused = live.cli("queries", "drop", "add")
    assert refused.code == 1
    assert "note" in refused.err  # refused while a job uses it, naming the job
    assert live.cli("jobs", "drop", "note").code == 0
    assert live.cli("queries", "drop", "add").code == 0


def test_it_exits_2_naming_an_unknown_job(live: Live) -> None:
    history = live.cli("jobs", "history", "nope")
    assert history.code == 2
    assert "nope" in history.err
    for args in (("jobs", "enable", "nope", "on"), ("jobs", "run", "nope"),
                 ("jobs", "drop", "nope")):  # fmt: skip
        answered = live.cli(*args)
        assert (answered.code, "nope" in answered.err) == (2, True), args
    bad = live.cli("jobs", "enable", "stats_flush", "maybe")
    assert bad.code == 2  # on or off, said by the argument's parser
    bad_cron = live.cli("jobs", "define", "bad", "--schedule", "0 25 * * *", "--action",
                        "checkpoint")  # fmt: skip
    assert (bad_cron.code, bad_cron.err.strip()) == (
        2,
        "error: schedule: hour: 25 is out of range 0-23",
    )


def test_it_runs_store_and_catalog_operations_on_the_server(live: Live, tmp_path: Path) -> None:
    assert live.cli("store", "checkpoint").code == 0
    backup = live.cli("store", "backup", str(tmp_path / "b"), "--json")
    assert (backup.code, backup.json()["method"]) == (0, "full")
    restored = live.cli("store", "restore", str(tmp_path / "b"), str(tmp_path / "r.db"))
    assert restored.out.startswith("restored run 1 into"), restored.err
    assert live.cli("jobs", "define", "cp", "--schedule", "0 3 * * *",
                    "--action", "checkpoint").code == 0  # fmt: skip
    exported = live.cli("catalog", "export", str(tmp_path / "catalog.json"))
    assert exported.out.strip() == f"wrote {tmp_path / 'catalog.json'}: 0 queries, 1 job"
    assert live.cli("jobs", "drop", "cp").code == 0
    imported = live.cli("catalog", "import", str(tmp_path / "catalog.json"))
    assert "imported 0 queries and 1 job" in imported.out, imported.err
    assert "cp" in [job.name for job in live.store.jobs()]
    dry = live.cli("catalog", "rollback", "0", "--dry-run")
    assert dry.out.splitlines() == ["a rollback to version 0 would change:", "drop job cp"]
    assert live.cli("jobs", "drop", "cp").code == 0
    attic = live.cli("attic", "list")
    assert attic.out.splitlines()[0].split()[:3] == ["ID", "KIND", "NAME"]
    back = live.cli("attic", "restore", "job", "cp")
    assert back.out.startswith("restored job cp"), back.err
    assert live.cli("attic", "restore", "job", "ghost").code == 2


def test_it_creates_and_revokes_tokens_on_the_server(live: Live) -> None:
    made = live.cli("token", "create", "--role", "viewer", "--name", "ops")
    token = made.out.strip()
    assert token.startswith("dgxmm_")
    tokens = Tokens(live.store.engine, live.store.clock)
    identity = tokens.identify(token)
    assert identity is not None
    assert (identity.name, identity.role) == ("ops", Role.VIEWER)
    (ops,) = [t for t in json.loads(live.cli("token", "list", "--json").out)["tokens"]
              if t["name"] == "ops"]  # fmt: skip
    assert (ops["role"], ops["state"]) == ("viewer", "live")
    assert live.cli("token", "revoke", str(ops["id"])).out.strip() == f"revoked token {ops['id']}"
    assert tokens.identify(token) is None
    again = live.cli("token", "revoke", str(ops["id"]))
    assert again.code == 2
    listed = live.cli("token", "list").out
    assert "revoked" in listed
    assert token not in listed
    assert live.cli("token", "create", "--role", "root").code == 2
    expiring = live.cli("token", "create", "--name", "week", "--expires-in-days", "7")
    row = next(r for r in Tokens(live.store.engine, live.store.clock).list() if r.name == "week")
    assert (expiring.code, row.expires_at is not None) == (0, True)
    assert live.cli("token", "create", "--expires-in-days", "0").code == 2


def test_it_explains_a_time_on_the_server_and_refuses_a_bad_one(live: Live) -> None:
    assert live.cli("jobs", "define", "cp", "--schedule", "30 2 * * *", "--action", "checkpoint",
                    "--time-zone", "Europe/Berlin").code == 0  # fmt: skip
    told = live.cli("jobs", "explain", "cp", "2030-03-31T02:30", "--json")
    assert told.code == 0, told.err
    body = told.json()
    assert (body["verdict"], body["moved"], body["time"]) == (
        "upcoming", True, "2030-03-31T03:00:00+02:00",
    )  # fmt: skip
    text = live.cli("jobs", "explain", "cp", "2030-03-31T12:00:00+02:00")
    assert text.out.splitlines()[0] == "cp at 2030-03-31T12:00:00+02:00 (Europe/Berlin): not_a_time"
    bad = live.cli("jobs", "explain", "cp", "soon")
    assert (bad.code, bad.err.strip()) == (2, "error: time: 'soon' is not an ISO 8601 time")


def test_it_cancels_a_run_under_way_on_the_server(live: Live) -> None:
    endless = (
        "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) SELECT count(*) FROM c"
    )
    assert live.cli("queries", "define", "endless", "--body", endless).code == 0
    assert live.cli("jobs", "define", "forever", "--schedule", "0 3 * * *", "--action", "query",
                    "--query", "endless", "--overlap", "cancel_other").code == 0  # fmt: skip
    worker = threading.Thread(target=live.cli, args=("jobs", "run", "forever"), daemon=True)
    worker.start()
    deadline = time.monotonic() + 10
    while not live.store.runs.page(job="forever"):  # claimed before it starts
        assert time.monotonic() < deadline
        time.sleep(0.02)
    (run,) = live.store.runs.page(job="forever")
    cancelled = live.cli("jobs", "cancel", str(run.id), "--json")
    assert cancelled.code == 0, cancelled.err
    worker.join(10)
    assert not worker.is_alive()
    ended = live.store.runs.get(run.id)
    assert ended is not None
    assert (ended.outcome, ended.cancelled_by) == (Outcome.CANCELLED, "user:alice")
    again = live.cli("jobs", "cancel", str(run.id))
    assert (again.code, "has ended: cancelled" in again.err) == (1, True)
