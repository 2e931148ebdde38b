"""The host's ticker thread: picks up catalog changes at its next tick; stops cleanly."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest
from support import at, wait_for

from dgxmm.clock import ManualClock
from dgxmm.errors import Busy
from dgxmm.jobs import CronSchedule, Job, JobKind, Outcome, RunContext
from dgxmm.server import Host
from dgxmm.store import Store
from dgxmm.store.database import BUSY_MESSAGE


def test_it_picks_up_a_defined_changed_and_dropped_job_at_its_next_tick(
    store: Store, clock: ManualClock
) -> None:
    host = Host(store, time_zone="Europe/Berlin", clock=clock, tick_seconds=0.05)
    host.start()
    try:
        store.define_job(name="cp", schedule="* * * * *", action="checkpoint")
        wait_for(lambda: "cp" in [job.name for job in host.scheduler.jobs()], "cp to be planned")
        clock.set(at("2026-06-01T10:01:00+02:00"))
        wait_for(lambda: store.workload_stats.last_run("cp"), "a run of cp")
        store.define_job(name="cp", schedule="0 4 * * *", action="checkpoint")
        wait_for(lambda: str(host.scheduler.get("cp").schedule) == "0 4 * * *", "the new schedule")
        store.drop_job("cp")
        wait_for(lambda: "cp" not in [job.name for job in host.scheduler.jobs()], "cp to go")
        assert host.running
    finally:
        host.stop()
    assert not host.running


def test_it_gives_up_runs_under_way_when_it_stops_and_flushes_the_stats(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    inside = threading.Event()
    noticed: list[str] = []

    def long(context: RunContext) -> None:
        inside.set()
        while True:
            try:
                context.check()
            except Exception as error:
                noticed.append(str(error))
                raise
            time.sleep(0.01)

    job = Job("long", JobKind.SYSTEM, CronSchedule.parse("* * * * *"), long)
    host = Host(store, time_zone="UTC", clock=clock, tick_seconds=0.05, system_jobs=[job])
    host.start()
    clock.set(at("2026-06-01T10:01:00+02:00"))
    assert inside.wait(timeout=30)
    (given_up,) = [result for result in host.stop() if result.name == "long"]
    assert (given_up.name, given_up.error) == ("long", "abandoned: the server stopped while it ran")
    assert noticed == ["job long: abandoned: the server stopped while it ran"]
    last = store.workload_stats.last_run("long")
    assert last is not None
    assert last.error == "abandoned: the server stopped while it ran"
    sidecar = Path(str(store.path) + ".workload.json")
    assert sidecar.exists()
    assert '"long"' in sidecar.read_text()


def test_it_abandons_a_run_that_cannot_get_a_thread_and_frees_its_group(
    store: Store, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[str] = []
    first = Job("first", JobKind.SYSTEM, CronSchedule.parse("0 4 * * *"),
                lambda context: ran.append("first"), group="g")  # fmt: skip
    second = Job("second", JobKind.SYSTEM, CronSchedule.parse("0 4 * * *"),
                 lambda context: ran.append("second"), group="g")  # fmt: skip
    host = Host(store, time_zone="UTC", clock=clock, system_jobs=[first, second])
    start = threading.Thread.start

    def no_thread(thread: threading.Thread) -> None:
        if thread.name.startswith("dgxmm-job-"):
            raise RuntimeError("can't start new thread")
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", no_thread)
    result = host.run_now("first", timeout=30)
    assert (result.outcome, result.error) == (Outcome.FAILED, "abandoned: can't start new thread")
    assert ran == []
    monkeypatch.setattr(threading.Thread, "start", start)
    assert host.run_now("second", timeout=30).outcome is Outcome.SUCCEEDED  # the group is free
    assert ran == ["second"]


def test_a_tick_that_waited_too_long_for_the_database_says_so_in_one_line(
    store: Store,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The demo's first run held the write lock for seconds: the host's tick logged a 60-line
    # traceback of "database is locked" that read as a crash (issue 45).
    host = Host(store, time_zone="UTC", clock=clock, tick_seconds=0.05)

    def busy_tick() -> None:
        raise Busy(BUSY_MESSAGE)

    with caplog.at_level(logging.WARNING, logger="dgxmm.server.host.host"):
        host.start()  # its first tick plans, on this thread; the ticker's then wait too long
        monkeypatch.setattr(host, "tick", busy_tick)
        try:
            wait_for(
                lambda: (
                    len([r for r in caplog.records if "waited too long" in r.getMessage()]) >= 2
                ),
                "two ticks that waited",
            )
        finally:
            host.stop()
    said = [r for r in caplog.records if "waited too long" in r.getMessage()]
    assert all(r.exc_info is None and "\n" not in r.getMessage() for r in said)
    assert "ticking on" in said[0].getMessage()
