"""The conditions, read from what the layers recorded, and what a message may say."""

from __future__ import annotations

import json
import socket
from datetime import timedelta
from pathlib import Path

from alerts.alertkit import KEY, LOOPBACK_ALLOWED, POLICY, Receiver
from sqlalchemy import insert

from dgxmm.alerts import Alerts
from dgxmm.clock import ManualClock
from dgxmm.decider import ScheduleAction, ScheduleService
from dgxmm.fleet import LOG_TAIL_MARK, DeploymentState, Fleet
from dgxmm.jobs import CronSchedule, Job, JobKind, JobRun, Outcome, RunResult
from dgxmm.server.access.redaction import public_text
from dgxmm.store import Store, Trigger, writing
from dgxmm.store.schema import instances
from dgxmm.time_units import SECOND_US

BACKUP = Job("backup", JobKind.USER, CronSchedule.parse("0 * * * *"), lambda _ctx: None)


def _ran(store: Store, outcome: Outcome, *, late_s: int = 0, error: str | None = None) -> None:
    now = store.clock.now_us()
    run = JobRun(BACKUP, scheduled_at=now - late_s * SECOND_US, started_at=now,
                 timer=lambda: 0.0)  # fmt: skip
    run_id = store.runs.claim(run, Trigger.SCHEDULE)
    assert run_id is not None
    store.runs.finish(
        run_id,
        RunResult(name="backup", token=run.token, scheduled_at=run.scheduled_at,
                  started_at=now, duration_us=1000, outcome=outcome, error=error,
                  public_error=error),
    )  # fmt: skip


def _watch(alerts: Alerts, receiver: Receiver, condition: str, **numbers: int) -> None:
    _, receiver.secret = alerts.channels.create({"name": "ops", "url": receiver.url},
                                                actor="user:alice")  # fmt: skip
    alerts.rules.create(
        {"name": "watch", "condition": condition, "channels": ["ops"], **numbers},
        actor="user:alice",
    )


def _pass(alerts: Alerts, clock: ManualClock) -> None:
    alerts.pulse(clock.now_us())
    alerts.step()
    clock.advance(timedelta(minutes=1))


def test_a_failed_run_fires_and_the_next_success_resolves(
    alerts: Alerts, store: Store, clock: ManualClock
) -> None:
    with Receiver() as receiver:
        _watch(alerts, receiver, "job_failed")
        _ran(store, Outcome.SUCCEEDED)
        _pass(alerts, clock)
        _ran(store, Outcome.FAILED, error="QueryError: no such table: notes")
        _pass(alerts, clock)
        _ran(store, Outcome.SUCCEEDED)
        _pass(alerts, clock)
    got = [(r.body["kind"], r.body["subject"]) for r in receiver.requests()]
    assert got == [("firing", "job:backup"), ("resolved", "job:backup")]
    assert "no such table: notes" in receiver.requests()[0].body["title"]


def test_a_run_over_its_time_fires(alerts: Alerts, store: Store, clock: ManualClock) -> None:
    with Receiver() as receiver:
        _watch(alerts, receiver, "job_over_time")
        _ran(store, Outcome.OVER_TIME)
        _pass(alerts, clock)
    [got] = receiver.requests()
    assert got.body["title"].startswith("job backup went over its time limit")


def test_a_run_later_than_x_minutes_fires(alerts: Alerts, store: Store, clock: ManualClock) -> None:
    with Receiver() as receiver:
        _watch(alerts, receiver, "job_late", window_minutes=5)
        _ran(store, Outcome.SUCCEEDED, late_s=299)  # within 5 minutes: fine
        _pass(alerts, clock)
        _ran(store, Outcome.SUCCEEDED, late_s=301)
        _pass(alerts, clock)
    [got] = receiver.requests()
    assert got.body["title"] == "job backup started 301 s after its time (more than 5 min)"


def test_a_message_says_no_log_tail_and_no_key(
    store: Store, fleet: Fleet, clock: ManualClock
) -> None:
    alerts = Alerts(store, fleet, key=KEY, clock=clock, policy=POLICY,
                    destinations=LOOPBACK_ALLOWED,
                    shown=lambda text: public_text(text) or "")  # fmt: skip
    key = fleet.deployments.create(
        actor="user:alice", name="llama", model="m", backend="external",
        base_url="http://127.0.0.1:9", gpus=[0], memory_gib_awake=1.0, memory_gib_asleep=0.5,
    ).id  # fmt: skip
    error = f"gone (Authorization: Bearer sk-abcdefabcdefabcdef1234){LOG_TAIL_MARK}--api-key x"
    with writing(store.engine) as connection:
        fleet.deployments.set_state(connection, key, DeploymentState.FAILED, error=error)
    try:
        with Receiver() as receiver:
            _watch(alerts, receiver, "deployment_failed")
            _pass(alerts, clock)
    finally:
        alerts.stop()
    [got] = receiver.requests()
    assert "sk-abcdef" not in str(got.body)
    assert "--api-key" not in str(got.body)
    assert "deployment llama failed: gone" in got.body["title"]


def test_a_backup_holds_no_secret_in_clear(alerts: Alerts, store: Store, tmp_path: Path) -> None:
    with Receiver() as receiver:
        _watch(alerts, receiver, "job_failed")
    target = tmp_path / "backup"
    store.backup(target)
    blob = b"".join(p.read_bytes() for p in target.rglob("*") if p.is_file())
    assert b"alert_channels" in blob  # the table is carried ...
    assert receiver.secret.encode() not in blob  # ... its secret and URL only sealed
    assert b"s3cr3t-path" not in blob


def test_a_lost_instance_that_held_the_lease_fires(
    alerts: Alerts, store: Store, clock: ManualClock
) -> None:
    now = clock.now_us()
    with writing(store.engine) as connection:  # an instance whose process is gone
        connection.execute(
            insert(instances).values(
                id="old-holder", role="holder", started_at=now, role_since=now, last_seen=now,
                place=json.dumps({"host": socket.gethostname().split(".")[0][:40],
                                  "pid": 2**22 + 12345}),
            )
        )  # fmt: skip
    with Receiver() as receiver:
        _watch(alerts, receiver, "instance_lost", window_minutes=30)
        _pass(alerts, clock)
        clock.advance(timedelta(minutes=30))  # no longer news: resolved
        _pass(alerts, clock)
    got = [(r.body["kind"], r.body["subject"]) for r in receiver.requests()]
    assert got == [("firing", "instance:old-holder"), ("resolved", "instance:old-holder")]
    assert "held the ticker's lease" in receiver.requests()[0].body["title"]


def test_a_failed_scheduled_action_that_paused_its_schedules_fires(
    store: Store, fleet: Fleet, clock: ManualClock
) -> None:
    schedules = ScheduleService(store, fleet, clock=clock)
    alerts = Alerts(
        store, fleet, key=KEY, clock=clock, policy=POLICY, schedules=schedules,
        destinations=LOOPBACK_ALLOWED,
    )  # fmt: skip
    key = fleet.deployments.create(
        actor="user:alice", name="llama", model="m", backend="external",
        base_url="http://127.0.0.1:9", gpus=[0], memory_gib_awake=1.0, memory_gib_asleep=0.5,
    ).id  # fmt: skip
    sleep = schedules.create(key, action=ScheduleAction.SLEEP, days=127, time="22:00",
                             actor="user:alice")  # fmt: skip
    try:
        with Receiver() as receiver:
            _watch(alerts, receiver, "schedule_paused")
            _pass(alerts, clock)
            with writing(store.engine) as connection:  # as the runner does after a failure
                schedules._pauses.pause(connection, sleep, "no answer", clock.now_us(),
                                        timed_out_event=None)  # fmt: skip
            _pass(alerts, clock)
            schedules.update(sleep.id, actor="user:alice", enabled=True)
            _pass(alerts, clock)
    finally:
        alerts.stop()
        schedules.close()
    got = [(r.body["kind"], r.body["subject"]) for r in receiver.requests()]
    assert got == [("firing", f"schedule:{sleep.id}"), ("resolved", f"schedule:{sleep.id}")]
    assert "failed to sleep (no answer)" in receiver.requests()[0].body["title"]
