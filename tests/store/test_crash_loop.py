"""Kill -9 at random moments, restart, commit, back up, restore: every restore is exact.

Each cycle starts a child process on the store that runs writing jobs, backups or
checkpoints over and over, kills it (SIGKILL, its whole process group) at a random moment,
opens the store again, commits a small change, takes an incremental backup into the one
chain and restores it into a new database, which must equal the live one table by table
(and pass ``PRAGMA integrity_check`` on SQLite).

``DGXMM_SOAK_CYCLES`` sets the cycles per database (5 by default); ``DGXMM_SOAK_SEED``
replays a run's choices (actions, delays, the commits). The kills land at times, so a replay
repeats the choices, not every moment.
"""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from pg_cluster import PgCluster
from store.storekit import Place, make_items, table_contents

from dgxmm.store import Store, restore

CYCLES = int(os.environ.get("DGXMM_SOAK_CYCLES", "5"))
ACTIONS = ("write", "backup", "checkpoint")
_CHILD_START_S = 120.0  # a shared, loaded machine: generous, only a bound

# One run of a job is one transaction. ``churn`` touches most pages of a table larger than
# the page cache, ``grow`` adds as much at its end: SQLite spills their frames into the WAL
# before the commit, where a kill leaves them. ``touch`` is small.
JOBS = {
    "sqlite": {
        "churn": "UPDATE items SET n = n + 1, label = hex(randomblob(40)) "
        "WHERE abs(random()) % 4 = 0; "
        "DELETE FROM items WHERE abs(random()) % 3 = 0",
        "grow": "INSERT INTO items (label, n) WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL "
        "SELECT i + 1 FROM c WHERE i < 16000) SELECT hex(randomblob(60)), i FROM c",
        "touch": "INSERT INTO audit (note) VALUES (hex(randomblob(16))); UPDATE items "
        "SET n = -n WHERE id IN (SELECT id FROM items ORDER BY random() LIMIT 20)",
    },
    "postgresql": {
        "churn": "UPDATE items SET n = n + 1, label = md5(random()::text) "
        "WHERE random() < 0.25; "
        "DELETE FROM items WHERE random() < 0.33",
        "grow": "INSERT INTO items (label, n) SELECT md5(random()::text) || "
        "md5(random()::text), i FROM generate_series(1, 16000) AS i",
        "touch": "INSERT INTO audit (note) VALUES (md5(random()::text)); UPDATE items "
        "SET n = -n WHERE id IN (SELECT id FROM items ORDER BY random() LIMIT 20)",
    },
}

CHILD = textwrap.dedent(
    """
    import random, sys, time
    from dgxmm.jobs import JobLimits, RunContext
    from dgxmm.store import Store

    target, data_dir, backups, action, seed = sys.argv[1:6]
    rng = random.Random(seed)
    store = Store.open(target, data_dir=data_dir)

    def run(name):
        store.run_job(name, RunContext(name=name, scheduled_at=0, started_at=0,
                                       limits=JobLimits(), timer=time.monotonic))

    print("ready", flush=True)
    while True:  # until killed
        if action == "backup":
            run("touch")
            store.backup(backups)
        else:
            run(rng.choice(["churn", "grow"]))
            if action == "checkpoint":
                store.checkpoint()  # complete: the next run starts the WAL again
    """
)


def seed() -> int:
    """Return the seed of this run: ``DGXMM_SOAK_SEED``, or a new one."""
    return int(os.environ.get("DGXMM_SOAK_SEED") or random.randrange(2**32))


def kill_at_random(place: Place, backups: Path, action: str, delay: float, seed: str) -> None:
    """Start the child on ``action``, kill it with SIGKILL ``delay`` s after it is ready."""
    arguments = [place.target, str(place.data_dir), str(backups), action, seed]
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group: a pg_dump it started dies with it
    ) as child:
        assert child.stdout is not None
        assert child.stderr is not None
        try:
            ready, _, _ = select.select([child.stdout], [], [], _CHILD_START_S)
            assert ready, "the child never got ready"
            assert child.stdout.readline().strip() == "ready", child.stderr.read()
            time.sleep(delay)
            assert child.poll() is None, f"the child ended by itself: {child.stderr.read()}"
        finally:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL


def commit_a_little(store: Store, rng: random.Random) -> None:
    """Commit a small change of the parent's own: a few rows updated, added, removed."""
    with store.engine.begin() as connection:
        # A page the killed transaction may not have touched: its pages cannot hide these.
        connection.execute(
            sa.text("INSERT INTO audit (note) VALUES (:note)"), {"note": f"{rng.random()}"}
        )
        ids = [row[0] for row in connection.exec_driver_sql("SELECT id FROM items ORDER BY id")]
        chosen = rng.sample(ids, min(len(ids), 6))
        for key in chosen[:3]:
            connection.execute(
                sa.text("UPDATE items SET label = :label WHERE id = :id"),
                {"label": f"after kill {rng.random()}", "id": key},
            )
        for key in chosen[3:]:
            connection.execute(sa.text("DELETE FROM items WHERE id = :id"), {"id": key})
        connection.execute(
            sa.text("INSERT INTO items (label, n) VALUES (:label, :n)"),
            {"label": "committed after the kill", "n": rng.randrange(1000)},
        )


@pytest.mark.slow
@pytest.mark.timeout(120 + 60 * CYCLES)
def test_it_restores_exactly_after_every_kill(
    place: Place, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    run_seed = seed()
    print(f"DGXMM_SOAK_SEED={run_seed} DGXMM_SOAK_CYCLES={CYCLES} ({place.dialect})")
    backups = tmp_path / "bk"
    store = Store.open(place.target, data_dir=place.data_dir)
    try:
        make_items(store)
        for name, body in JOBS[place.dialect].items():
            store.define_query(name, None, body)
            store.define_job(name=name, schedule="0 3 * * *", action="query", query=name)
        with store.engine.begin() as connection:
            connection.exec_driver_sql(JOBS[place.dialect]["grow"])
        store.backup(backups)
    finally:
        store.close()

    seen: list[str] = []
    for cycle in range(1, CYCLES + 1):
        rng = random.Random(f"{run_seed}:{cycle}")
        action, delay = rng.choice(ACTIONS), rng.uniform(0.0, 1.5)
        where = f"cycle {cycle}: {action}, killed after {delay:.3f} s (seed {run_seed})"
        kill_at_random(place, backups, action, delay, f"{run_seed}:{cycle}")
        store = Store.open(place.target, data_dir=place.data_dir)
        try:
            commit_a_little(store, rng)
            result = store.backup(backups)
            seen.append(f"{action}: {result.method_text}")
            target, drop = restore_target(place, tmp_path / f"restored-{cycle}.db", request)
            try:
                restore(backups, target)
                restored = sa.create_engine(target if "://" in target else f"sqlite:///{target}")
                try:
                    assert table_contents(restored) == table_contents(store.engine), where
                    if place.dialect == "sqlite":
                        with restored.connect() as connection:
                            check = connection.exec_driver_sql("PRAGMA integrity_check").all()
                        assert [tuple(row) for row in check] == [("ok",)], where
                finally:
                    restored.dispose()
            finally:
                drop()
        finally:
            store.close()
    print("\n".join(seen))


def restore_target(place: Place, path: Path, request: pytest.FixtureRequest) -> tuple[str, Any]:
    """Return a new place to restore into, and what removes it after."""
    if place.dialect == "sqlite":
        return str(path), lambda: path.unlink(missing_ok=True)
    cluster: PgCluster = request.getfixturevalue("pg_cluster")
    name = cluster.create_database()
    return cluster.url(name), lambda: cluster.drop_database(name)
