"""What the decider's policies do on their own, as ``/metrics`` counts it (issue 25)."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["PolicyAct"]


class PolicyAct(StrEnum):
    """One thing a policy did without a person or a slot's minute asking for it."""

    IDLE_SLEEP = "idle_sleep"  # the idle ladder's (or the histogram's) sleep at level 1
    IDLE_DEEPEN = "idle_deepen"  # to level 2
    IDLE_STOP = "idle_stop"
    PRE_WAKE = "pre_wake"  # the histogram policy woke it ahead of the next request
    EARLY_WAKE = "early_wake"  # a scheduled wake or start begun early by its wake lead
