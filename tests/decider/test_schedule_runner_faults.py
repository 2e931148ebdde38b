"""The schedule runner against slow and faulty stand-in servers, on a manual clock.

Each of the issue's defects has a test here: a slow start that stalled the pass, a race with
a manual action recorded as a failure, lateness measured from the pass's start, and two slots
of one deployment run in schedule-id order. The fault modes of the stand-in (``--fail-sleep``,
``--hang-sleep``, ``--die-on-wake``, ...) are driven through the runner and the deployer with
real processes; each test checks the state, the events, whether the schedules paused (only on
a real failure) and that the deployment's lock was released. No test asserts how long
anything took.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import httpx
from decider.schedulekit import Kit
from decider.schedulekit import kit as kit  # noqa: PLC0414  (the fixture, registered by its own name)
from sqlalchemy import select
from support import PATIENCE_S, at, wait_for

from dgxmm.decider.days import ALL_DAYS
from dgxmm.decider.schedules import ResultKind, ScheduleAction, SlotRun
from dgxmm.fleet import AuditAction, ProcessBackend
from dgxmm.fleet.deployments.tables import deployment_events, insights
from dgxmm.jobs import JobLimits, RunContext
from dgxmm.store import reading

DAY = "2026-06-03T"  # a Wednesday; Berlin is at +02:00


def berlin(hh_mm_ss: str) -> int:
    return at(f"{DAY}{hh_mm_ss}+02:00")


def schedule(kit: Kit, deployment: int, action: ScheduleAction, time_: str) -> int:
    return kit.schedules.create(
        deployment, action=action, days=ALL_DAYS, time=time_, actor="user:alice"
    ).id


def lock_is_free(kit: Kit, deployment: int) -> bool:
    """Tell whether another thread can take the deployment's lock now."""
    lock = kit.fleet.deployer.lock(deployment)
    if not lock.acquire(blocking=False):
        return False
    lock.release()
    return True


def is_paused(kit: Kit, schedule_id: int) -> bool:
    return not kit.schedules.get(schedule_id).enabled


def critical_insights(kit: Kit) -> list[str]:
    with reading(kit.store.engine) as connection:
        rows = connection.execute(
            select(insights.c.kind).where(insights.c.severity == "critical")
        ).all()
    return [row.kind for row in rows]


def schedule_events(kit: Kit, schedule_id: int) -> list[tuple[str, str, str | None]]:
    """(action, outcome, detail) of the events a schedule wrote, oldest first."""
    with reading(kit.store.engine) as connection:
        rows = connection.execute(
            select(
                deployment_events.c.action,
                deployment_events.c.outcome,
                deployment_events.c.detail,
            )
            .where(deployment_events.c.actor == f"schedule:{schedule_id}")
            .order_by(deployment_events.c.id)
        )
        return [(row.action, row.outcome, row.detail) for row in rows]


def pid_of(kit: Kit, deployment: int) -> int:
    backend = kit.fleet.backends.of(kit.fleet.deployments.get(deployment))
    assert isinstance(backend, ProcessBackend)
    pid = backend.pid
    assert pid is not None
    return pid


def set_faults(kit: Kit, deployment: int, **faults: object) -> None:
    response = httpx.post(f"{kit.url(deployment)}/dgxmm/faults", json=faults, timeout=30)
    assert response.status_code == 200, response.text


# -- the defects --------------------------------------------------------------------------------


def test_it_sleeps_one_deployment_while_anothers_start_takes_minutes(kit: Kit) -> None:
    slow = kit.deployment("slow", "--startup-delay", "600", start=False, timeout=600.0)
    quick = kit.deployment("quick")
    start = schedule(kit, slow, ScheduleAction.START, "12:00")
    sleep = schedule(kit, quick, ScheduleAction.SLEEP, "12:03")
    kit.clock.set(berlin("12:00:00"))
    (starting,) = kit.schedules.start_pass(berlin("12:00:00"))  # returns with the start under way
    assert starting.schedule_id == start
    wait_for(lambda: kit.state(slow) == "starting", "the slow start to begin")
    kit.clock.set(berlin("12:01:00"))
    assert kit.schedules.start_pass(berlin("12:01:00")) == []  # not started again
    kit.clock.set(berlin("12:03:00"))
    (sleeping,) = kit.schedules.start_pass(berlin("12:03:00"))
    run = sleeping.future.result(timeout=PATIENCE_S)
    assert run is not None
    assert (run.schedule_id, run.kind) == (sleep, ResultKind.DONE)
    assert kit.state(quick) == "sleeping"
    assert not starting.future.done()  # 600 s of start-up delay: still loading
    assert kit.state(slow) == "starting"
    os.kill(pid_of(kit, slow), signal.SIGKILL)  # it dies while loading: a real failure
    failed = starting.future.result(timeout=PATIENCE_S)
    assert failed is not None
    assert failed.kind is ResultKind.FAILED
    assert kit.state(slow) == "failed"
    assert lock_is_free(kit, slow)


def test_it_measures_lateness_from_the_passs_planned_minute(kit: Kit) -> None:
    deployment = kit.deployment("late", start=False)
    schedule(kit, deployment, ScheduleAction.START, "12:00")
    (job,) = kit.schedules.system_jobs()
    kit.clock.set(berlin("12:15:03"))
    said = job.action(
        RunContext(
            name=job.name,
            scheduled_at=berlin("12:15:00"),  # the 12:15 pass, begun 3 s late
            started_at=berlin("12:15:03"),
            limits=JobLimits(),
            timer=time.monotonic,
        )
    )
    assert isinstance(said, str)
    assert "nothing due" not in said
    assert kit.schedules.drain(timeout_s=PATIENCE_S)
    assert kit.state(deployment) == "running"


def test_it_acts_only_on_the_latest_of_a_deployments_due_slots(kit: Kit) -> None:
    deployment = kit.deployment("twice")
    sleep = schedule(kit, deployment, ScheduleAction.SLEEP, "12:05")  # the lower id
    wake = schedule(kit, deployment, ScheduleAction.WAKE, "12:00")
    kit.clock.set(berlin("12:05:00"))  # the first pass since 11:59: both slots are due
    runs = {run.schedule_id: run for run in kit.schedules.run_pass(berlin("12:05:00"))}
    assert runs[sleep].kind is ResultKind.DONE
    assert runs[wake].kind is ResultKind.SUPERSEDED
    assert runs[wake].result == f"superseded: schedule {sleep}'s sleep at 12:05 is later"
    assert kit.state(deployment) == "sleeping"
    assert kit.schedules.get(wake).last_run_day == "2026-06-03"  # not run at the next pass
    assert kit.schedules.run_pass(berlin("12:06:00")) == []
    assert kit.state(deployment) == "sleeping"
    assert schedule_events(kit, wake) == [
        ("wake", "skipped", f"schedule {sleep}'s sleep at 12:05 is later")
    ]


def manual_action_holding_the_lock(kit: Kit, deployment: int, act: str) -> threading.Event:
    """Hold the deployment's lock on another thread until the returned event is set, then act."""
    held, release = threading.Event(), threading.Event()

    def manual() -> None:
        with kit.fleet.deployer.lock(deployment):
            held.set()
            release.wait(timeout=PATIENCE_S)
            getattr(kit.fleet.deployer, act)(deployment, actor="user:bob")

    threading.Thread(target=manual, daemon=True).start()
    assert held.wait(timeout=PATIENCE_S)
    return release


def run_pass_beside(kit: Kit, release: threading.Event, now: int) -> list[SlotRun]:
    """Run a pass on another thread while the manual action holds the lock, then let it go."""
    runs: list[SlotRun] = []
    passing = threading.Thread(target=lambda: runs.extend(kit.schedules.run_pass(now)))
    passing.start()
    passing.join(timeout=10)  # the fixed runner does not wait for the lock; the old one did
    release.set()
    passing.join(timeout=PATIENCE_S)
    return runs


def test_it_skips_a_wake_that_meets_a_manual_stop(kit: Kit) -> None:
    deployment = kit.deployment("raced")
    kit.fleet.deployer.sleep(deployment, actor="user:alice")
    sleep = schedule(kit, deployment, ScheduleAction.SLEEP, "23:00")
    wake = schedule(kit, deployment, ScheduleAction.WAKE, "12:05")
    release = manual_action_holding_the_lock(kit, deployment, "stop")
    (run,) = run_pass_beside(kit, release, berlin("12:05:00"))
    assert run.kind is ResultKind.SKIPPED
    wait_for(lambda: kit.state(deployment) == "stopped", "the manual stop")
    assert not is_paused(kit, wake)
    assert not is_paused(kit, sleep)
    assert critical_insights(kit) == []
    assert [outcome for _, outcome, _ in schedule_events(kit, wake)] == ["skipped"]


def test_it_skips_a_wake_that_meets_a_manual_wake(kit: Kit) -> None:
    deployment = kit.deployment("woken")
    kit.fleet.deployer.sleep(deployment, actor="user:alice")
    wake = schedule(kit, deployment, ScheduleAction.WAKE, "12:05")
    release = manual_action_holding_the_lock(kit, deployment, "wake")
    (run,) = run_pass_beside(kit, release, berlin("12:05:00"))
    assert run.kind is ResultKind.SKIPPED
    wait_for(lambda: kit.state(deployment) == "running", "the manual wake")
    assert kit.schedules.get(wake).last_result == run.result
    assert [outcome for _, outcome, _ in schedule_events(kit, wake)] == ["skipped"]
    assert not is_paused(kit, wake)


# -- the stand-in's faults through the runner ---------------------------------------------------


def test_it_fails_and_pauses_when_the_server_answers_500_to_sleep(kit: Kit) -> None:
    deployment = kit.deployment("refuses", "--fail-sleep")
    sleep = schedule(kit, deployment, ScheduleAction.SLEEP, "12:05")
    wake = schedule(kit, deployment, ScheduleAction.WAKE, "20:00")
    kit.clock.set(berlin("12:30:00"))  # quiet
    (run,) = kit.schedules.run_pass(berlin("12:05:00"))
    assert run.kind is ResultKind.FAILED
    assert "500" in (run.reason or "")
    assert kit.state(deployment) == "running"  # the server is there, awake
    assert is_paused(kit, sleep)
    assert is_paused(kit, wake)
    assert "schedule_failed" in critical_insights(kit)
    assert [outcome for _, outcome, _ in schedule_events(kit, sleep)] == ["failed"]
    assert lock_is_free(kit, deployment)
    assert kit.schedules.run_pass(berlin("20:00:00")) == []  # the next pass: paused


def test_it_fails_and_pauses_when_the_server_dies_during_a_wake(kit: Kit) -> None:
    deployment = kit.deployment("dies")
    kit.fleet.deployer.sleep(deployment, actor="user:alice")
    set_faults(kit, deployment, die_on_wake=True)
    wake = schedule(kit, deployment, ScheduleAction.WAKE, "12:05")
    sleep = schedule(kit, deployment, ScheduleAction.SLEEP, "23:00")
    (run,) = kit.schedules.run_pass(berlin("12:05:00"))
    assert run.kind is ResultKind.FAILED
    assert kit.state(deployment) == "failed"
    assert is_paused(kit, wake)
    assert is_paused(kit, sleep)
    assert {"deployment_failed", "schedule_failed"} <= set(critical_insights(kit))
    assert [outcome for _, outcome, _ in schedule_events(kit, wake)] == ["failed"]
    assert lock_is_free(kit, deployment)


def test_it_waits_out_a_hung_sleep_beside_another_deployments_action(kit: Kit) -> None:
    hung = kit.deployment("hung", "--hang-sleep", "2")
    other = kit.deployment("other")
    kit.fleet.deployer.sleep(other, actor="user:alice")
    sleep = schedule(kit, hung, ScheduleAction.SLEEP, "12:05")
    wake = schedule(kit, other, ScheduleAction.WAKE, "12:05")
    kit.clock.set(berlin("12:30:00"))  # quiet
    runs = {run.schedule_id: run for run in kit.schedules.run_pass(berlin("12:05:00"))}
    assert (runs[sleep].kind, runs[wake].kind) == (ResultKind.DONE, ResultKind.DONE)
    assert (kit.state(hung), kit.state(other)) == ("sleeping", "running")
    assert not is_paused(kit, sleep)
    assert lock_is_free(kit, hung)


def test_it_wakes_a_server_whose_wake_hangs_a_while(kit: Kit) -> None:
    deployment = kit.deployment("slow_wake", "--hang-wake", "1")
    kit.fleet.deployer.sleep(deployment, actor="user:alice")
    wake = schedule(kit, deployment, ScheduleAction.WAKE, "12:05")
    (run,) = kit.schedules.run_pass(berlin("12:05:00"))
    assert run.kind is ResultKind.DONE
    assert kit.state(deployment) == "running"
    assert [outcome for _, outcome, _ in schedule_events(kit, wake)] == ["done"]
    assert lock_is_free(kit, deployment)


def test_it_starts_a_server_with_a_start_up_delay(kit: Kit) -> None:
    deployment = kit.deployment("loading", "--startup-delay", "1", start=False)
    start = schedule(kit, deployment, ScheduleAction.START, "12:05")
    (run,) = kit.schedules.run_pass(berlin("12:05:00"))
    assert run.kind is ResultKind.DONE
    assert kit.state(deployment) == "running"
    assert not is_paused(kit, start)
    assert lock_is_free(kit, deployment)


def test_it_defers_a_sleep_whose_metrics_do_not_answer(kit: Kit) -> None:
    deployment = kit.deployment("mute")
    sleep = schedule(kit, deployment, ScheduleAction.SLEEP, "12:05")
    kit.clock.set(berlin("12:30:00"))
    set_faults(kit, deployment, metrics_delay_s=3600)
    (run,) = kit.schedules.run_pass(berlin("12:05:00"))
    set_faults(kit, deployment, metrics_delay_s=0)
    assert run.kind is ResultKind.DEFERRED
    assert "metrics could not be read" in (run.reason or "")
    assert kit.state(deployment) == "running"
    assert not is_paused(kit, sleep)
    assert lock_is_free(kit, deployment)


def open_critical_insights(kit: Kit) -> list[str]:
    with reading(kit.store.engine) as connection:
        rows = connection.execute(
            select(insights.c.kind).where(
                insights.c.severity == "critical", insights.c.dismissed_at.is_(None)
            )
        ).all()
    return [row.kind for row in rows]


def test_it_lifts_the_pause_of_a_sleep_that_timed_out_and_finished_after_all(kit: Kit) -> None:
    deployment = kit.deployment("late", "--hang-sleep", "3600", sleep_timeout_s=1.0)
    sleep = schedule(kit, deployment, ScheduleAction.SLEEP, "12:05")
    wake = schedule(kit, deployment, ScheduleAction.WAKE, "20:00")
    own = schedule(kit, deployment, ScheduleAction.WAKE, "07:00")
    kit.schedules.update(own, actor="user:alice", enabled=False)  # a person's own pause
    confirmed = schedule(kit, deployment, ScheduleAction.WAKE, "21:00")
    kit.clock.set(berlin("12:30:00"))  # quiet
    (run,) = kit.schedules.run_pass(berlin("12:05:00"))
    assert run.kind is ResultKind.FAILED
    assert "no answer within 1 s" in (run.reason or "")
    assert (is_paused(kit, sleep), is_paused(kit, wake)) == (True, True)  # the spec's rule
    assert open_critical_insights(kit) == ["schedule_failed"]
    # Paused by the failure, then switched off by a person too: the pause is theirs now.
    kit.schedules.update(confirmed, actor="user:alice", enabled=False)

    # The hang ends and the server sleeps after all; the next metrics pass finds it asleep.
    set_faults(kit, deployment, sleep_hang_s=0)
    wait_for(lambda: kit.is_sleeping(deployment), "the late sleep to finish on the server")
    kit.fleet.metrics.rollup_all()
    assert kit.state(deployment) == "sleeping"
    assert (is_paused(kit, sleep), is_paused(kit, wake)) == (False, False)
    assert kit.schedules.get(sleep).paused_reason is None
    assert is_paused(kit, own)  # a person's pause stays
    assert is_paused(kit, confirmed)
    assert open_critical_insights(kit) == []  # the failure did not happen
    stored = kit.schedules.get(sleep)
    assert (stored.last_result or "").startswith("done: late")
    assert stored.last_run_day == "2026-06-03"  # it ran today: not again until tomorrow
    assert [outcome for _, outcome, _ in schedule_events(kit, sleep)] == ["failed", "done"]
    _, _, lifted = schedule_events(kit, sleep)[-1]
    assert f"schedules {sleep}, {wake} are switched on again" in (lifted or "")
    resumed = kit.fleet.audit.list(action=AuditAction.SCHEDULE_RESUME)
    assert sorted((e.subject_id, e.actor) for e in resumed) == [
        (str(sleep), "system"),
        (str(wake), "system"),
    ]
    # Switched on, the wake schedule runs at its time again.
    (woken,) = kit.schedules.run_pass(berlin("20:00:00"))
    assert (woken.schedule_id, woken.kind) == (wake, ResultKind.DONE)
    assert kit.state(deployment) == "running"


def test_it_keeps_the_pause_of_a_sleep_the_server_refused(kit: Kit) -> None:
    deployment = kit.deployment("refused", "--fail-sleep")
    sleep = schedule(kit, deployment, ScheduleAction.SLEEP, "12:05")
    kit.clock.set(berlin("12:30:00"))  # quiet
    (run,) = kit.schedules.run_pass(berlin("12:05:00"))
    assert run.kind is ResultKind.FAILED
    # Someone puts the server to sleep outside dgxmm; the metrics pass finds it asleep. The
    # server answered 500: that failure did happen, so the pause stays.
    set_faults(kit, deployment, sleep_error=False)
    response = httpx.post(f"{kit.url(deployment)}/sleep", params={"level": "1"}, timeout=30)
    assert response.status_code == 200, response.text
    kit.fleet.metrics.rollup_all()
    assert kit.state(deployment) == "sleeping"
    assert is_paused(kit, sleep)
    assert open_critical_insights(kit) == ["schedule_failed"]
