"""The ticker's lease when its holder is stuck but connected: the beat, the depose, the fence.

Two stores on one database stand for two instances (each its own data directory). The
standby's wait is measured on a monotonic reading the test passes in (``at``), so nothing
here sleeps. The same pieces under real processes and SIGSTOP: ``test_stuck_holder.py`` in
``tests/server``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from support import at, wait_for

from dgxmm.clock import ManualClock
from dgxmm.errors import Conflict
from dgxmm.jobs import CronSchedule, Job, JobKind, JobRun
from dgxmm.store import InstanceRole, Store, Trigger

EVERY_MINUTE = Job("m", JobKind.USER, CronSchedule.parse("* * * * *"), lambda _ctx: None)
LIMIT = 10.0


def a_run(minute: str) -> JobRun:
    instant = at(minute)
    return JobRun(EVERY_MINUTE, scheduled_at=instant, started_at=instant, timer=lambda: 0.0)


def test_every_beat_moves_last_seen_even_when_the_clock_stands_still(
    open_store: Callable[..., Store],
) -> None:
    store = open_store()  # the fixture's ManualClock never moves by itself
    store.presence.register(InstanceRole.HOLDER)
    seen = []
    for _ in range(3):
        store.presence.beat()
        (me,) = [i for i in store.presence.all() if i.id == store.instance]
        seen.append(me.last_seen)
    assert seen[0] < seen[1] < seen[2]


@pytest.mark.postgres
def test_a_standby_deposes_a_holder_whose_beat_stood_still_and_the_old_one_claims_nothing(
    pg_url: str, tmp_path: Path, clock: ManualClock
) -> None:
    holder = Store.open(pg_url, data_dir=tmp_path / "a", clock=clock)
    standby = Store.open(pg_url, data_dir=tmp_path / "b", clock=clock)
    try:
        assert holder.presence.try_lease() is True
        holder.presence.set_role(InstanceRole.HOLDER)
        assert holder.runs.claim_all([a_run("2026-03-02T10:01:00+00:00")], Trigger.SCHEDULE,
                                     leading=True)[0] is not None  # fmt: skip
        assert standby.presence.try_lease() is False
        watch = standby.presence
        assert watch.depose_if_stuck(at=100.0, after_seconds=LIMIT) is None  # first sight
        assert watch.depose_if_stuck(at=109.0, after_seconds=LIMIT) is None  # not yet
        holder.presence.beat()  # it ticks: the wait starts again
        assert watch.depose_if_stuck(at=111.0, after_seconds=LIMIT) is None
        assert watch.depose_if_stuck(at=120.0, after_seconds=LIMIT) is None
        assert watch.holds_lease() is False
        # Now it stops beating (SIGSTOP): after the limit, its sessions are ended.
        assert watch.depose_if_stuck(at=121.5, after_seconds=LIMIT) == holder.instance
        wait_for(standby.presence.try_lease, "the lease to be free")
        # The old holder wakes up: its claim is refused before anything is written, and it
        # can tell it lost the lease.
        with pytest.raises(Conflict, match="no longer holds the ticker's lease"):
            holder.runs.claim_all([a_run("2026-03-02T10:02:00+00:00")], Trigger.SCHEDULE,
                                  leading=True)  # fmt: skip
        assert holder.presence.holds_lease() is False
        assert standby.runs.claim_all([a_run("2026-03-02T10:02:00+00:00")], Trigger.SCHEDULE,
                                      leading=True)[0] is not None  # fmt: skip
        rows = standby.runs.page(job="m")
        assert [(r.scheduled_at, r.instance) for r in rows] == [
            (at("2026-03-02T10:02:00+00:00"), standby.instance),
            (at("2026-03-02T10:01:00+00:00"), holder.instance),
        ]
    finally:
        standby.close()
        holder.close()


@pytest.mark.postgres
def test_a_holder_that_beat_since_it_was_seen_is_not_deposed(
    pg_url: str, tmp_path: Path, clock: ManualClock
) -> None:
    holder = Store.open(pg_url, data_dir=tmp_path / "a", clock=clock)
    standby = Store.open(pg_url, data_dir=tmp_path / "b", clock=clock)
    try:
        assert holder.presence.try_lease() is True
        holder.presence.register(InstanceRole.HOLDER)
        beat = standby.presence.lease_holder()
        assert beat is not None
        assert beat.instance == holder.instance
        holder.presence.beat()  # between the standby's look and its depose
        assert standby.presence.depose(beat) == 0
        assert holder.presence.holds_lease() is True
    finally:
        standby.close()
        holder.close()
