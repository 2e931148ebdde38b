"""The server under test's fixture: the counts, and what is in its database before it starts.

1,000 ``external`` deployments (each a loopback port of ``rollups.serve_many_ports``) with a
schedule each, eight pretend GPUs, a long query job, and the admin token the load sends.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True, kw_only=True)
class Counts:
    """How much of everything: the issue's counts by default, tiny ones with ``--small``."""

    jobs: int
    deployments: int
    defines: int
    later_defines: int
    requests: int
    unpaged_requests: int
    pollers: int
    poll_seconds: float
    page_requests: int
    clear_of_the_minute: bool  # the quiet polls wait for a window clear of the minute's jobs


FULL = Counts(
    jobs=10_000,
    deployments=1_000,
    defines=1_000,
    later_defines=100,
    requests=2_000,
    unpaged_requests=20,
    pollers=50,
    poll_seconds=30.0,
    page_requests=50,
    clear_of_the_minute=True,
)
SMALL = Counts(
    jobs=30,
    deployments=5,
    defines=10,
    later_defines=5,
    requests=40,
    unpaged_requests=4,
    pollers=3,
    poll_seconds=2.5,
    page_requests=4,
    clear_of_the_minute=False,  # a smoke run: it need not wait for a clear window
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def prepare(data: Path, ports: list[int]) -> str:
    """Write the GPUs, the deployments and their schedules, a long query job; return a token."""
    from sqlalchemy import insert

    from dgxmm.decider.tables import deployment_schedules
    from dgxmm.fleet import Gpu
    from dgxmm.fleet.deployments.tables import deployments
    from dgxmm.fleet.placement.config import write_gpus
    from dgxmm.server import Role, Tokens
    from dgxmm.store import Store, writing

    write_gpus(data, [Gpu(index=i, name="H100 (pretend)", memory_gib=80.0) for i in range(8)])
    store = Store.open(data / "dgxmm.db", data_dir=data)
    try:
        store.define_query(
            "count_up",
            {"n": "int"},
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < :n) "
            "SELECT count(*) FROM c",
        )
        store.define_job(
            name="long_query",
            schedule="0 0 1 1 *",
            action="query",
            query="count_up",
            args={"n": 10**10},
            timeout_ms=600_000,
        )
        with writing(store.engine) as connection:
            connection.execute(
                insert(deployments),
                [
                    {
                        "id": i + 1,
                        "name": f"d{i + 1:04d}",
                        "model": "m",
                        "backend": "external",
                        "base_url": f"http://127.0.0.1:{port}",
                        "gpus": f"[{i % 8}]",
                        "memory_gib_awake": 0.05,
                        "memory_gib_asleep": 0.0,
                        "priority": 50,
                        "time_zone": "UTC",
                        "startup_timeout_s": 60.0,
                        "state": "running",
                        "state_since": 0,
                        "created_at": 0,
                        "updated_at": 0,
                    }
                    for i, port in enumerate(ports)
                ],
            )
            connection.execute(
                insert(deployment_schedules),
                [
                    {
                        "deployment_id": i + 1,
                        "action": "sleep",
                        "days": 127,
                        "at_time": f"{i % 24:02d}:{i % 60:02d}",
                        "time_zone": "UTC",
                        "enabled": True,
                        "creator": "bench",
                        "created_at": 0,
                        "updated_at": 0,
                    }
                    for i in range(len(ports))
                ],
            )
        return Tokens(store.engine, store.clock).create(Role.ADMIN, "bench")
    finally:
        store.close()
