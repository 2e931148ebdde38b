"""The proxy's record of its requests, per deployment and minute (``request_minutes``).

The proxy counts in memory (``RequestActivity``: requests, held ones with their added waits,
refusals by reason); the ``metrics_rollup`` job writes what was counted here once a minute,
adding to a minute's row when one exists (a minute is flushed in two parts when the job runs
inside it). The savings report reads it; ``metrics_purge`` deletes rows older than
``RETENTION_DAYS``. A protected table: saved queries read it, never write it.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlalchemy import Engine, delete, insert, select, update

from dgxmm.fleet.activity import MAX_WAITS, Minute
from dgxmm.fleet.deployments.tables import deployments, request_minutes
from dgxmm.store import reading, writing
from dgxmm.time_units import DAY_US

__all__ = ["RETENTION_DAYS", "RequestMinute", "RequestMinutes"]

RETENTION_DAYS = 90


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestMinute:
    """One row: a deployment's requests through the proxy in one minute of arrivals."""

    deployment_id: int
    minute_us: int
    requests: int
    held: int
    waits_ms: tuple[int, ...]
    refused: Mapping[str, int] = field(default_factory=dict)


class RequestMinutes:
    """Writes and reads ``request_minutes``."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def add(self, counted: Mapping[tuple[int, int], Minute]) -> int:
        """Add what the proxy counted to each minute's row; return the rows written.

        Counts of a deployment removed meanwhile are dropped (its rows went with it).
        """
        if not counted:
            return 0
        t = request_minutes.c
        written = 0
        with writing(self._engine) as connection:
            alive = set(connection.execute(select(deployments.c.id)).scalars())
            for (deployment_id, minute_us), minute in sorted(counted.items()):
                if deployment_id not in alive:
                    continue
                row = connection.execute(
                    select(request_minutes).where(
                        t.deployment_id == deployment_id, t.minute_us == minute_us
                    )
                ).first()
                if row is None:
                    connection.execute(
                        insert(request_minutes).values(
                            deployment_id=deployment_id,
                            minute_us=minute_us,
                            requests=minute.requests,
                            held=minute.held,
                            waits_ms=json.dumps(minute.waits_ms[:MAX_WAITS]),
                            refused=json.dumps(minute.refused, sort_keys=True),
                        )
                    )
                else:
                    refused = json.loads(row.refused)
                    for reason, count in minute.refused.items():
                        refused[reason] = refused.get(reason, 0) + count
                    waits = [*json.loads(row.waits_ms), *minute.waits_ms][:MAX_WAITS]
                    connection.execute(
                        update(request_minutes)
                        .where(t.deployment_id == deployment_id, t.minute_us == minute_us)
                        .values(
                            requests=row.requests + minute.requests,
                            held=row.held + minute.held,
                            waits_ms=json.dumps(waits),
                            refused=json.dumps(refused, sort_keys=True),
                        )
                    )
                written += 1
        return written

    def read(
        self, deployment_id: int, since_us: int, until_us: int
    ) -> builtins.list[RequestMinute]:
        """Return a deployment's rows with ``since_us <= minute < until_us``, oldest first."""
        t = request_minutes.c
        query = (
            select(request_minutes)
            .where(
                t.deployment_id == deployment_id, t.minute_us >= since_us, t.minute_us < until_us
            )
            .order_by(t.minute_us)
        )
        with reading(self._engine) as connection:
            return [
                RequestMinute(
                    deployment_id=int(row.deployment_id),
                    minute_us=int(row.minute_us),
                    requests=int(row.requests),
                    held=int(row.held),
                    waits_ms=tuple(json.loads(row.waits_ms)),
                    refused=json.loads(row.refused),
                )
                for row in connection.execute(query)
            ]

    def purge(self, now_us: int, days: int = RETENTION_DAYS) -> int:
        """Delete the rows older than ``days``; return how many."""
        with writing(self._engine) as connection:
            return int(
                connection.execute(
                    delete(request_minutes).where(
                        request_minutes.c.minute_us < now_us - days * DAY_US
                    )
                ).rowcount
            )
