"""Synthetic deployments, rollups and profiles for the profile and proposal tests.

Rows go straight into ``deployments``, ``metric_rollups`` and ``traffic_profiles``, as the
fleet's rollup job and a rebuild would leave them; nothing here runs a model server.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import insert

from dgxmm.clock import from_us, to_us
from dgxmm.decider.profiles import HourProfile
from dgxmm.decider.tables import traffic_profiles
from dgxmm.fleet.deployments.tables import deployments, metric_rollups
from dgxmm.store import Store, writing
from dgxmm.time_units import MINUTE_US


@dataclass(frozen=True)
class Minute:
    """One rollup row: the minute's start and what it saw."""

    at_us: int
    requests: int = 0
    running: float = 0.0
    waiting: float = 0.0
    latency_s: float | None = None
    samples: int = 4


def add_deployment(
    store: Store,
    name: str = "llama",
    *,
    zone: str = "Europe/Berlin",
    priority: int = 50,
    gpus: tuple[int, ...] = (0,),
    awake: float = 40.0,
    asleep: float = 4.0,
) -> int:
    """Insert a stopped external deployment; return its id."""
    with writing(store.engine) as connection:
        key = connection.execute(
            insert(deployments).values(
                name=name,
                model=f"{name}-model",
                backend="external",
                base_url="http://127.0.0.1:9",
                gpus=json.dumps(list(gpus)),
                memory_gib_awake=awake,
                memory_gib_asleep=asleep,
                priority=priority,
                time_zone=zone,
                startup_timeout_s=60.0,
                state="stopped",
                state_since=0,
                created_at=0,
                updated_at=0,
            )
        ).inserted_primary_key
    assert key is not None
    return int(key[0])


def add_minutes(store: Store, deployment_id: int, minutes: Iterable[Minute]) -> int:
    """Insert rollup rows; return how many."""
    rows = [
        {
            "deployment_id": deployment_id,
            "minute_us": m.at_us,
            "requests": m.requests,
            "mean_running": m.running,
            "mean_waiting": m.waiting,
            "mean_latency_s": m.latency_s,
            "samples": m.samples,
        }
        for m in minutes
    ]
    if rows:
        with writing(store.engine) as connection:
            connection.execute(insert(metric_rollups), rows)
    return len(rows)


def local_minutes(
    zone: str, since_us: int, until_us: int, *, per_hour: int = 60
) -> Iterator[tuple[int, datetime]]:
    """Yield (UTC minute start, local time) for the first ``per_hour`` minutes of each hour."""
    info = ZoneInfo(zone)
    at = since_us - since_us % MINUTE_US
    while at < until_us:
        local = from_us(at, info)
        if local.minute < per_hour:
            yield at, local
        at += MINUTE_US


def weekly_traffic(
    zone: str,
    since_us: int,
    until_us: int,
    *,
    busy: Callable[[datetime], bool],
    per_hour: int = 30,
) -> list[Minute]:
    """Minutes with 2 requests completing (1 in flight, 1.5 s latency) where ``busy``, else idle."""
    return [
        Minute(at_us=at, requests=2, running=1.0, latency_s=1.5)
        if busy(local)
        else Minute(at_us=at)
        for at, local in local_minutes(zone, since_us, until_us, per_hour=per_hour)
    ]


def working_hours_requests(
    zone: str, since_us: int, until_us: int, *, every_us: int
) -> list[Minute]:
    """One request every ``every_us`` (from ``since_us``) on weekdays, 09:00 to 17:00 local."""
    info = ZoneInfo(zone)
    found = []
    for at_us in range(since_us, until_us, every_us):
        local = from_us(at_us, info)
        if local.weekday() < 5 and 9 <= local.hour < 17:
            found.append(Minute(at_us=at_us, requests=1, running=1.0, latency_s=1.0))
    return found


def office_hours(local: datetime) -> bool:
    """Busy Monday to Friday, 07:00 to 21:59 local."""
    return local.weekday() < 5 and 7 <= local.hour < 22


def hours(
    idle: Callable[[int], bool], *, observed: int = 4, idle_weeks: int | None = None
) -> list[HourProfile]:
    """A 168-hour profile: ``idle(hour_of_week)`` hours idle in ``idle_weeks`` of ``observed``."""
    made = []
    for hour in range(168):
        quiet = idle(hour)
        made.append(
            HourProfile(
                hour_of_week=hour,
                rpm_p50=0.0 if quiet else 5.0,
                rpm_p95=0.0 if quiet else 12.0,
                active_share=0.0 if quiet else 0.8,
                observed_minutes=observed * 60,
                observed_weeks=observed,
                idle_weeks=(observed if idle_weeks is None else idle_weeks) if quiet else 0,
            )
        )
    return made


def store_profile(
    store: Store, deployment_id: int, profile: list[HourProfile], built_at: int
) -> None:
    """Write a deployment's profile rows as a rebuild would."""
    with writing(store.engine) as connection:
        connection.execute(
            insert(traffic_profiles),
            [
                {
                    "deployment_id": deployment_id,
                    "built_at": built_at,
                    **{k: v for k, v in hour.to_json().items() if k not in ("day", "hour")},
                }
                for hour in profile
            ],
        )


def idle_days(store: Store, deployment_id: int, zone: str, until_us: int, days: int) -> None:
    """Give a deployment ``days`` whole local days of idle minutes (at 30 a local hour) before
    ``until_us``'s local midnight: the data the 7-day rule counts."""
    info = ZoneInfo(zone)
    midnight = from_us(until_us, info).replace(hour=0, minute=0, second=0, microsecond=0)
    since = to_us((midnight - timedelta(days=days)).replace(tzinfo=info))
    add_minutes(
        store,
        deployment_id,
        (Minute(at_us=at) for at, _ in local_minutes(zone, since, to_us(midnight), per_hour=30)),
    )


def at_local(iso: str, zone: str) -> int:
    """Return a local wall time in a zone (no offset in ``iso``) as microseconds."""
    return to_us(datetime.fromisoformat(iso).replace(tzinfo=ZoneInfo(zone)))


def json_of(value: Any) -> Any:
    """Round-trip a value through JSON (what an API answer holds)."""
    return json.loads(json.dumps(value))
