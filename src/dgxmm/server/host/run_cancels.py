"""Cancels of runs under way, asked on any instance.

A cancel is written into the run's row (``JobRuns.request_cancel``); the instance that runs
it cancels it (``JobRun.cancel``): at once when the request was made there, else when its
ticker next looks (every pass, about a second, while it has runs under way). On SQLite a
writing run holds the one write lock, so a run of this instance is cancelled in memory first
and the request written after, when the interrupted statement has let the lock go.
"""

from __future__ import annotations

from dgxmm.errors import Conflict
from dgxmm.jobs import JobRun
from dgxmm.store import RunRecord, Store

__all__ = ["apply_cancels", "cancel_run"]


def cancel_run(store: Store, here: dict[int, JobRun], run_id: int, *, by: str) -> RunRecord:
    """Cancel run ``run_id`` on behalf of ``by``; ``here``: this instance's runs by row id.

    ``NotFound`` for no such run, ``Conflict`` for one that has ended.
    """
    store.runs.cancellable(run_id)
    run = here.get(run_id)
    if run is not None and run.cancel(by):
        try:
            return store.runs.request_cancel(run_id, by)
        except Conflict:  # it has ended meanwhile, cancelled
            ended = store.runs.get(run_id)
            assert ended is not None
            return ended
    return store.runs.request_cancel(run_id, by)


def apply_cancels(store: Store, here: dict[int, JobRun]) -> None:
    """Cancel the runs of ``here`` (this instance's, by row id) someone asked to cancel."""
    if not here:
        return  # nothing of ours under way: no need to ask the database
    for run_id, by in store.runs.cancels_requested():
        if run_id in here:
            here[run_id].cancel(by)
