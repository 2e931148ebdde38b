"""What the store's records say about one time of a job: ``dgxmm.jobs.explain`` fed.

The runs come from ``job_runs`` (the job's own around that time, and its group's under way
then); the job's switch over time from the catalog's journal: a user job's definitions (its
``enabled`` key, and when it was defined or dropped), a system job's override setting (its
switch, else the built-in one). The host adds what only it holds: the scheduler's skip
records and when it first ticked.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import Engine

from dgxmm.clock import EARLIEST_US
from dgxmm.jobs import (
    Explanation,
    Job,
    JobKind,
    RunFact,
    SkipRecord,
    Switch,
    explain,
    place,
    place_wall,
)
from dgxmm.store.catalog.journal import Subject, read_history
from dgxmm.store.database import reading
from dgxmm.store.runs.job_runs import JobRuns
from dgxmm.store.runs.overrides import OVERRIDE_PREFIX
from dgxmm.store.runs.records import RunRecord, Trigger

__all__ = ["explain_time"]


def explain_time(
    engine: Engine,
    runs: JobRuns,
    job: Job,
    asked: int | datetime,
    *,
    zone: ZoneInfo,
    now_us: int,
    max_lateness_us: int,
    builtin_enabled: bool = True,
    skips: Iterable[SkipRecord] = (),
    ticking_since: int | None = None,
) -> Explanation:
    """Say what became of ``job``'s time at ``asked`` (an instant, or a naive wall time)."""
    placement = (
        place_wall(job.schedule, zone, asked)
        if isinstance(asked, datetime)
        else place(job.schedule, zone, asked)
    )
    t = placement.time_us if placement.time_us is not None else placement.asked_us
    own, group = runs.around(job.name, t, job.group)
    with reading(engine) as connection:
        if job.kind is JobKind.USER:
            switches = _user_switches(read_history(connection, Subject.JOB, job.name))
        else:
            entries = read_history(connection, Subject.SETTING, OVERRIDE_PREFIX + job.name)
            switches = _system_switches(entries, builtin_enabled)
    return explain(
        placement,
        name=job.name,
        now_us=now_us,
        max_lateness_us=max_lateness_us,
        runs=[_fact(run) for run in own],
        group_runs=[_fact(run) for run in group],
        switches=switches,
        skips=skips,
        ticking_since=ticking_since,
    )


def _fact(run: RunRecord) -> RunFact:
    return RunFact(
        id=run.id,
        job=run.job,
        scheduled=run.trigger in (Trigger.SCHEDULE, Trigger.RETRY),
        scheduled_at=run.scheduled_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
        outcome=run.outcome,
        instance=run.instance,
        attempt=run.attempt,
    )


def _user_switches(entries: list[Any]) -> list[Switch]:
    """A user job's switch after each change of it; not defined before its first definition."""
    switches = []
    if entries and entries[0].before is None:
        switches.append(Switch(at_us=EARLIEST_US, enabled=None))
    for entry in entries:
        after = entry.after
        definition = after.get("definition") if isinstance(after, dict) else None
        enabled = (
            None if not isinstance(definition, dict) else definition.get("enabled") is not False
        )
        switches.append(Switch(at_us=entry.at_us, enabled=enabled))
    return switches


def _system_switches(entries: list[Any], builtin: bool) -> list[Switch]:
    """A system job's switch after each change of its override (none: the built-in one)."""
    switches = []
    for entry in entries:
        value = entry.after
        enabled = value.get("enabled") if isinstance(value, dict) else None
        switches.append(
            Switch(at_us=entry.at_us, enabled=enabled if isinstance(enabled, bool) else builtin)
        )
    return switches
