"""The schedule runner against real stand-in servers, on a manual clock: each branch of the
flowchart, the windows, once per local day (across a restart), deferrals, the fit check, the
stop-actor rule, the failure pause, and the removal cascade."""

from __future__ import annotations

import os
import signal

from decider.schedulekit import Kit
from decider.schedulekit import kit as kit  # noqa: PLC0414  (the fixture, registered by its own name)
from sqlalchemy import func, insert, select
from support import at, wait_for

from dgxmm.decider.days import ALL_DAYS, mask_of
from dgxmm.decider.schedules import ScheduleAction
from dgxmm.decider.schedules.service import PAUSED_ALL, ResultKind
from dgxmm.decider.tables import deployment_schedules, traffic_profiles
from dgxmm.fleet import InsightKind, ProcessBackend, Severity
from dgxmm.fleet.deployments.tables import audit_log, deployment_events, insights
from dgxmm.store import reading, writing

MINUTE = 60_000_000
WEDNESDAY = mask_of([2])


def events(kit: Kit, deployment_id: int) -> list[tuple[str, str | None, str]]:
    """(action, actor, outcome) of a deployment's events, oldest first."""
    with reading(kit.store.engine) as connection:
        rows = connection.execute(
            select(
                deployment_events.c.action, deployment_events.c.actor, deployment_events.c.outcome
            )
            .where(deployment_events.c.deployment_id == deployment_id)
            .order_by(deployment_events.c.id)
        )
        return [(row.action, row.actor, row.outcome) for row in rows]


def audits(kit: Kit, action: str) -> int:
    with reading(kit.store.engine) as connection:
        return int(
            connection.execute(
                select(func.count()).select_from(audit_log).where(audit_log.c.action == action)
            ).scalar_one()
        )


def test_it_puts_a_quiet_deployment_to_sleep_and_records_it(kit: Kit) -> None:
    deployment = kit.deployment("quiet")
    schedule = kit.schedules.create(
        deployment, action=ScheduleAction.SLEEP, days=ALL_DAYS, time="12:05", actor="user:alice"
    )
    assert kit.schedules.run_pass(at("2026-06-03T12:04:59+02:00")) == []  # not due yet
    (run,) = kit.schedules.run_pass(at("2026-06-03T12:05:30+02:00"))
    assert (run.kind, run.result, run.day) == (ResultKind.DONE, "done", "2026-06-03")
    assert kit.state(deployment) == "sleeping"
    assert kit.is_sleeping(deployment)
    assert ("sleep", f"schedule:{schedule.id}", "done") in events(kit, deployment)
    assert audits(kit, "schedule.sleep") == 1
    stored = kit.schedules.get(schedule.id)
    assert (stored.last_result, stored.last_run_day) == ("done", "2026-06-03")
    assert stored.last_run_at == at("2026-06-03T12:05:30+02:00")


def test_it_does_nothing_while_every_schedule_is_paused(kit: Kit) -> None:
    deployment = kit.deployment("paused")
    kit.schedules.create(
        deployment, action=ScheduleAction.SLEEP, days=ALL_DAYS, time="12:05", actor="user:alice"
    )
    kit.schedules.set_paused_all(True, actor="user:alice")
    assert kit.store.get_setting(PAUSED_ALL) is True
    assert kit.schedules.run_pass(at("2026-06-03T12:05:30+02:00")) == []
    assert kit.state(deployment) == "running"
    kit.schedules.set_paused_all(False, actor="user:alice")
    assert [run.kind for run in kit.schedules.run_pass(at("2026-06-03T12:06:00+02:00"))] == [
        ResultKind.DONE
    ]


def test_it_runs_fifteen_minutes_late_but_not_sixteen(kit: Kit) -> None:
    deployment = kit.deployment("late", start=False)
    kit.schedules.create(
        deployment, action=ScheduleAction.START, days=ALL_DAYS, time="12:00", actor="user:a"
    )
    assert kit.schedules.run_pass(at("2026-06-03T12:16:00+02:00")) == []
    assert kit.state(deployment) == "stopped"
    (run,) = kit.schedules.run_pass(at("2026-06-04T12:15:00+02:00"))
    assert run.kind is ResultKind.DONE
    assert kit.state(deployment) == "running"


def test_it_runs_a_slot_once_per_local_day_also_across_a_restart(kit: Kit) -> None:
    deployment = kit.deployment("once", start=False)
    schedule = kit.schedules.create(
        deployment, action=ScheduleAction.START, days=ALL_DAYS, time="12:00", actor="user:a"
    )
    assert len(kit.schedules.run_pass(at("2026-06-03T12:00:10+02:00"))) == 1
    kit.fleet.deployer.stop(deployment, actor="user:bob")
    assert kit.schedules.run_pass(at("2026-06-03T12:01:10+02:00")) == []  # same day
    _, again = kit.restart()
    assert again.run_pass(at("2026-06-03T12:02:10+02:00")) == []  # same day, after a restart
    assert kit.state(deployment) == "stopped"
    assert again.get(schedule.id).last_run_day == "2026-06-03"


def test_it_follows_the_dst_rule_on_new_yorks_spring_day(kit: Kit) -> None:
    deployment = kit.deployment("ny", start=False)
    kit.schedules.create(
        deployment, action=ScheduleAction.START, days=ALL_DAYS, time="02:30",
        time_zone="America/New_York", actor="user:a",
    )  # fmt: skip
    # 02:30 does not exist on 2026-03-08 in New York: the slot is at 03:00 EDT.
    assert kit.schedules.run_pass(at("2026-03-08T01:59:00-05:00")) == []
    (run,) = kit.schedules.run_pass(at("2026-03-08T03:10:00-04:00"))
    assert (run.kind, run.day) == (ResultKind.DONE, "2026-03-08")


def test_it_defers_a_busy_sleep_and_does_it_once_quiet_within_the_hour(kit: Kit) -> None:
    deployment = kit.deployment("busy", "--latency", "3000")
    schedule = kit.schedules.create(
        deployment, action=ScheduleAction.SLEEP, days=ALL_DAYS, time="12:05", actor="user:a"
    )
    kit.clock.set(at("2026-06-03T12:05:00+02:00"))
    request = kit.chat_in_background(deployment)
    wait_for(
        lambda: kit.fleet.metrics.sample_now(deployment).requests_running == 1,
        "the request to be in flight",
    )
    (first,) = kit.schedules.run_pass(at("2026-06-03T12:05:10+02:00"))
    assert first.kind is ResultKind.DEFERRED
    assert "running" in (first.reason or "")
    request.join(timeout=60)
    # The request finished just now: still not quiet (10 minutes without activity needed).
    kit.clock.set(at("2026-06-03T12:06:00+02:00"))
    (second,) = kit.schedules.run_pass(at("2026-06-03T12:06:00+02:00"))
    assert second.kind is ResultKind.DEFERRED
    assert "quiet needs 10 minutes" in (second.reason or "")
    assert kit.state(deployment) == "running"
    kit.clock.set(at("2026-06-03T12:17:00+02:00"))
    (third,) = kit.schedules.run_pass(at("2026-06-03T12:17:00+02:00"))
    assert third.kind is ResultKind.DONE
    assert kit.state(deployment) == "sleeping"
    stored = kit.schedules.get(schedule.id)
    assert (stored.last_result, stored.deferred_since) == ("done", None)
    assert [e for e in events(kit, deployment) if e[0] == "sleep"] == [
        ("sleep", f"schedule:{schedule.id}", "deferred"),
        ("sleep", f"schedule:{schedule.id}", "deferred"),
        ("sleep", f"schedule:{schedule.id}", "done"),
    ]


def test_it_skips_a_sleep_still_busy_after_sixty_minutes(kit: Kit) -> None:
    deployment = kit.deployment("always_busy")
    schedule = kit.schedules.create(
        deployment, action=ScheduleAction.SLEEP, days=ALL_DAYS, time="12:05", actor="user:a"
    )
    kinds = []
    for minute in ("12:05", "12:25", "12:45", "13:05", "13:06"):
        now = at(f"2026-06-03T{minute}:30+02:00")
        kit.clock.set(now)
        kit.fleet.metrics.sample_now(deployment)  # the minute's scrape, as metrics_rollup takes
        kit.chat(deployment)  # then traffic, right before the pass
        kinds += [run.kind for run in kit.schedules.run_pass(now)]
    assert kinds == [ResultKind.DEFERRED] * 3 + [ResultKind.SKIPPED]
    stored = kit.schedules.get(schedule.id)
    assert stored.last_result == "skipped: busy: not quiet within 60 minutes of its first deferral"
    assert stored.last_run_day == "2026-06-03"
    assert kit.state(deployment) == "running"


def test_it_skips_a_wake_that_does_not_fit_with_one_insight(kit: Kit) -> None:
    big = kit.deployment("big", awake=60.0, asleep=10.0, priority=10)
    kit.fleet.deployer.sleep(big, actor="user:a")
    kit.deployment("blocker", awake=60.0, priority=10)  # 60 + 10 of 80 GiB: big cannot wake
    schedule = kit.schedules.create(
        big, action=ScheduleAction.WAKE, days=ALL_DAYS, time="12:05", actor="user:a"
    )
    (run,) = kit.schedules.run_pass(at("2026-06-03T12:05:00+02:00"))
    assert run.kind is ResultKind.SKIPPED
    assert run.result.startswith("skipped: it does not fit")
    assert kit.state(big) == "sleeping"  # and nothing was evicted:
    assert kit.state(kit.fleet.deployments.by_name("blocker").id) == "running"
    (again,) = kit.schedules.run_pass(at("2026-06-04T12:05:00+02:00"))
    assert again.kind is ResultKind.SKIPPED
    with reading(kit.store.engine) as connection:
        raised = connection.execute(
            select(insights.c.message).where(insights.c.kind == "schedule_does_not_fit")
        ).all()
    assert len(raised) == 1  # one insight, not one per refusal
    assert f"Schedule {schedule.id} could not wake big" in raised[0].message


def test_it_wakes_and_starts_when_it_fits(kit: Kit) -> None:
    sleeper = kit.deployment("sleeper")
    kit.fleet.deployer.sleep(sleeper, actor="user:a")
    stopped = kit.deployment("stopped_one", start=False)
    kit.schedules.create(
        sleeper, action=ScheduleAction.WAKE, days=ALL_DAYS, time="12:05", actor="user:a"
    )
    kit.schedules.create(
        stopped, action=ScheduleAction.START, days=ALL_DAYS, time="12:05", actor="user:a"
    )
    runs = kit.schedules.run_pass(at("2026-06-03T12:05:00+02:00"))
    assert [run.kind for run in runs] == [ResultKind.DONE, ResultKind.DONE]
    assert (kit.state(sleeper), kit.state(stopped)) == ("running", "running")
    assert not kit.is_sleeping(sleeper)


def test_it_wakes_a_stopped_deployment_only_when_a_schedule_stopped_it(kit: Kit) -> None:
    by_schedule = kit.deployment("by_schedule")
    stopper = kit.schedules.create(
        by_schedule, action=ScheduleAction.STOP, days=WEDNESDAY, time="12:00", actor="user:a"
    )
    kit.clock.set(at("2026-06-03T12:20:00+02:00"))  # quiet: no request ever
    (stop,) = kit.schedules.run_pass(at("2026-06-03T12:00:30+02:00"))
    assert stop.kind is ResultKind.DONE
    assert kit.state(by_schedule) == "stopped"
    by_user = kit.deployment("by_user")
    kit.fleet.deployer.stop(by_user, actor="user:bob")
    no_actor = kit.deployment("no_actor")
    kit.fleet.deployer.stop(no_actor, actor="user:carol")
    # A stop that names no actor, as rows from before events had actors do; written last, at
    # the same instant as carol's: stopped_by takes the highest id, not the latest at_us.
    with writing(kit.store.engine) as connection:
        connection.execute(
            insert(deployment_events).values(
                deployment_id=no_actor, at_us=kit.clock.now_us(), action="stop", actor=None,
                outcome="done", detail="recorded before events had actors",
            )
        )  # fmt: skip
    for deployment in (by_schedule, by_user, no_actor):
        kit.schedules.create(
            deployment, action=ScheduleAction.WAKE, days=WEDNESDAY, time="12:30", actor="user:a"
        )
    runs = {
        run.deployment_id: run for run in kit.schedules.run_pass(at("2026-06-03T12:30:00+02:00"))
    }
    assert runs[by_schedule].kind is ResultKind.DONE
    assert kit.state(by_schedule) == "running"
    assert runs[by_user].result == (
        "skipped: it was stopped by user:bob, not by a schedule or its idle policy"
    )
    assert runs[no_actor].result == (
        "skipped: it was stopped by someone unknown (the stop names no actor), not by a schedule "
        "or its idle policy"
    )
    assert (kit.state(by_user), kit.state(no_actor)) == ("stopped", "stopped")
    assert stopper.action.value == "stop"


def test_it_pauses_sleep_and_wake_schedules_after_a_failed_sleep(kit: Kit) -> None:
    deployment = kit.deployment("doomed")
    sleep = kit.schedules.create(
        deployment, action=ScheduleAction.SLEEP, days=ALL_DAYS, time="12:05", actor="user:a"
    )
    wake = kit.schedules.create(
        deployment, action=ScheduleAction.WAKE, days=ALL_DAYS, time="20:00", actor="user:a"
    )
    stop = kit.schedules.create(
        deployment, action=ScheduleAction.STOP, days=ALL_DAYS, time="23:00", actor="user:a"
    )
    backend = kit.fleet.backends.of(kit.fleet.deployments.get(deployment))
    assert isinstance(backend, ProcessBackend)
    pid = backend.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)  # the model server dies just before the slot
    kit.clock.set(at("2026-06-03T12:30:00+02:00"))
    (run,) = kit.schedules.run_pass(at("2026-06-03T12:05:00+02:00"))
    assert run.kind is ResultKind.FAILED
    paused = {s.id: s for s in kit.schedules.list(deployment)}
    assert paused[sleep.id].enabled is False
    assert paused[wake.id].enabled is False
    reason = paused[sleep.id].paused_reason
    assert reason is not None
    assert reason.startswith(f"paused: schedule {sleep.id} failed to sleep")
    assert paused[stop.id].enabled is True  # only sleep and wake schedules pause
    with reading(kit.store.engine) as connection:
        kinds = connection.execute(select(insights.c.kind, insights.c.severity)).all()
    assert ("schedule_failed", "critical") in [(k.kind, k.severity) for k in kinds]
    switched = kit.schedules.update(sleep.id, actor="user:alice", enabled=True)
    assert (switched.enabled, switched.paused_reason) == (True, None)


def test_it_audits_and_deletes_schedules_profile_and_insights_with_the_deployment(kit: Kit) -> None:
    deployment = kit.deployment("gone", start=False)
    first = kit.schedules.create(
        deployment, action=ScheduleAction.START, days=ALL_DAYS, time="08:00", actor="user:a"
    )
    second = kit.schedules.create(
        deployment, action=ScheduleAction.STOP, days=ALL_DAYS, time="20:00", actor="user:a"
    )
    kit.fleet.insights.raise_insight(
        InsightKind.METRICS_UNREADABLE,
        deployment_id=deployment,
        severity=Severity.INFO,
        message="about to go",
    )
    with writing(kit.store.engine) as connection:
        connection.execute(
            insert(traffic_profiles).values(
                deployment_id=deployment, hour_of_week=0, rpm_p50=0.0, rpm_p95=0.0,
                active_share=0.0, observed_minutes=60, observed_weeks=1, idle_weeks=1, built_at=0,
            )
        )  # fmt: skip
    kit.fleet.remove(deployment, actor="user:alice")
    with reading(kit.store.engine) as connection:
        left = {
            table.name: connection.execute(select(func.count()).select_from(table)).scalar_one()
            for table in (deployment_schedules, traffic_profiles, insights)
        }
        deleted = connection.execute(
            select(audit_log.c.subject_id, audit_log.c.actor).where(
                audit_log.c.action == "schedule.delete"
            )
        ).all()
    assert left == {"deployment_schedules": 0, "traffic_profiles": 0, "insights": 0}
    assert sorted((row.subject_id, row.actor) for row in deleted) == [
        (str(first.id), "user:alice"),
        (str(second.id), "user:alice"),
    ]


def test_it_acts_once_where_a_skipped_days_slot_meets_the_next_days(kit: Kit) -> None:
    # Pacific/Apia skipped 2011-12-30: the 30th's 00:00 and the 31st's are one instant.
    deployment = kit.deployment("apia", start=False)
    schedule = kit.schedules.create(
        deployment, action=ScheduleAction.STOP, days=ALL_DAYS, time="00:00",
        time_zone="Pacific/Apia", actor="user:a",
    )  # fmt: skip
    first = at("2011-12-31T00:00:00+14:00")
    runs = []
    for minute in range(-5, 16):  # every pass from before the gap's end to 15 minutes after
        kit.clock.set(first + minute * MINUTE)
        runs.extend(kit.schedules.run_pass(first + minute * MINUTE))
    assert [(run.day, run.days) for run in runs] == [("2011-12-31", ("2011-12-30", "2011-12-31"))]
    assert audits(kit, "schedule.stop") == 1
    with reading(kit.store.engine) as connection:
        detail = connection.execute(
            select(audit_log.c.detail).where(audit_log.c.action == "schedule.stop")
        ).scalar_one()
    assert '"days": ["2011-12-30", "2011-12-31"]' in detail
    assert kit.schedules.get(schedule.id).last_run_day == "2011-12-31"


def test_a_persons_stop_over_a_schedules_is_not_woken_by_a_wake_schedule(kit: Kit) -> None:
    deployment = kit.deployment("taken_over")
    stopper = kit.schedules.create(
        deployment, action=ScheduleAction.STOP, days=WEDNESDAY, time="12:00", actor="user:a"
    )
    kit.clock.set(at("2026-06-03T12:20:00+02:00"))  # quiet: no request ever
    (stop,) = kit.schedules.run_pass(at("2026-06-03T12:00:30+02:00"))
    assert stop.kind is ResultKind.DONE
    kit.fleet.deployer.stop(deployment, actor="user:bob")  # Stop, pressed on a stopped one
    assert events(kit, deployment)[-2:] == [
        ("stop", f"schedule:{stopper.id}", "done"),
        ("stop", "user:bob", "done"),
    ]
    kit.schedules.create(
        deployment, action=ScheduleAction.WAKE, days=WEDNESDAY, time="12:30", actor="user:a"
    )
    (wake,) = kit.schedules.run_pass(at("2026-06-03T12:30:00+02:00"))
    assert wake.result == (
        "skipped: it was stopped by user:bob, not by a schedule or its idle policy"
    )
    assert kit.state(deployment) == "stopped"
