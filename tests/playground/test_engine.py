"""The playground's engine in CPython: the same module the browser's worker runs."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from support import at

from dgxmm.playground import NO_FILES, Playground

T0 = at("2026-06-01T10:00:30+00:00")
MINUTE = 60_000_000


def call(engine: Playground, method: str, path: str, body: Any = None, now: int = T0) -> Any:
    answer = json.loads(
        engine.handle(method, path, None if body is None else json.dumps(body), now)
    )
    return answer["status"], answer["body"]


@pytest.fixture
def engine() -> Playground:
    made = Playground("America/New_York")
    made.tick(T0)  # the first tick only plans
    status, _ = call(
        made,
        "POST",
        "/api/queries/define",
        {
            "name": "note",
            "params": {"label": "string"},
            "body": "CREATE TABLE IF NOT EXISTS notes (label TEXT); "
            "INSERT INTO notes VALUES (:label)",
        },
    )
    assert status == 200
    return made


def test_it_runs_a_query_job_at_its_time_in_the_browsers_zone(engine: Playground) -> None:
    status, row = call(
        engine,
        "POST",
        "/api/jobs/define",
        {"name": "every", "schedule": "* * * * *", "action": "query", "query": "note",
         "args": {"label": "x"}},
    )  # fmt: skip
    assert (status, row["kind"], row["schedule"]) == (200, "user", "* * * * *")
    assert engine.tick(T0 + MINUTE) == ["stats_flush", "every"]
    assert engine.tick(T0 + 2 * MINUTE) == ["stats_flush", "every"]
    _, listed = call(engine, "GET", "/api/jobs", now=T0 + 2 * MINUTE)
    assert listed["time_zone"] == "America/New_York"
    assert [j["name"] for j in listed["jobs"]] == ["stats_flush", "compact", "every"]
    every = listed["jobs"][2]
    assert every["last_run"]["outcome"] == "succeeded"
    assert every["last_run"]["started_at"] == "2026-06-01T06:02:30-04:00"
    assert every["runs"]["last_two_days"] == 2
    assert engine.catalog.db.execute("SELECT count(*) FROM notes").fetchone() == (2,)
    _, workload = call(engine, "GET", "/api/workload")
    assert sum(b["count"] for b in workload["job"]["minutes"]) == 2


def test_it_answers_every_wrong_field_and_refuses_a_backup_job(engine: Playground) -> None:
    status, body = call(
        engine,
        "POST",
        "/api/jobs/define",
        {"name": "b", "schedule": "61 * * * *", "action": "backup", "path": "x", "timeout_ms": 0},
    )
    assert status == 400
    assert (body["field"], body["message"]) == ("path", NO_FILES)
    assert [e["field"] for e in body["errors"]] == ["path", "schedule", "timeout_ms"]
    status, body = call(
        engine, "POST", "/api/jobs/define", {"name": "q", "schedule": "@daily", "action": "query",
                                             "query": "note", "args": {}}
    )  # fmt: skip
    assert (status, body["field"]) == (400, "args")
    assert [j["name"] for j in call(engine, "GET", "/api/jobs")[1]["jobs"]] == [
        "stats_flush",
        "compact",
    ]


def test_it_runs_a_job_in_its_own_zone_and_refuses_a_zone_that_does_not_exist(
    engine: Playground,
) -> None:
    tokyo = {"name": "tokyo", "schedule": "0 9 * * *", "action": "checkpoint",
             "time_zone": "Asia/Tokyo"}  # fmt: skip
    status, row = call(engine, "POST", "/api/jobs/define", tokyo)
    assert (status, row["time_zone"]) == (200, "Asia/Tokyo")
    engine.tick(T0 + MINUTE)  # planned from the previous tick, in Tokyo
    _, listed = call(engine, "GET", "/api/jobs")
    shown = next(j for j in listed["jobs"] if j["name"] == "tokyo")
    assert shown["next_at"] == "2026-06-02T09:00:00+09:00"
    bad = tokyo | {"schedule": "61 * * * *", "time_zone": "Mars/Base"}
    status, body = call(engine, "POST", "/api/jobs/define", bad)
    assert status == 400
    assert [e["field"] for e in body["errors"]] == ["schedule", "time_zone"]
    assert "unknown time zone 'Mars/Base'" in body["errors"][1]["message"]
    _, listed = call(engine, "GET", "/api/jobs")
    assert next(j for j in listed["jobs"] if j["name"] == "tokyo")["schedule"] == "0 9 * * *"


def test_it_pauses_a_job_with_a_note_and_drops_the_note_when_it_is_on(
    engine: Playground,
) -> None:
    call(engine, "POST", "/api/jobs/define", {"name": "cp", "schedule": "0 3 * * *",
                                              "action": "checkpoint"})  # fmt: skip
    for name in ("cp", "stats_flush"):
        status, row = call(
            engine, "POST", "/api/jobs/enable", {"name": name, "enabled": False, "note": "later"}
        )
        assert (status, row["enabled"], row["pause_note"]) == (200, False, "later")
    status, body = call(engine, "POST", "/api/jobs/enable", {"name": "cp", "enabled": True,
                                                             "note": "x"})  # fmt: skip
    assert (status, body["field"]) == (400, "note")
    _, row = call(engine, "POST", "/api/jobs/enable", {"name": "cp", "enabled": True})
    assert (row["enabled"], row["pause_note"]) == (True, None)


def test_it_defines_retries_and_refuses_them_without_a_wait(engine: Playground) -> None:
    keys = {"name": "cp", "schedule": "0 3 * * *", "action": "checkpoint", "retries": 2,
            "retry_backoff_s": 60}  # fmt: skip
    status, row = call(engine, "POST", "/api/jobs/define", keys)
    assert (status, row["retries"], row["retry_backoff_s"]) == (200, 2, 60)
    assert engine.scheduler.get("cp").retry.retries == 2
    status, body = call(engine, "POST", "/api/jobs/define", keys | {"retry_backoff_s": None})
    assert (status, body["field"]) == (400, "retry_backoff_s")


def test_it_defines_a_catch_up_and_an_overlap_and_refuses_a_wrong_one(engine: Playground) -> None:
    keys = {"name": "cp", "schedule": "0 3 * * *", "action": "checkpoint",
            "catchup_window_s": 600, "coalesce": "earliest", "overlap": "cancel_other"}  # fmt: skip
    status, row = call(engine, "POST", "/api/jobs/define", keys)
    assert (status, row["catchup_window_s"], row["coalesce"], row["overlap"]) == (
        200, 600, "earliest", "cancel_other",
    )  # fmt: skip
    job = engine.scheduler.get("cp")
    assert job.catch_up is not None
    assert job.catch_up.coalesce.value == "earliest"
    assert job.overlap.value == "cancel_other"
    status, body = call(engine, "POST", "/api/jobs/define", keys | {"catchup_window_s": -1})
    assert (status, body["field"]) == (400, "catchup_window_s")
    assert engine.scheduler.get("cp").catch_up == job.catch_up  # nothing changed


def test_it_runs_now_switches_reschedules_and_drops(engine: Playground) -> None:
    call(engine, "POST", "/api/jobs/define", {"name": "cp", "schedule": "0 3 * * *",
                                              "action": "checkpoint"})  # fmt: skip
    status, ran = call(engine, "POST", "/api/jobs/run", {"name": "cp"})
    assert (status, ran["outcome"]) == (200, "succeeded")
    assert engine.checkpoint is not None
    _, row = call(engine, "POST", "/api/jobs/enable", {"name": "cp", "enabled": False})
    assert row["enabled"] is False
    _, row = call(
        engine, "POST", "/api/jobs/schedule", {"name": "compact", "schedule": "0 4 * * *"}
    )
    assert (row["schedule"], row["builtin_schedule"]) == ("0 4 * * *", "0 3 * * *")
    status, body = call(engine, "POST", "/api/jobs/drop", {"name": "stats_flush"})
    assert (status, body["field"]) == (400, "name")
    assert call(engine, "POST", "/api/jobs/drop", {"name": "cp"})[0] == 200
    assert call(engine, "POST", "/api/jobs/run", {"name": "cp"})[0] == 404


def test_it_counts_a_query_run_from_the_page_under_the_playground(engine: Playground) -> None:
    status, body = call(
        engine, "POST", "/api/queries/run", {"name": "note", "args": {"label": "p"}}
    )
    assert (status, body["detail"]) == (200, "2 statements; 1 row changed; 0 rows returned")
    _, workload = call(engine, "GET", "/api/workload")
    assert sum(b["count"] for b in workload["playground"]["days"]) == 1


def test_it_imports_only_the_jobs_engine_and_the_standard_library() -> None:
    # What the browser's worker can load: the standard library, tzdata and dgxmm's wheel.
    code = "import json, sys, dgxmm.playground; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(done.stdout)
    heavy = {"sqlalchemy", "alembic", "sqlglot", "psycopg", "fastapi", "pydantic", "httpx"}
    assert sorted(name for name in loaded if name.split(".")[0] in heavy) == []
    ours = {name.split(".")[1] for name in loaded if name.startswith("dgxmm.")}
    # The foundation's modules are standard library only (the scheduler tells telemetry.py).
    assert ours <= {"jobs", "playground", "errors", "clock", "time_units", "telemetry", "words"}, (
        ours
    )
