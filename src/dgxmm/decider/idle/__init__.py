"""Idle policies: what a deployment nobody uses does by itself (issue 25).

- ``ladder``: the idle ladder (sleep at level 1, deepen to level 2, stop, each after a time
  without requests), bounded by the schedules' awake windows; ``idle_step`` decides a step.
- ``histogram``: the histogram policy (after "Serverless in the Wild"): keep-alive and
  pre-wake windows learned from the deployment's idle gaps.
- ``priced``: the priced policy (issue 42): rungs from the break-even rule at a price of
  waiting, over the deployment's measured durations, scaled by the hour's profile, and a
  wake ahead of a regular start.

- ``budget``: the price that spends a deployment's wait budget (issue 42), a search over
  prices of a replay the lab gives; ``budgets``: ``WaitBudgets``, its daily job and record.
- ``runner``: ``IdleRunner``, the product's: a pulse every second that decides each
  deployment's step and hands it to a worker (the lock, the quiet check with the door shut);
- ``watched``: what the pulse looks at (the deployments with an idle policy and their
  schedules), read again only when their change versions moved.

``ladder``, ``histogram`` and ``priced`` are pure functions and an accumulator, with no
clock, lock or I/O: the product's runner and the savings lab (``dgxmm.lab``) call the same ones.
"""

from dgxmm.decider.idle.budget import BudgetChoice as BudgetChoice
from dgxmm.decider.idle.budget import BudgetOutcome as BudgetOutcome
from dgxmm.decider.idle.budget import Replayer as Replayer
from dgxmm.decider.idle.budget import Traffic as Traffic
from dgxmm.decider.idle.budget import Trial as Trial
from dgxmm.decider.idle.budget import find_price as find_price
from dgxmm.decider.idle.budgets import WAIT_BUDGETS as WAIT_BUDGETS
from dgxmm.decider.idle.budgets import WaitBudgets as WaitBudgets
from dgxmm.decider.idle.histogram import GapHistogram as GapHistogram
from dgxmm.decider.idle.histogram import HistogramWindows as HistogramWindows
from dgxmm.decider.idle.histogram import ladder_in_effect as ladder_in_effect
from dgxmm.decider.idle.histogram import pre_wake_at as pre_wake_at
from dgxmm.decider.idle.ladder import IDLE_ACTOR as IDLE_ACTOR
from dgxmm.decider.idle.ladder import IDLE_TICK_US as IDLE_TICK_US
from dgxmm.decider.idle.ladder import IdleLadder as IdleLadder
from dgxmm.decider.idle.ladder import IdleStep as IdleStep
from dgxmm.decider.idle.ladder import ScheduleSlots as ScheduleSlots
from dgxmm.decider.idle.ladder import awake_window as awake_window
from dgxmm.decider.idle.ladder import idle_step as idle_step
from dgxmm.decider.idle.priced import PRODUCT_PRICE as PRODUCT_PRICE
from dgxmm.decider.idle.priced import HourExpectation as HourExpectation
from dgxmm.decider.idle.priced import Level as Level
from dgxmm.decider.idle.priced import PricedCosts as PricedCosts
from dgxmm.decider.idle.priced import priced_ladder as priced_ladder
from dgxmm.decider.idle.runner import PULSE_SECONDS as PULSE_SECONDS
from dgxmm.decider.idle.runner import IdleOutcome as IdleOutcome
from dgxmm.decider.idle.runner import IdleRunner as IdleRunner

__all__ = [
    "IDLE_ACTOR",
    "IDLE_TICK_US",
    "PRODUCT_PRICE",
    "PULSE_SECONDS",
    "WAIT_BUDGETS",
    "BudgetChoice",
    "BudgetOutcome",
    "GapHistogram",
    "HistogramWindows",
    "HourExpectation",
    "IdleLadder",
    "IdleOutcome",
    "IdleRunner",
    "IdleStep",
    "Level",
    "PricedCosts",
    "Replayer",
    "ScheduleSlots",
    "Traffic",
    "Trial",
    "WaitBudgets",
    "awake_window",
    "find_price",
    "idle_step",
    "ladder_in_effect",
    "pre_wake_at",
    "priced_ladder",
]
