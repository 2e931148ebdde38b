"""The store's system jobs: built in, never removed; their schedule and switch can be overridden.

- ``stats_flush``: every minute, on: writes the workload statistics to the sidecar;
- ``compact``: 03:00 daily, off: rebuilds the database compactly (VACUUM);
- ``runs_purge``: 04:10 daily, on: deletes the job runs older than the setting
  ``jobs.runs_keep_days`` (default 90).

The overrides live in the database (``overrides.py``, which the ``Scheduler`` calls when
built with ``overrides=store.job_overrides``): they survive a restart and every instance on
the database shares them. These are the built-in definitions; the scheduler applies the
overrides when the jobs are added and at each ``store.sync``.
"""

from __future__ import annotations

from dgxmm.jobs import Action, CronSchedule, Job, JobKind

__all__ = ["COMPACT", "RUNS_PURGE", "STATS_FLUSH", "SYSTEM_JOB_NAMES", "build_system_jobs"]

STATS_FLUSH = "stats_flush"
COMPACT = "compact"
RUNS_PURGE = "runs_purge"
SYSTEM_JOB_NAMES = frozenset({STATS_FLUSH, COMPACT, RUNS_PURGE})


def build_system_jobs(*, flush: Action, compact: Action, purge: Action) -> list[Job]:
    """Return the store's system jobs with their built-in schedules and switches."""
    return [
        Job(
            STATS_FLUSH,
            JobKind.SYSTEM,
            CronSchedule.parse("* * * * *"),
            flush,
            enabled=True,
            description="writes the workload statistics to the sidecar",
        ),
        Job(
            COMPACT,
            JobKind.SYSTEM,
            CronSchedule.parse("0 3 * * *"),
            compact,
            enabled=False,
            description="rebuilds the database compactly, releasing spare space",
        ),
        Job(
            RUNS_PURGE,
            JobKind.SYSTEM,
            CronSchedule.parse("10 4 * * *"),
            purge,
            enabled=True,
            description="deletes the job runs older than jobs.runs_keep_days (default 90)",
        ),
    ]
