"""Traffic profiles: a deployment's week, hour by hour, over the last 30 days of rollups.

``traffic_profiles`` holds 168 rows per deployment, one per local hour of the week in the
deployment's zone (0: Monday 00:00-00:59). Each row, over the rollups of the 30 days before
the build (``decider/traffic.py`` says how a minute becomes requests per minute):

- ``rpm_p50`` / ``rpm_p95``: the nearest-rank percentiles of the requests per minute of the
  hour's observed minutes (the smallest value at least half / 95 % of them do not exceed),
  0 for an hour never observed;
- ``active_share``: the share of its observed minutes that were active;
- ``observed_minutes``: how many minutes of it have a rollup;
- ``observed_weeks``: in how many weeks the hour was observed, meaning at least
  ``MIN_WEEK_MINUTES`` (30) of its minutes have a rollup. The hour repeated when clocks go
  back counts both passes in one week; the hour skipped when they go forward is not
  observed that week;
- ``idle_weeks``: in how many of those weeks it was idle: not one of its observed minutes
  had a request in flight or completed.

The system job ``traffic_profiles`` rebuilds every deployment's profile daily; ``rebuild``
does it on demand (``POST /api/traffic/rebuild``).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import Connection, delete, insert, select

from dgxmm.clock import Clock
from dgxmm.decider.tables import traffic_profiles
from dgxmm.decider.traffic import WEEK_HOURS, MinuteSeries, hour_of_week, read_minutes
from dgxmm.fleet import DeploymentRepo
from dgxmm.jobs import CronSchedule, Job, JobKind, RunContext, resolve_zone
from dgxmm.store import Store, reading, writing
from dgxmm.time_units import DAY_US
from dgxmm.words import counted

__all__ = [
    "MIN_WEEK_MINUTES",
    "TRAFFIC_PROFILES",
    "WINDOW_DAYS",
    "HourProfile",
    "ProfileService",
    "TrafficProfile",
    "build_hours",
    "read_profile",
]

TRAFFIC_PROFILES = "traffic_profiles"
WINDOW_DAYS = 30
MIN_WEEK_MINUTES = 30


@dataclass(frozen=True, slots=True, kw_only=True)
class HourProfile:
    """One local hour of the week of a deployment's profile."""

    hour_of_week: int
    rpm_p50: float
    rpm_p95: float
    active_share: float
    observed_minutes: int
    observed_weeks: int
    idle_weeks: int

    @property
    def day(self) -> int:
        """The weekday (Monday 0 ... Sunday 6)."""
        return self.hour_of_week // 24

    @property
    def hour(self) -> int:
        """The hour of the day (0-23)."""
        return self.hour_of_week % 24

    def to_json(self) -> dict[str, Any]:
        """Return the hour as JSON values."""
        return {
            "hour_of_week": self.hour_of_week,
            "day": self.day,
            "hour": self.hour,
            "rpm_p50": self.rpm_p50,
            "rpm_p95": self.rpm_p95,
            "active_share": self.active_share,
            "observed_minutes": self.observed_minutes,
            "observed_weeks": self.observed_weeks,
            "idle_weeks": self.idle_weeks,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class TrafficProfile:
    """A deployment's profile: 168 hours, or none before its first build."""

    deployment_id: int
    time_zone: str
    built_at: int | None
    hours: tuple[HourProfile, ...]

    def to_json(self) -> dict[str, Any]:
        """Return the profile as JSON values."""
        return {
            "deployment_id": self.deployment_id,
            "time_zone": self.time_zone,
            "built_at_us": self.built_at,
            "window_days": WINDOW_DAYS,
            "hours": [hour.to_json() for hour in self.hours],
        }


def build_hours(series: MinuteSeries) -> list[HourProfile]:
    """Return the 168 hours of the week from a deployment's observed minutes."""
    how = series.hour_of_week
    active = series.active
    minutes = np.bincount(how, minlength=WEEK_HOURS)
    active_minutes = np.bincount(how, weights=active, minlength=WEEK_HOURS)

    # Weeks: each local hour that happened (a wall-clock hour since 1970) is one week's
    # occurrence of its hour of the week.
    occurrences, which = np.unique(series.wall_s // 3600, return_inverse=True)
    occurrence_minutes = np.bincount(which)
    occurrence_active = np.bincount(which, weights=active)
    occurrence_how = hour_of_week(occurrences)
    observed = occurrence_minutes >= MIN_WEEK_MINUTES
    observed_weeks = np.bincount(occurrence_how[observed], minlength=WEEK_HOURS)
    idle = observed & (occurrence_active == 0)
    idle_weeks = np.bincount(occurrence_how[idle], minlength=WEEK_HOURS)

    # Nearest rank: the ceil(p * n)-th smallest of the hour's n values.
    order = np.lexsort((series.rpm, how))
    ranked = series.rpm[order]
    starts = np.concatenate(([0], np.cumsum(minutes)[:-1]))

    def percentile(percent: int) -> list[float]:
        rank = (minutes * percent + 99) // 100
        index = np.minimum(starts + np.maximum(rank, 1) - 1, max(len(ranked) - 1, 0))
        values = ranked[index] if len(ranked) else np.zeros(WEEK_HOURS)
        return [float(v) for v in np.where(minutes > 0, values, 0.0)]

    p50, p95 = percentile(50), percentile(95)
    return [
        HourProfile(
            hour_of_week=h,
            rpm_p50=p50[h],
            rpm_p95=p95[h],
            active_share=float(active_minutes[h] / minutes[h]) if minutes[h] else 0.0,
            observed_minutes=int(minutes[h]),
            observed_weeks=int(observed_weeks[h]),
            idle_weeks=int(idle_weeks[h]),
        )
        for h in range(WEEK_HOURS)
    ]


class ProfileService:
    """Builds and reads the deployments' traffic profiles."""

    def __init__(
        self, store: Store, deployments: DeploymentRepo, *, clock: Clock | None = None
    ) -> None:
        self._store = store
        self._deployments = deployments
        self._clock = clock or store.clock

    def rebuild(
        self,
        deployment_id: int | None = None,
        *,
        now_us: int | None = None,
        context: RunContext | None = None,
    ) -> builtins.list[int]:
        """Rebuild one deployment's profile (or all); return the deployments rebuilt.

        The rollups are read in one read transaction (in one pass over the window for all
        deployments); then every profile is replaced in one short write transaction. A
        deployment removed in between is skipped.
        """
        now = self._clock.now_us() if now_us is None else now_us
        since = now - WINDOW_DAYS * DAY_US
        found = (
            [self._deployments.get(deployment_id)]
            if deployment_id is not None
            else sorted(self._deployments.list(), key=lambda d: d.id)
        )
        targets = [(d.id, d.time_zone) for d in found]
        engine = self._store.engine
        zones = {target: resolve_zone(zone, field="time_zone") for target, zone in targets}
        built: dict[int, list[HourProfile]] = {}
        with reading(engine) as connection:
            for target, series in read_minutes(connection, zones, since, now):
                if context is not None:
                    context.check()
                built[target] = build_hours(series)
        # One write transaction for all: one commit (one fsync on SQLite), and 168 rows a
        # deployment take the write lock for milliseconds.
        with writing(engine) as connection:
            rebuilt = []
            for target, hours in built.items():
                if self._deployments.exists(target, connection=connection):  # else removed
                    _replace(connection, target, hours, now)
                    rebuilt.append(target)
            return rebuilt

    def profile(self, deployment_id: int) -> TrafficProfile:
        """Return a deployment's profile (no hours before its first build); ``NotFound``."""
        with reading(self._store.engine) as connection:
            zone = self._deployments.get(deployment_id, connection=connection).time_zone
            return read_profile(connection, deployment_id, zone)

    def system_jobs(self) -> builtins.list[Job]:
        """Return ``traffic_profiles``, a system job daily at 00:20."""
        return [
            Job(
                TRAFFIC_PROFILES,
                JobKind.SYSTEM,
                CronSchedule.parse("20 0 * * *"),
                self._run_job,
                description="rebuilds each deployment's traffic profile from the last "
                f"{WINDOW_DAYS} days of rollups",
            )
        ]

    def _run_job(self, context: RunContext) -> str:
        rebuilt = self.rebuild(now_us=context.started_at, context=context)
        return f"{counted(len(rebuilt), 'profile')} rebuilt"


def read_profile(connection: Connection, deployment_id: int, time_zone: str) -> TrafficProfile:
    """Read a deployment's stored profile rows."""
    t = traffic_profiles.c
    rows = connection.execute(
        select(traffic_profiles).where(t.deployment_id == deployment_id).order_by(t.hour_of_week)
    ).all()
    return TrafficProfile(
        deployment_id=deployment_id,
        time_zone=time_zone,
        built_at=int(rows[0].built_at) if rows else None,
        hours=tuple(
            HourProfile(
                hour_of_week=int(row.hour_of_week),
                rpm_p50=float(row.rpm_p50),
                rpm_p95=float(row.rpm_p95),
                active_share=float(row.active_share),
                observed_minutes=int(row.observed_minutes),
                observed_weeks=int(row.observed_weeks),
                idle_weeks=int(row.idle_weeks),
            )
            for row in rows
        ),
    )


def _replace(
    connection: Connection, deployment_id: int, hours: list[HourProfile], now: int
) -> None:
    """Replace a deployment's rows."""
    connection.execute(
        delete(traffic_profiles).where(traffic_profiles.c.deployment_id == deployment_id)
    )
    connection.execute(
        insert(traffic_profiles),
        [
            {
                "deployment_id": deployment_id,
                "hour_of_week": hour.hour_of_week,
                "rpm_p50": hour.rpm_p50,
                "rpm_p95": hour.rpm_p95,
                "active_share": hour.active_share,
                "observed_minutes": hour.observed_minutes,
                "observed_weeks": hour.observed_weeks,
                "idle_weeks": hour.idle_weeks,
                "built_at": now,
            }
            for hour in hours
        ],
    )
