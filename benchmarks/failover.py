"""Failover: how long a standby takes to hold the ticker's lease after kill -9 of the holder,
and what claiming a run in ``job_runs`` costs per run.

Takeover, side by side on one PostgreSQL database:

- dgxmm's lease: the holder (a process of its own) holds the advisory lock on its session;
  the standby tries ``Presence.try_lease`` every ``LEASE_TRY_SECONDS``, as ``Host`` does. The
  holder is killed with SIGKILL at a random moment; the time is from the kill to the lease
  taken.
- the naive way: a lease row renewed every tick (5 s) with an expiry of three ticks, read by
  the standby every second; taken once the row has expired.

Claim cost: a trivial run done ``--runs`` times bare (``JobRun.run``) and claimed and
finished in the store (``runs.claim`` + ``runs.finish``), and claimed ten to a transaction
(``runs.claim_all``, as a tick claims its due runs), on SQLite and PostgreSQL.

    .venv/bin/python benchmarks/failover.py [--kills 20] [--naive-kills 3] [--runs 500]
        [--postgres URL]

Without ``--postgres`` it starts a throwaway cluster (tests/pg_cluster.py; needs initdb).
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from sqlalchemy import create_engine, text

from dgxmm.jobs import CronSchedule, Job, JobKind, JobRun
from dgxmm.server.host import LEASE_TRY_SECONDS
from dgxmm.store import Store, Trigger

HOLDER = textwrap.dedent(
    """
    import sys, time
    from dgxmm.store import Store
    store = Store.open(sys.argv[1], data_dir=sys.argv[2])
    assert store.presence.try_lease()
    print("holding", flush=True)
    time.sleep(3600)
    """
)

NAIVE_HOLDER = textwrap.dedent(
    """
    import sys, time
    from sqlalchemy import create_engine, text
    engine = create_engine(sys.argv[1])
    first = True
    while True:
        with engine.begin() as c:
            c.execute(text("UPDATE bench_lease SET holder = 'a', expires = :e"),
                      {"e": time.time() + 15})
        if first:
            print("holding", flush=True)
            first = False
        time.sleep(5)
    """
)


def spawn(script: str, *args: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", script, *args], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "holding"
    return process


def kill(process: subprocess.Popen[str]) -> float:
    time.sleep(random.uniform(0.0, 2.0))  # a random moment of the holder's life
    killed = time.monotonic()
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert process.stdout is not None
    process.stdout.close()
    return killed


def dgxmm_takeover(url: str, data: Path) -> float:
    holder = spawn(HOLDER, url, str(data))
    standby = Store.open(url, data_dir=data)
    try:
        assert not standby.presence.try_lease()
        tried = time.monotonic()  # the standby's cadence runs on, whenever the holder dies
        killed = kill(holder)
        while True:
            while tried <= time.monotonic():  # the next try of the cadence after now
                tried += LEASE_TRY_SECONDS
            time.sleep(max(0.0, tried - time.monotonic()))
            if standby.presence.try_lease():
                return time.monotonic() - killed
    finally:
        standby.close()


def naive_takeover(url: str) -> float:
    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.begin() as c:
        c.execute(text("CREATE TABLE IF NOT EXISTS bench_lease (holder TEXT, expires FLOAT)"))
        c.execute(text("DELETE FROM bench_lease"))
        c.execute(text("INSERT INTO bench_lease VALUES ('a', 0)"))
    holder = spawn(NAIVE_HOLDER, str(engine.url.render_as_string(hide_password=False)))
    killed = kill(holder)
    while True:
        with engine.begin() as c:
            taken = c.execute(
                text("UPDATE bench_lease SET holder = 'b' WHERE expires < :now"),
                {"now": time.time()},
            ).rowcount
        if taken:
            engine.dispose()
            return time.monotonic() - killed
        time.sleep(1.0)


def claim_cost(target: str, data: Path, runs: int) -> tuple[float, float, float]:
    store = Store.open(target, data_dir=data)
    job = Job("tiny", JobKind.SYSTEM, CronSchedule.parse("* * * * *"), lambda _ctx: None)
    try:
        started = time.perf_counter()
        for i in range(runs):
            JobRun(job, scheduled_at=i, started_at=i, timer=time.monotonic).run()
        bare = (time.perf_counter() - started) / runs
        started = time.perf_counter()
        for i in range(runs):
            run = JobRun(job, scheduled_at=i, started_at=i, timer=time.monotonic)
            run_id = store.runs.claim(run, Trigger.SCHEDULE)
            assert run_id is not None
            store.runs.finish(run_id, run.run())
        claimed = (time.perf_counter() - started) / runs
        # A tick's due runs claimed together (as the host does), ten at a time.
        started = time.perf_counter()
        for i in range(0, runs, 10):
            batch = [JobRun(job, scheduled_at=runs + i + k, started_at=0, timer=time.monotonic)
                     for k in range(10)]  # fmt: skip
            for answer in store.runs.claim_all(batch, Trigger.SCHEDULE):
                assert isinstance(answer, int)
        batched = (time.perf_counter() - started) / runs
        return bare, claimed, batched
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--naive-kills", type=int, default=3)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--postgres", help="URL of an empty PostgreSQL database")
    options = parser.parse_args()
    cluster = None
    url = options.postgres
    if url is None:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
        from pg_cluster import PgCluster, find_pg_bin

        bin_dir = find_pg_bin()
        if bin_dir is None:
            raise SystemExit("no PostgreSQL here: pass --postgres URL")
        cluster = PgCluster(bin_dir)
        cluster.start()
        url = cluster.url(cluster.create_database())
    try:
        with tempfile.TemporaryDirectory() as work:
            data = Path(work)
            ours = [dgxmm_takeover(url, data) for _ in range(options.kills)]
            naive = [naive_takeover(url) for _ in range(options.naive_kills)]
            print(f"takeover after kill -9 ({options.kills} kills, lease tried every "
                  f"{LEASE_TRY_SECONDS:g} s)")  # fmt: skip
            print(f"  dgxmm advisory lock: median {statistics.median(ours):.2f} s, "
                  f"max {max(ours):.2f} s")  # fmt: skip
            print(f"  naive lease row ({options.naive_kills} kills): median "
                  f"{statistics.median(naive):.2f} s, max {max(naive):.2f} s")  # fmt: skip
            print(f"  ratio naive / dgxmm (medians): "
                  f"{statistics.median(naive) / statistics.median(ours):.1f}x")  # fmt: skip
            print(f"claim + finish per run ({options.runs} runs)")
            for label, target in (("sqlite", str(data / "claims.db")), ("postgresql", url)):
                bare, claimed, batched = claim_cost(target, data / label, options.runs)
                print(f"  {label}: bare {bare * 1e6:.0f} us, claimed + finished "
                      f"{claimed * 1e3:.2f} ms ({claimed / bare:.0f}x), claimed ten to a "
                      f"transaction {batched * 1e3:.2f} ms per run")  # fmt: skip
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
