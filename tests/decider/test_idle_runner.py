"""The idle policies through real stand-in servers and the proxy, on a manual clock (issue 25):
each ladder step, the quiet check's deferral with a request that arrives while the door is
shut, the schedules' bounds, a failed step's pause, the room an idle stop frees, the wake
lead of a scheduled wake, and the histogram policy's sleep and pre-wake."""

from __future__ import annotations

import threading

import httpx
from decider.schedulekit import Kit
from proxy.proxykit import ProxyKit, chat_body
from proxy.proxykit import proxied as proxied  # noqa: PLC0414  (the fixture, by its own name)
from sqlalchemy import event
from support import at, wait_for

from dgxmm.decider.days import ALL_DAYS
from dgxmm.decider.idle import IdleOutcome
from dgxmm.decider.schedules import ScheduleAction
from dgxmm.decider.schedules.runner import lead_now
from dgxmm.decider.schedules.service import ResultKind
from dgxmm.errors import DoesNotFit
from dgxmm.fleet import DeploymentState, InsightKind
from dgxmm.server.telemetry import ServerMetrics

S = 1_000_000
MINUTE = 60 * S
T0 = at("2026-06-03T12:00:00+02:00")  # the kit's clock when its deployments start


def pulse(kit: ProxyKit, now: int) -> list[IdleOutcome]:
    """Set the clock, run one idle pulse and wait for the steps it handed on."""
    kit.clock.set(now)
    return [future.result(timeout=120) for future in kit.schedules.idle_pulse(now)]


def idle_events(kit: ProxyKit, deployment_id: int) -> list[tuple[str, str]]:
    """(action, outcome) of the deployment's events with actor idle, oldest first."""
    return [(a, o) for a, actor, o, _ in kit.events(deployment_id) if actor == "idle"]


def sleep_state(kit: ProxyKit, deployment_id: int) -> str:
    """What the stand-in's own gauge says: awake, weights_offloaded (1) or discard_all (2)."""
    text = httpx.get(f"{kit.url(deployment_id)}/metrics", timeout=30).text
    for line in text.splitlines():
        if line.startswith("vllm:engine_sleep_state{") and line.endswith(" 1.0"):
            return line.split('sleep_state="')[1].split('"')[0]
    raise AssertionError(f"no sleep state in the stand-in's metrics:\n{text}")


def test_the_ladder_sleeps_deepens_and_stops_each_after_its_idle_time(proxied: ProxyKit) -> None:
    kit = proxied
    metrics = ServerMetrics()
    kit.fleet.telemetry = metrics
    deployment = kit.deployment(
        "ladder", idle_sleep_after_s=300, idle_deepen_after_s=900, idle_stop_after_s=3600
    )
    # Probes, scrapes and the start's post-wake check are not requests: idle since T0.
    kit.clock.set(T0 + 200 * S)
    assert httpx.get(f"{kit.url(deployment)}/health", timeout=30).status_code == 200
    kit.fleet.metrics.sample_now(deployment)
    assert pulse(kit, T0 + 299 * S) == []
    assert kit.state(deployment) == "running"
    assert pulse(kit, T0 + 300 * S) == [IdleOutcome.DONE]
    found = kit.fleet.deployments.get(deployment)
    assert (found.state, found.asleep_level) == (DeploymentState.SLEEPING, 1)
    assert sleep_state(kit, deployment) == "weights_offloaded"
    assert pulse(kit, T0 + 899 * S) == []
    assert pulse(kit, T0 + 900 * S) == [IdleOutcome.DONE]
    assert kit.fleet.deployments.get(deployment).asleep_level == 2
    assert sleep_state(kit, deployment) == "discard_all"
    assert pulse(kit, T0 + 3600 * S) == [IdleOutcome.DONE]
    assert kit.state(deployment) == "stopped"
    assert idle_events(kit, deployment) == [("sleep", "done"), ("sleep", "done"), ("stop", "done")]
    assert kit.fleet.events.stopped_by(deployment) == "idle"
    shown = metrics.exposition(kit.fleet).decode()
    for what in ("idle_sleep", "idle_deepen", "idle_stop"):
        assert f'dgxmm_policy_actions_total{{what="{what}"}} 1.0' in shown
    # A request through the proxy starts what the idle policy stopped, as a schedule's stop.
    kit.chat(deployment)
    assert kit.state(deployment) == "running"
    # Idle counts again from that request: nothing at once, a sleep 300 s after it.
    assert pulse(kit, kit.clock.now_us() + 299 * S) == []
    assert pulse(kit, kit.clock.now_us() + 2 * S) == [IdleOutcome.DONE]
    assert kit.state(deployment) == "sleeping"


def test_a_request_that_arrives_while_the_door_is_shut_defers_the_step(proxied: ProxyKit) -> None:
    kit = proxied
    # Its /metrics answers 3 s late: the quiet check's fresh sample holds the door shut that
    # long, and a request sent meanwhile through the proxy knocks.
    deployment = kit.deployment("door", "--slow-metrics", "3", idle_sleep_after_s=60)
    kit.clock.set(T0 + 61 * S)
    (step,) = kit.schedules.idle_pulse(T0 + 61 * S)
    wait_for(lambda: kit.fleet.activity.is_closed(deployment), "the door to shut")
    thread, answers = kit.post_in_background(
        "/v1/chat/completions", chat_body(kit.model(deployment))
    )
    assert step.result(timeout=120) is IdleOutcome.DEFERRED
    thread.join(timeout=120)
    assert [answer.status_code for answer in answers] == [200]  # held, then served awake
    assert kit.state(deployment) == "running"
    assert sleep_state(kit, deployment) == "awake"
    (deferred,) = [e for e in kit.events(deployment) if e[1] == "idle"]
    assert deferred[:3] == ("sleep", "idle", "deferred")
    # The knocking request is held by the proxy while the door is shut: the check counts it.
    assert "1 request under way through the proxy" in (deferred[3] or "")
    # Tried again a minute later: the server's counters show the request it served, which the
    # fresh sample reads as activity now: not idle, and nothing is recorded.
    later = kit.clock.now_us() + MINUTE
    assert pulse(kit, later) == [IdleOutcome.NOT_IDLE]
    assert [e for e in kit.events(deployment) if e[1] == "idle"] == [deferred]
    assert pulse(kit, later + 61 * S) == [IdleOutcome.DONE]
    assert kit.state(deployment) == "sleeping"


def test_a_busy_server_defers_the_step(proxied: ProxyKit) -> None:
    kit = proxied
    deployment = kit.deployment("busy", "--latency", "4000", idle_sleep_after_s=60)
    # Straight to the server (the schedule kit's own chat), not through the proxy.
    request = threading.Thread(target=Kit.chat, args=(kit, deployment), daemon=True)
    request.start()
    # Asked of the stand-in itself: a sample through dgxmm would record it as activity.
    wait_for(
        lambda: (
            'vllm:num_requests_running{model_name="busy-model",engine="0"} 1.0'
            in httpx.get(f"{kit.url(deployment)}/metrics", timeout=30).text
        ),
        "the request to be in flight",
    )
    assert pulse(kit, T0 + 61 * S) == [IdleOutcome.DEFERRED]
    request.join(timeout=60)
    assert kit.state(deployment) == "running"
    assert "1 request running" in (kit.events(deployment)[-1][3] or "")


def test_an_awake_window_keeps_the_ladder_at_level_1_and_never_stops(proxied: ProxyKit) -> None:
    kit = proxied
    deployment = kit.deployment(
        "bounded", idle_sleep_after_s=300, idle_deepen_after_s=900, idle_stop_after_s=3600
    )
    for action, time in ((ScheduleAction.WAKE, "08:00"), (ScheduleAction.SLEEP, "20:00")):
        kit.schedules.create(deployment, action=action, days=ALL_DAYS, time=time, actor="user:a")
    # Inside 08:00-20:00 Berlin, idle for hours: asleep at level 1, no deeper, never stopped.
    assert pulse(kit, at("2026-06-03T15:00:00+02:00")) == [IdleOutcome.DONE]
    assert (kit.state(deployment), kit.fleet.deployments.get(deployment).asleep_level) == (
        "sleeping",
        1,
    )
    assert pulse(kit, at("2026-06-03T19:59:00+02:00")) == []
    # Past the scheduled sleep the window is shut: the deepest step due is taken at once.
    assert pulse(kit, at("2026-06-03T20:00:01+02:00")) == [IdleOutcome.DONE]
    assert kit.state(deployment) == "stopped"


def test_a_failed_step_pauses_the_idle_policy_until_its_settings_change(
    proxied: ProxyKit,
) -> None:
    kit = proxied
    deployment = kit.deployment("fails", "--fail-sleep", idle_sleep_after_s=60)
    assert pulse(kit, T0 + 61 * S) == [IdleOutcome.FAILED]
    found = kit.fleet.deployments.get(deployment)
    assert found.state is DeploymentState.RUNNING
    assert found.idle_paused is not None
    assert "idle sleep failed" in found.idle_paused
    (insight,) = [i for i in kit.fleet.insights.list() if i.kind is InsightKind.IDLE_PAUSED]
    assert insight.deployment_id == deployment
    assert pulse(kit, T0 + 120 * S) == []  # paused: not retried every second
    kit.fleet.deployments.update(deployment, "user:alice", idle_sleep_after_s=90)
    assert kit.fleet.deployments.get(deployment).idle_paused is None
    assert pulse(kit, T0 + 180 * S) == [IdleOutcome.FAILED]  # it acts again (and fails again)


def test_an_idle_stop_that_makes_room_for_a_refused_start_says_so(proxied: ProxyKit) -> None:
    kit = proxied
    idle = kit.deployment("idle", awake=60.0, idle_stop_after_s=120)
    waiting = kit.deployment("waiting", awake=40.0, start=False)
    try:
        kit.fleet.deployer.start(waiting, actor="user:alice", plans=False)
        raise AssertionError("60 + 40 GiB of 80 should not fit")
    except DoesNotFit:
        pass
    assert pulse(kit, T0 + 121 * S) == [IdleOutcome.DONE]
    assert kit.state(idle) == "stopped"
    (insight,) = [
        i for i in kit.fleet.insights.list() if i.kind is InsightKind.IDLE_STOP_FREED_ROOM
    ]
    assert insight.deployment_id == waiting
    assert "idle stop of idle freed room for waiting" in insight.message


def test_a_measured_wake_lead_begins_a_scheduled_wake_early(proxied: ProxyKit) -> None:
    kit = proxied
    metrics = ServerMetrics()
    kit.fleet.telemetry = metrics
    deployment = kit.deployment("early", wake_lead="measured")
    for _ in range(2):  # two measured level-1 wakes
        kit.fleet.deployer.sleep(deployment, actor="user:alice")
        kit.fleet.deployer.wake(deployment, actor="user:alice")
    kit.fleet.deployer.sleep(deployment, actor="user:alice")
    schedule = kit.schedules.create(
        deployment, action=ScheduleAction.WAKE, days=ALL_DAYS, time="12:10", actor="user:a"
    )
    lead = lead_now(kit.fleet, kit.fleet.deployments.get(deployment))
    assert lead.says.startswith("begins ")
    assert lead.says.endswith("early: p95 of the last 2 level-1 wakes")
    assert 0 < lead.us < MINUTE  # a stand-in wakes in well under a minute
    assert kit.schedules.run_pass(at("2026-06-03T12:08:00+02:00")) == []
    (run,) = kit.schedules.run_pass(at("2026-06-03T12:09:00+02:00"))  # a minute early
    assert (run.kind, run.day, run.at_us) == (
        ResultKind.DONE,
        "2026-06-03",
        at("2026-06-03T12:10:00+02:00"),
    )
    assert kit.state(deployment) == "running"
    assert kit.schedules.run_pass(at("2026-06-03T12:10:00+02:00")) == []  # once that day
    assert kit.schedules.get(schedule.id).last_run_day == "2026-06-03"
    shown = metrics.exposition(kit.fleet).decode()
    assert 'dgxmm_policy_actions_total{what="early_wake"} 1.0' in shown


def test_the_histogram_policy_sleeps_after_a_request_and_wakes_ahead_of_the_next(
    proxied: ProxyKit,
) -> None:
    kit = proxied
    deployment = kit.deployment("steady", idle_policy="histogram")
    body = chat_body(kit.model(deployment))
    # 25 requests 30 minutes apart: every gap in one bin, a distribution far from flat.
    last = T0
    for n in range(25):
        last = T0 + n * 30 * MINUTE
        kit.clock.set(last)
        assert kit.post("/v1/chat/completions", body).status_code == 200
    assert pulse(kit, last + 1 * S) == []  # takes the gaps in; a request a second ago
    windows = kit.schedules.idle.windows_of(deployment, last)
    assert windows is not None
    assert windows.pre_wake_us == round(30 * MINUTE * 0.9)  # the 5th percentile's bin, -10 %
    # The next request is unlikely before 27 minutes: it sleeps a minute after this one...
    assert pulse(kit, last + 61 * S) == [IdleOutcome.DONE]
    assert kit.state(deployment) == "sleeping"
    # ... and is woken ahead of the next, at 27 minutes less its measured wake time.
    assert pulse(kit, last + 26 * MINUTE) == []
    assert pulse(kit, last + 27 * MINUTE) == [IdleOutcome.DONE]
    assert kit.state(deployment) == "running"
    assert idle_events(kit, deployment)[-2:] == [("sleep", "done"), ("wake", "done")]
    # Pre-woken and no request: awake until the keep-alive window (31 min + 10 %) ends.
    assert pulse(kit, last + 34 * MINUTE) == []
    assert pulse(kit, last + 35 * MINUTE) == [IdleOutcome.DONE]
    assert kit.state(deployment) == "sleeping"


def test_forecast_only_records_each_step_and_takes_none(proxied: ProxyKit) -> None:
    kit = proxied
    deployment = kit.deployment(
        "forecast", idle_sleep_after_s=300, idle_deepen_after_s=900, idle_stop_after_s=3600
    )
    kit.schedules.set_forecast_only(True, actor="user:alice")
    assert pulse(kit, T0 + 300 * S) == [IdleOutcome.FORECAST]
    assert pulse(kit, T0 + 301 * S) == []  # recorded once for this idle time
    assert pulse(kit, T0 + 900 * S) == [IdleOutcome.FORECAST]
    assert pulse(kit, T0 + 3600 * S) == [IdleOutcome.FORECAST]
    assert pulse(kit, T0 + 7200 * S) == []
    assert kit.state(deployment) == "running"
    assert sleep_state(kit, deployment) == "awake"
    assert idle_events(kit, deployment) == [
        ("sleep", "forecast"), ("sleep", "forecast"), ("stop", "forecast"),
    ]  # fmt: skip
    assert "would take the idle deepen now" in (kit.events(deployment)[-2][3] or "")
    # The schedules in force still act, at their minute.
    kit.schedules.create(
        deployment, action=ScheduleAction.SLEEP, days=ALL_DAYS, time="15:00", actor="user:a"
    )
    (run,) = kit.schedules.run_pass(at("2026-06-03T15:00:00+02:00"))
    assert run.kind is ResultKind.DONE
    assert kit.state(deployment) == "sleeping"
    # Switched off, the ladder acts again: the deepest step due is taken.
    kit.schedules.set_forecast_only(False, actor="user:alice")
    assert pulse(kit, at("2026-06-03T15:01:00+02:00")) == [IdleOutcome.DONE]
    assert kit.state(deployment) == "stopped"


def test_a_deepening_that_does_not_fit_is_skipped_and_evicts_nothing(proxied: ProxyKit) -> None:
    kit = proxied
    deep = kit.deployment("deep", awake=40.0, idle_sleep_after_s=60, idle_deepen_after_s=600)
    assert pulse(kit, T0 + 61 * S) == [IdleOutcome.DONE]  # asleep at level 1, 4 GiB
    blocker = kit.deployment("blocker", awake=60.0)  # 64 of 80 GiB: no room to wake deep
    assert pulse(kit, T0 + 601 * S) == [IdleOutcome.SKIPPED]
    found = kit.fleet.deployments.get(deep)
    assert (found.state, found.asleep_level) == (DeploymentState.SLEEPING, 1)
    assert kit.state(blocker) == "running"  # never evicted
    assert kit.events(deep)[-1][:3] == ("sleep", "idle", "skipped")
    assert pulse(kit, T0 + 602 * S) == []  # refused: tried again only later


def test_a_pulse_reads_the_deployments_again_only_when_they_changed(proxied: ProxyKit) -> None:
    """At 1,000 deployments a pulse that read them all each second held the server ~40 ms a
    second (issue 28): with nothing changed, a pulse asks the change versions and nothing else,
    and a change is seen at the next pulse."""
    kit = proxied
    plain = kit.deployment("plain")  # no idle policy: never looked at
    sleepy = kit.deployment("sleepy", idle_sleep_after_s=300)
    statements: list[str] = []

    def count(_conn: object, _cursor: object, statement: str, *_rest: object) -> None:
        if statement.split(maxsplit=1)[0].upper() not in ("BEGIN", "COMMIT", "ROLLBACK"):
            statements.append(statement)

    def runner_pulse(now: int) -> list[IdleOutcome]:
        kit.clock.set(now)
        return [f.result(timeout=120) for f in kit.schedules.idle.pulse(now)]

    event.listen(kit.store.engine, "before_cursor_execute", count)
    try:
        assert runner_pulse(T0 + 10 * S) == []
        statements.clear()
        assert runner_pulse(T0 + 11 * S) == []
        (asked,) = statements
        assert "change_versions" in asked
        # A person gives the plain one a ladder: the next pulse reads it and steps both.
        kit.fleet.deployments.update(plain, "user:alice", idle_sleep_after_s=300)
        statements.clear()
        assert runner_pulse(T0 + 300 * S) == [IdleOutcome.DONE, IdleOutcome.DONE]
        assert any("FROM deployments" in statement for statement in statements)
    finally:
        event.remove(kit.store.engine, "before_cursor_execute", count)
    assert kit.state(plain) == kit.state(sleepy) == "sleeping"
