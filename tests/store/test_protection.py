"""Protected tables are the database's: every process refuses the same writes, on every run."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable

import pytest
from sqlalchemy import inspect
from store.storekit import Place, ctx, make_items, rows

from dgxmm.errors import DefinitionError, NotAllowed
from dgxmm.store import Store, TableOwner, Write
from dgxmm.store.schema import catalog_jobs, catalog_queries

# Every table a fresh store's migrations create, and whose service changes it.
OWNERS = {
    "alembic_version": TableOwner.STORE,
    "store_state": TableOwner.STORE,
    "catalog_queries": TableOwner.STORE,
    "catalog_jobs": TableOwner.STORE,
    "catalog_journal": TableOwner.STORE,
    "settings": TableOwner.STORE,
    "change_log": TableOwner.STORE,
    "protected_tables": TableOwner.STORE,
    "catalog_attic": TableOwner.STORE,
    "job_runs": TableOwner.STORE,
    "job_run_rows": TableOwner.STORE,
    "instances": TableOwner.STORE,
    "change_versions": TableOwner.STORE,
    "change_keys": TableOwner.STORE,
    "api_tokens": TableOwner.SERVER,
    "deployments": TableOwner.FLEET,
    "deployment_events": TableOwner.FLEET,
    "audit_log": TableOwner.FLEET,
    "insights": TableOwner.FLEET,
    "metric_rollups": TableOwner.FLEET,
    "request_minutes": TableOwner.FLEET,
    "deployment_schedules": TableOwner.DECIDER,
    "traffic_profiles": TableOwner.DECIDER,
    "wait_budget_prices": TableOwner.DECIDER,
    "schedule_proposals": TableOwner.DECIDER,
    "alert_channels": TableOwner.ALERTS,
    "alert_rules": TableOwner.ALERTS,
    "alert_rule_channels": TableOwner.ALERTS,
    "alert_incidents": TableOwner.ALERTS,
    "alert_messages": TableOwner.ALERTS,
    "alert_deliveries": TableOwner.ALERTS,
    "alert_attempts": TableOwner.ALERTS,
}


def test_it_records_every_table_of_dgxmm_in_the_database(store: Store) -> None:
    # A revision that adds a table without its protected row fails here.
    tables = set(inspect(store.engine).get_table_names())
    assert tables == set(OWNERS)
    assert {name: table.owner for name, table in store.protected.items()} == OWNERS


def test_a_library_process_refuses_the_servers_tables(place: Place) -> None:
    # The found defect: a process that imported only dgxmm.store did not know the server's
    # and the fleet's tables, defined a job inserting into api_tokens, and the server ran it.
    script = textwrap.dedent(
        """
        import json, sys
        from dgxmm.errors import DefinitionError
        from dgxmm.store import Store
        store = Store.open(sys.argv[1], data_dir=sys.argv[2])
        refused = {}
        for table, body in [
            ("api_tokens", "INSERT INTO api_tokens (name, role, token_hash, created_at) "
             "VALUES ('x', 'admin', 'h', 0)"),
            ("audit_log", "DELETE FROM audit_log"),
            ("deployments", "UPDATE deployments SET priority = 99"),
        ]:
            try:
                store.define_query("sneaky_" + table, None, body)
            except DefinitionError as error:
                refused[table] = [error.field, error.message]
        assert "dgxmm.server" not in sys.modules and "dgxmm.fleet" not in sys.modules
        store.close()
        print(json.dumps(refused))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, place.target, str(place.data_dir)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    refused = json.loads(done.stdout)
    assert set(refused) == {"api_tokens", "audit_log", "deployments"}
    assert refused["api_tokens"][0] == "body"
    assert "server's API tokens" in refused["api_tokens"][1]
    assert "never write" in refused["deployments"][1]


def _hand_written_job(store: Store, table: str, body: str) -> None:
    """Store a query and a job as an older dgxmm, which did not protect ``table``, would."""
    with store.engine.begin() as connection:
        connection.execute(
            catalog_queries.insert().values(
                name="mint", params="{}", body=body, version=1, defined_at=0
            )
        )
        definition = {"name": "mint", "schedule": "* * * * *", "action": "query", "query": "mint"}
        effects = [{"execute": "mint"}, {"write": table}]
        connection.execute(
            catalog_jobs.insert().values(
                name="mint",
                definition=json.dumps(definition),
                effects=json.dumps(effects),
                query_name="mint",
                version=1,
                defined_at=0,
            )
        )


@pytest.mark.parametrize(
    ("table", "body"),
    [
        pytest.param(
            "api_tokens",
            "INSERT INTO api_tokens (name, role, token_hash, created_at) "
            "VALUES ('x', 'admin', 'h', 0)",
            id="mint-a-token",
        ),
        pytest.param("audit_log", "DELETE FROM audit_log", id="empty-the-audit"),
    ],
)
def test_a_run_is_refused_whatever_the_stored_effects_say(
    store: Store, table: str, body: str
) -> None:
    _hand_written_job(store, table, body)
    assert Write(table=table) in store.job("mint").effects
    with pytest.raises(NotAllowed) as refused:
        store.run_job("mint", ctx("mint"))
    assert f"writes {table}" in str(refused.value)
    assert rows(store, "SELECT count(*) FROM api_tokens") == [(0,)]


def test_the_refused_run_is_recorded_with_its_reason(store: Store) -> None:
    _hand_written_job(store, "api_tokens", "DELETE FROM api_tokens")
    scheduler = store.scheduler("UTC")
    run = scheduler.start_now("mint", 1_800_000_000_000_000)
    scheduler.finish(run.run())
    last = store.workload_stats.last_run("mint")
    assert last is not None
    assert last.error is not None
    assert "api_tokens, the server's API tokens" in last.error


def test_defining_a_job_on_a_query_stored_before_the_protection_is_refused(
    store: Store,
) -> None:
    _hand_written_job(store, "settings", "DELETE FROM settings")
    with pytest.raises(DefinitionError) as refused:
        store.define_job(name="again", schedule="0 3 * * *", action="query", query="mint")
    assert refused.value.field == "query"
    assert "settings" in refused.value.message


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("UPDATE deployments SET priority = 99, command = 'x'", id="deployments"),
        pytest.param("UPDATE insights SET dismissed_by = 'eve'", id="insights"),
        pytest.param("DELETE FROM deployment_schedules", id="schedules"),
        pytest.param("INSERT INTO deployment_events (deployment_id) VALUES (1)", id="events"),
        pytest.param("DELETE FROM schedule_proposals", id="proposals"),
        pytest.param("DELETE FROM traffic_profiles", id="profiles"),
        pytest.param("DELETE FROM metric_rollups", id="rollups"),
        pytest.param(
            "WITH gone AS (DELETE FROM audit_log RETURNING id) SELECT count(*) FROM gone",
            id="audit-in-a-cte",
        ),
    ],
)
def test_jobs_may_not_write_the_fleets_and_deciders_tables(store: Store, body: str) -> None:
    with pytest.raises(DefinitionError) as refused:
        store.define_query("w", None, body)
    assert refused.value.field == "body"
    assert "never write" in refused.value.message
    assert store.catalog_version() == 0


def test_jobs_may_read_the_fleets_and_deciders_tables(store: Store) -> None:
    body = (
        "SELECT d.name, count(e.id) FROM deployments d "
        "LEFT JOIN deployment_events e ON e.deployment_id = d.id "
        "LEFT JOIN audit_log a ON a.id = e.id "
        "LEFT JOIN insights i ON i.deployment_id = d.id "
        "LEFT JOIN deployment_schedules s ON s.deployment_id = d.id "
        "GROUP BY d.name"
    )
    store.define_query("fleet_report", None, body)
    store.define_job(name="report", schedule="0 * * * *", action="query", query="fleet_report")
    assert store.run_job("report", ctx("report")).startswith("1 statement;")


def test_a_write_into_a_schema_no_backup_carries_is_refused(
    store: Store, open_store: Callable[..., Store]
) -> None:
    make_items(store)
    table = "temp.items" if store.dialect == "sqlite" else "pg_temp.items"
    with pytest.raises(DefinitionError) as refused:
        store.define_query("t", None, f"DELETE FROM {table}")
    assert refused.value.field == "body"
    assert "backups do not carry" in refused.value.message
