"""GET /api/changes: a page's cheap "what changed since" poll."""

from __future__ import annotations

import threading

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import event
from support import wait_for

from dgxmm.server import Host
from dgxmm.store import Topic, writing
from dgxmm.store.versions import KEEP_S
from dgxmm.time_units import MINUTE_US


def version(client: TestClient, since: str | None = None) -> dict[str, object]:
    query = {"topics": "jobs"} | ({"since": since} if since else {})
    answer = client.get("/api/changes", params=query)
    assert answer.status_code == 200, answer.text
    body: dict[str, object] = answer.json()
    return body


def test_it_says_unchanged_until_a_job_runs(client: TestClient, host: Host) -> None:
    host.store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    host.sync()
    first = version(client)
    assert first["changed"] is True  # nothing seen yet
    again = version(client, str(first["version"]))
    assert again == {**first, "changed": False, "keys": {"jobs": []}}
    host.run_now("cp")
    after = version(client, str(first["version"]))
    assert after["changed"] is True
    assert after["version"] != first["version"]


def test_it_refuses_a_topic_it_does_not_know(client: TestClient) -> None:
    answer = client.get("/api/changes", params={"topics": "jobs,nope"})
    assert answer.status_code == 400
    assert answer.json()["field"] == "topics"
    assert "'nope' is not one of jobs, deployments, insights" in answer.json()["message"]


def test_it_needs_a_token(client: TestClient) -> None:
    del client.headers["Authorization"]
    assert client.get("/api/changes").status_code == 401


def test_it_answers_from_the_counters_with_one_query_whatever_the_jobs(
    client: TestClient, host: Host
) -> None:
    for i in range(30):
        host.store.define_job(name=f"cp{i}", schedule="0 3 * * *", action="checkpoint")
    host.sync()
    statements: list[str] = []

    def count(*args: object) -> None:
        if threading.current_thread().name != "dgxmm-versions":  # the keeper's own reads
            statements.append(str(args[2]))

    event.listen(host.store.engine, "before_cursor_execute", count)
    try:
        version(client)  # the first poll reads, and starts keeping the counters
        queries = [s for s in statements if not s.startswith(("BEGIN", "COMMIT", "ROLLBACK"))]
        others = [s for s in queries if "api_tokens" not in s]  # but the viewer's token
        assert len(others) == 1
        assert "change_versions" in others[0]
        wait_for(lambda: host.store.versions.latest([Topic.JOBS]) is not None, "kept counters")
        statements.clear()
        first = version(client)
        again = version(client, str(first["version"]))
        assert again == {**first, "changed": False, "keys": {"jobs": []}}
        assert statements == []  # kept: neither the counters nor the token are asked
    finally:
        event.remove(host.store.engine, "before_cursor_execute", count)


def test_a_change_of_another_process_is_seen_within_the_keepers_interval(
    client: TestClient, host: Host
) -> None:
    first = version(client)
    wait_for(lambda: host.store.versions.latest([Topic.JOBS]) is not None, "kept counters")
    # Another process (the CLI, another instance) bumps the counter behind this one's back.
    with writing(host.store.engine) as connection:
        connection.exec_driver_sql(
            "UPDATE change_versions SET version = version + 1 WHERE topic = 'jobs'"
        )
    wait_for(
        lambda: version(client, str(first["version"]))["changed"] is True,
        "the other process's change",
        timeout_s=10 * KEEP_S,
    )


def test_it_says_changed_after_a_define_on_the_store(client: TestClient, host: Host) -> None:
    first = version(client)
    host.store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    after = version(client, str(first["version"]))
    assert after["changed"] is True


def test_it_names_the_jobs_whose_runs_moved_and_none_after_a_define(
    client: TestClient, host: Host
) -> None:
    for name in ("cp", "other"):
        host.store.define_job(name=name, schedule="0 3 * * *", action="checkpoint")
    host.sync()
    first = str(version(client)["version"])
    host.run_now("cp")  # its claim and its end in the store, its start and end in the host
    after = version(client, first)
    assert after["keys"] == {"jobs": ["cp"]}
    host.store.define_job(name="late", schedule="0 4 * * *", action="checkpoint")
    host.sync()
    # A define may add a row or move the order: the page is fetched whole.
    assert version(client, first)["keys"] == {"jobs": None}
    later = str(version(client)["version"])
    host.run_now("other")
    assert version(client, later)["keys"] == {"jobs": ["other"]}


def test_a_tick_names_the_jobs_it_started_or_skipped(client: TestClient, host: Host) -> None:
    host.store.define_job(name="cp", schedule="* * * * *", action="checkpoint")
    host.store.define_job(name="idle", schedule="0 3 * * *", action="checkpoint")
    host.sync()
    now = host.clock.now_us()
    host.tick(now)  # plans
    first = str(version(client)["version"])
    host.tick(now + 5 * MINUTE_US)  # cp's missed times are skipped, its latest one runs
    host.wait_idle()
    moved = version(client, first)["keys"]["jobs"]  # type: ignore[index]
    assert "cp" in moved
    assert "idle" not in moved  # nor any job that did not move
    assert set(moved) <= {"cp", *host.scheduler.system_names()}


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(since=st.text(max_size=60))
def test_any_since_is_answered_and_never_names_rows_it_cannot_know(
    client: TestClient, since: str
) -> None:
    answer = client.get("/api/changes", params={"topics": "jobs,deployments", "since": since})
    assert answer.status_code == 200, answer.text
    keys = answer.json()["keys"]
    assert set(keys) == {"jobs", "deployments"}
    assert keys["deployments"] in (None, [])  # nothing names a deployment's rows
