"""A person's Stop is a person's: pressed on a deployment a schedule had stopped already, it
takes the stop over, so no request through the proxy starts the deployment again (it used to
be recorded ``skipped``, leaving the schedule's stop the latest, and a request started it)."""

from __future__ import annotations

from proxy.proxykit import ProxyKit, chat_body
from proxy.proxykit import proxied as proxied  # noqa: PLC0414  (the fixture, by its own name)

from dgxmm.decider.days import ALL_DAYS
from dgxmm.decider.schedules import ResultKind, ScheduleAction
from dgxmm.fleet import EventOutcome

CHAT = "/v1/chat/completions"
MINUTE = 60_000_000


def test_a_persons_stop_of_a_deployment_a_schedule_stopped_keeps_requests_out(
    proxied: ProxyKit,
) -> None:
    deployment = proxied.deployment("nightly")
    schedule = proxied.schedules.create(
        deployment, action=ScheduleAction.STOP, days=ALL_DAYS, time="12:05", actor="user:a"
    )
    proxied.clock.set(proxied.clock.now_us() + 20 * MINUTE)  # quiet: no request ever
    (run,) = proxied.schedules.run_pass(proxied.clock.now_us() - 14 * MINUTE)
    assert run.kind is ResultKind.DONE
    assert proxied.fleet.events.stopped_by(deployment) == f"schedule:{schedule.id}"

    pressed = proxied.fleet.deployer.stop(deployment, actor="user:bob")
    assert pressed.outcome is EventOutcome.DONE  # the stop is bob's now
    assert proxied.fleet.events.stopped_by(deployment) == "user:bob"

    answer = proxied.post(CHAT, chat_body(proxied.model(deployment)))
    assert answer.status_code == 503
    error = answer.json()["error"]
    assert error["code"] == "stopped_by_a_person"
    assert "stopped by user:bob" in error["message"]
    assert proxied.state(deployment) == "stopped"
    assert [e for e in proxied.events(deployment) if e[1] == "request"] == []


def test_a_request_starts_what_the_idle_policy_stopped_and_a_persons_stop_takes_it_over(
    proxied: ProxyKit,
) -> None:
    deployment = proxied.deployment("idler")
    proxied.fleet.deployer.stop(deployment, actor="idle")
    answer = proxied.post(CHAT, chat_body(proxied.model(deployment)))
    assert answer.status_code == 200  # an idle stop is a policy's: a request undoes it
    assert proxied.state(deployment) == "running"
    assert ("start", "request", "done") in [e[:3] for e in proxied.events(deployment)]

    proxied.fleet.deployer.stop(deployment, actor="idle")
    pressed = proxied.fleet.deployer.stop(deployment, actor="user:bob")
    assert pressed.outcome is EventOutcome.DONE  # bob takes the idle policy's stop over
    assert proxied.fleet.events.stopped_by(deployment) == "user:bob"
    refused = proxied.post(CHAT, chat_body(proxied.model(deployment)))
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "stopped_by_a_person"
