"""Deployment schedules: sleep, wake, stop and start on local days at a local time.

- ``service``: ``ScheduleService``, the schedules and the ``schedule_runner`` job.
- ``runner``: the runner's pass, which only decides, and the pool its actions run on.
- ``rows``: the ``deployment_schedules`` rows (``Schedule``, ``ScheduleAction``) and checks.
- ``pauses``: pausing sleep and wake schedules after a failure; lifting a timed-out one's.
- ``slots``: when a schedule's slot is due (pure functions of the schedule and ``now``).
- ``week``: where the schedules leave a deployment down over a week.
"""

from dgxmm.decider.schedules.rows import Schedule as Schedule
from dgxmm.decider.schedules.rows import ScheduleAction as ScheduleAction
from dgxmm.decider.schedules.runner import PendingRun as PendingRun
from dgxmm.decider.schedules.runner import ResultKind as ResultKind
from dgxmm.decider.schedules.runner import SlotRun as SlotRun
from dgxmm.decider.schedules.service import PAUSED_ALL as PAUSED_ALL
from dgxmm.decider.schedules.service import ScheduleService as ScheduleService
from dgxmm.decider.schedules.week import down_intervals as down_intervals

__all__ = [
    "PAUSED_ALL",
    "PendingRun",
    "ResultKind",
    "Schedule",
    "ScheduleAction",
    "ScheduleService",
    "SlotRun",
    "down_intervals",
]
