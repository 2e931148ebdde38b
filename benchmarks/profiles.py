"""Rebuilding traffic profiles: 100 deployments with 30 days of minute rollups each.

Issue 7's target: the rebuild takes under 10 s on SQLite. The data are what the
``metrics_rollup`` job would write for deployments that serve office hours: busy on weekdays
from about 08:00 to 19:00 local (with gaps), a little traffic in the evenings, idle nights and
weekends, in five zones (two of them with a DST change inside the window), one row per minute
for the whole 30 days: 100 x 43,200 = 4,320,000 rows, written minute by minute with every
deployment's row of a minute together, as the ``metrics_rollup`` job writes them.

    .venv/bin/python benchmarks/profiles.py [--deployments N] [--days D] [--repeats R]
                                            [--postgres URL] [--dir D]

It prints the time of each rebuild (wall and this process's CPU), the best of them, the
machine's load average (which moves wall times a lot on a shared machine), and the peak of
the memory Python and numpy allocate in one more, untimed rebuild. With
``--postgres URL`` (an empty database) the same runs on PostgreSQL too.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
from sqlalchemy import insert

from dgxmm.clock import ManualClock, to_us
from dgxmm.decider.profiles import ProfileService
from dgxmm.decider.traffic import local_seconds
from dgxmm.fleet import Fleet, GpuInventory, InventorySource
from dgxmm.fleet.deployments.tables import deployments
from dgxmm.store import Store, writing
from dgxmm.time_units import MINUTE_US

ZONES = ["Europe/Berlin", "America/New_York", "Asia/Tokyo", "UTC", "Australia/Sydney"]
# A window with two DST changes in it: Berlin's on 2026-10-25, New York's on 2026-11-01.
NOW = "2026-11-10T00:00:00+00:00"


def rollups(deployment_id: int, zone: str, now_us: int, days: int, rng: np.random.Generator):
    """Return one deployment's rollup rows, as the columns of ``metric_rollups`` go."""
    from zoneinfo import ZoneInfo

    minutes = np.arange(now_us - days * 1440 * MINUTE_US, now_us, MINUTE_US, dtype=np.int64)
    wall = local_seconds(minutes // 1_000_000, ZoneInfo(zone))
    hour = (wall // 3600) % 24
    weekday = ((wall // 86400) + 3) % 7  # 1970-01-01 was a Thursday
    office = (weekday < 5) & (hour >= 8) & (hour < 19)
    evening = (weekday < 5) & (hour >= 19) & (hour < 22)
    busy = np.where(office, 0.9, np.where(evening, 0.2, 0.0)) > rng.random(len(minutes))
    running = np.where(busy, rng.gamma(2.0, 1.5, len(minutes)), 0.0)
    waiting = np.where(busy & (rng.random(len(minutes)) < 0.1), rng.random(len(minutes)), 0.0)
    latency = rng.uniform(0.5, 6.0, len(minutes))
    requests = np.where(busy, rng.poisson(60 * (running + waiting) / latency), 0)
    latency_or_null = [float(x) if n > 0 else None for x, n in zip(latency, requests, strict=True)]
    return list(
        zip(
            [deployment_id] * len(minutes),
            minutes.tolist(),
            requests.tolist(),
            running.tolist(),
            waiting.tolist(),
            latency_or_null,
            [4] * len(minutes),
            strict=True,
        )
    )


def fill(store: Store, count: int, days: int, now_us: int) -> None:
    """Create the deployments and their rollups."""
    rng = np.random.default_rng(7)
    started = time.perf_counter()
    with writing(store.engine) as connection:
        for index in range(count):
            connection.execute(
                insert(deployments).values(
                    name=f"bench-{index:03d}", model="m", backend="external",
                    base_url="http://127.0.0.1:9", gpus="[0]", memory_gib_awake=40.0,
                    memory_gib_asleep=4.0, priority=50, time_zone=ZONES[index % len(ZONES)],
                    startup_timeout_s=60.0, state="stopped", state_since=0, created_at=0,
                    updated_at=0,
                )
            )  # fmt: skip
    placeholder = "?" if store.dialect == "sqlite" else "%s"
    sql = (
        "INSERT INTO metric_rollups (deployment_id, minute_us, requests, mean_running, "
        f"mean_waiting, mean_latency_s, samples) VALUES ({', '.join([placeholder] * 7)})"
    )
    # Minute by minute, every deployment's row of a minute together, as the metrics_rollup
    # job writes them: each deployment's rows end up spread over the whole table.
    per_deployment = [
        rollups(index + 1, ZONES[index % len(ZONES)], now_us, days, rng) for index in range(count)
    ]
    interleaved = [row for minute in zip(*per_deployment, strict=True) for row in minute]
    with writing(store.engine) as connection:
        cursor = connection.connection.cursor()
        cursor.executemany(sql, interleaved)
    print(f"  filled {count} deployments x {days * 1440} minutes in "
          f"{time.perf_counter() - started:.0f} s")  # fmt: skip


def measure(target: str, data_dir: Path, count: int, days: int, repeats: int) -> None:
    """Fill one database, then time the rebuilds."""
    now_us = to_us(__import__("datetime").datetime.fromisoformat(NOW))
    store = Store.open(target, data_dir=data_dir, clock=ManualClock(now_us))
    try:
        print(f"{store.dialect}: {count} deployments, {days} days of minute rollups")
        fill(store, count, days, now_us)
        fleet = Fleet(store, inventory=GpuInventory(gpus=(), source=InventorySource.CONFIGURATION))
        service = ProfileService(store, fleet.deployments)
        times = []
        for run in range(repeats):
            wall, cpu = time.perf_counter(), time.process_time()
            rebuilt = service.rebuild()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            times.append(wall)
            print(f"  rebuild {run + 1}: {len(rebuilt)} profiles in {wall:6.2f} s "
                  f"(CPU {cpu:6.2f} s; load average {os.getloadavg()[0]:.1f})")  # fmt: skip
        # Once more, untimed, to see the memory it takes (what Python and numpy allocate;
        # SQLite's own buffers are not traced).
        tracemalloc.start()
        service.rebuild()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"  a rebuild's traced peak memory: {peak / 2**20:.0f} MiB")
        best = min(times)
        if store.dialect == "sqlite":
            verdict = "ok" if best < 10 else "MISSED"
            print(f"  best: {best:.2f} s for {count} deployments (target on SQLite: under 10 s): "
                  f"{verdict}")  # fmt: skip
        else:  # the target is SQLite's; PostgreSQL's server shares the machine's cores
            print(f"  best: {best:.2f} s for {count} deployments")
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deployments", type=int, default=100)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--postgres", help="an empty PostgreSQL database's URL")
    parser.add_argument("--dir", type=Path, help="where to put the SQLite database")
    options = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="dgxmm-profiles-", dir=options.dir))
    try:
        measure(str(root / "bench.db"), root, options.deployments, options.days, options.repeats)
        if options.postgres:
            measure(options.postgres, root, options.deployments, options.days, options.repeats)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
