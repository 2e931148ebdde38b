"""A job switched off with a note of why: kept with the switch, dropped when it comes on."""

from __future__ import annotations

import pytest

from dgxmm.errors import DefinitionError
from dgxmm.jobs import CronSchedule, Job, JobKind, RunContext, Scheduler, WorkloadStats
from dgxmm.jobs.keys import PAUSE_NOTE_MAX


def nothing(_context: RunContext) -> None:
    return None


def compact() -> Job:
    return Job("compact", JobKind.SYSTEM, CronSchedule.parse("0 3 * * *"), nothing)


def test_it_keeps_a_system_jobs_pause_note_with_its_switch_across_a_restart() -> None:
    stats = WorkloadStats()
    scheduler = Scheduler("UTC", stats)
    scheduler.add(compact())
    scheduler.set_enabled("compact", False, note="  disk is being replaced  ")
    assert scheduler.get("compact").pause_note == "disk is being replaced"
    again = Scheduler("UTC", WorkloadStats.from_json(stats.to_json()))
    again.add(compact())
    assert (again.get("compact").enabled, again.get("compact").pause_note) == (
        False,
        "disk is being replaced",
    )
    again.set_enabled("compact", True)
    assert again.get("compact").pause_note is None
    assert again.stats is not None
    assert again.stats.job_override("compact") is None  # nothing left to keep


@pytest.mark.parametrize(
    ("on", "note", "message"),
    [
        (True, "why", "a pause note goes with switching a job off"),
        (False, "x" * (PAUSE_NOTE_MAX + 1), f"at most {PAUSE_NOTE_MAX}"),
        (False, 5, "expected text, got 5"),
    ],
    ids=["with-on", "too-long", "not-text"],
)
def test_it_refuses_a_note_it_cannot_keep_and_changes_nothing(
    on: bool, note: object, message: str
) -> None:
    scheduler = Scheduler("UTC", WorkloadStats())
    scheduler.add(compact())
    scheduler.set_enabled("compact", False, note="first")
    with pytest.raises(DefinitionError) as refused:
        scheduler.set_enabled("compact", on, note=note)  # type: ignore[arg-type]
    assert refused.value.field == "note"
    assert message in refused.value.message
    assert (scheduler.get("compact").enabled, scheduler.get("compact").pause_note) == (
        False,
        "first",
    )
