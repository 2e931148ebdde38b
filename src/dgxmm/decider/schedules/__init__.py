"""Deployment schedules: sleep, wake, stop and start on local days at a local time.

- ``service``: ``ScheduleService``, the schedules and the ``schedule_runner`` job.
- ``runner``: the runner's pass, which only decides, and the pool its actions run on.
- ``rows``: the ``deployment_schedules`` rows (``Schedule``, ``ScheduleAction``) and checks.
- ``pauses``: pausing sleep and wake schedules after a failure; lifting a timed-out one's.
- ``slots``: when a schedule's slot is due (pure functions of the schedule and ``now``).
- ``verdicts``: what the runner decides about a due slot (pure functions of what it read and
  ``now``): the runner and the savings lab call the same ones.
- ``week``: where the schedules leave a deployment down over a week.
"""

from dgxmm.decider.schedules.rows import Schedule as Schedule
from dgxmm.decider.schedules.rows import ScheduleAction as ScheduleAction
from dgxmm.decider.schedules.runner import PendingRun as PendingRun
from dgxmm.decider.schedules.runner import ResultKind as ResultKind
from dgxmm.decider.schedules.runner import SlotRun as SlotRun
from dgxmm.decider.schedules.service import PAUSED_ALL as PAUSED_ALL
from dgxmm.decider.schedules.service import ScheduleService as ScheduleService
from dgxmm.decider.schedules.verdicts import QUIET_US as QUIET_US
from dgxmm.decider.schedules.verdicts import Act as Act
from dgxmm.decider.schedules.verdicts import CheckQuiet as CheckQuiet
from dgxmm.decider.schedules.verdicts import DeployerCall as DeployerCall
from dgxmm.decider.schedules.verdicts import NotQuiet as NotQuiet
from dgxmm.decider.schedules.verdicts import Skip as Skip
from dgxmm.decider.schedules.verdicts import Traffic as Traffic
from dgxmm.decider.schedules.verdicts import down_verdict as down_verdict
from dgxmm.decider.schedules.verdicts import quiet_verdict as quiet_verdict
from dgxmm.decider.schedules.verdicts import slot_order as slot_order
from dgxmm.decider.schedules.verdicts import superseded_reason as superseded_reason
from dgxmm.decider.schedules.verdicts import up_verdict as up_verdict
from dgxmm.decider.schedules.week import down_intervals as down_intervals

__all__ = [
    "PAUSED_ALL",
    "QUIET_US",
    "Act",
    "CheckQuiet",
    "DeployerCall",
    "NotQuiet",
    "PendingRun",
    "ResultKind",
    "Schedule",
    "ScheduleAction",
    "ScheduleService",
    "Skip",
    "SlotRun",
    "Traffic",
    "down_intervals",
    "down_verdict",
    "quiet_verdict",
    "slot_order",
    "superseded_reason",
    "up_verdict",
]
