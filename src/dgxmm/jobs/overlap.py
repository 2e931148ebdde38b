"""Overlap: what a job's time does when it comes while the job's own run is under way.

- ``skip`` (the default, the spec's rule): nothing starts; when the run ends the times it
  ran over are one skip record (``overlap``) and the job is planned after it;
- ``buffer_one``: the first such time waits and starts as soon as the run ends; any other
  that comes meanwhile is skipped (``overlap``), as Temporal's ``BufferOne``;
- ``cancel_other``: the run under way is cancelled (as ``POST /api/jobs/runs/{id}/cancel``
  does, by ``overlap: cancel_other``), and the time waits for it to end, then starts.

Groups keep their own rule whatever the policy: a time whose group is busy waits and is
never missed. Pure: ``on_overlap`` says what to do; the scheduler does it.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["CANCELLED_BY_OVERLAP", "Overlap", "OverlapStep", "on_overlap"]

# Who a run cancelled by a newer time of its job was cancelled by, as its record says.
CANCELLED_BY_OVERLAP = "overlap: cancel_other"


class Overlap(Enum):
    """A job's overlap policy."""

    SKIP = "skip"
    BUFFER_ONE = "buffer_one"
    CANCEL_OTHER = "cancel_other"


class OverlapStep(Enum):
    """What a time that came while the job is busy does."""

    SKIP = "skip"  # recorded skipped (overlap)
    WAIT = "wait"  # waits, and starts as soon as the job is free
    CANCEL_AND_WAIT = "cancel_and_wait"  # the run under way is cancelled; this one waits


def on_overlap(policy: Overlap, *, one_waits: bool) -> OverlapStep:
    """Say what a time does that came while its job runs (``one_waits``: a time waits already)."""
    if policy is Overlap.SKIP or one_waits:
        return OverlapStep.SKIP
    if policy is Overlap.BUFFER_ONE:
        return OverlapStep.WAIT
    return OverlapStep.CANCEL_AND_WAIT
