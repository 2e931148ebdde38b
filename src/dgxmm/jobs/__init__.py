"""The jobs engine: cron in IANA zones, a scheduler the host ticks, workload statistics.

Pure: standard library only (plus ``tzdata`` for zone data), no I/O, no threads, and it
never reads the wall clock: every instant comes from the caller as integer microseconds
since the Unix epoch.
"""

from dgxmm.jobs.catchup import CatchUp, Coalesce
from dgxmm.jobs.context import JobLimits, RunContext, Timer
from dgxmm.jobs.cron.expression import CronSchedule, FireTime
from dgxmm.jobs.cron.zones import ZoneClock, resolve_zone, zone_clock
from dgxmm.jobs.explanation import (
    Cause,
    Explanation,
    Placement,
    RunFact,
    Switch,
    Verdict,
    explain,
    place,
    place_wall,
    read_asked,
)
from dgxmm.jobs.job import (
    Action,
    Job,
    JobKind,
    JobRun,
    Outcome,
    RetryPolicy,
    RunResult,
    SkipReason,
)
from dgxmm.jobs.overlap import CANCELLED_BY_OVERLAP, Overlap
from dgxmm.jobs.roster import JobState
from dgxmm.jobs.scheduler import Scheduler
from dgxmm.jobs.stats.history import LastRun, RunCounts, SkipRecord
from dgxmm.jobs.stats.overrides import KEEP, JobOverrides, Keep, Override
from dgxmm.jobs.stats.series import Bucket, Tier
from dgxmm.jobs.stats.workload import Channel, WorkloadStats

__all__ = [
    "CANCELLED_BY_OVERLAP",
    "KEEP",
    "Action",
    "Bucket",
    "CatchUp",
    "Cause",
    "Channel",
    "Coalesce",
    "CronSchedule",
    "Explanation",
    "FireTime",
    "Job",
    "JobKind",
    "JobLimits",
    "JobOverrides",
    "JobRun",
    "JobState",
    "Keep",
    "LastRun",
    "Outcome",
    "Overlap",
    "Override",
    "Placement",
    "RetryPolicy",
    "RunContext",
    "RunCounts",
    "RunFact",
    "RunResult",
    "Scheduler",
    "SkipReason",
    "SkipRecord",
    "Switch",
    "Tier",
    "Timer",
    "Verdict",
    "WorkloadStats",
    "ZoneClock",
    "explain",
    "place",
    "place_wall",
    "read_asked",
    "resolve_zone",
    "zone_clock",
]
