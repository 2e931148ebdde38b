"""The decider: deployment schedules and their runner, traffic profiles, schedule proposals.

- ``schedules/``: ``ScheduleService``, the schedules and the runner.
- ``traffic`` / ``profiles``: a deployment's minutes from its rollups; ``ProfileService``,
  its week hour by hour.
- ``proposals/``: ``ProposalService``, the proposals made from the profiles, and the
  decision models.
- ``days``: days of the week as a bitmask; ``tables``: the decider's tables.
"""

from dgxmm.decider.profiles import HourProfile as HourProfile
from dgxmm.decider.profiles import ProfileService as ProfileService
from dgxmm.decider.profiles import TrafficProfile as TrafficProfile
from dgxmm.decider.proposals import ProposalService as ProposalService
from dgxmm.decider.proposals import ProposalStatus as ProposalStatus
from dgxmm.decider.schedules import Schedule as Schedule
from dgxmm.decider.schedules import ScheduleAction as ScheduleAction
from dgxmm.decider.schedules import ScheduleService as ScheduleService

__all__ = [
    "HourProfile",
    "ProfileService",
    "ProposalService",
    "ProposalStatus",
    "Schedule",
    "ScheduleAction",
    "ScheduleService",
    "TrafficProfile",
]
