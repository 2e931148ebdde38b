"""Channels and their deliveries, against a real receiver on 127.0.0.1.

The receiver checks every signature; it answers 500 to its first tries and stalls once.
The clock is moved by hand: each retry waits exactly its backoff.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from alerts.alertkit import LOOPBACK_ALLOWED, POLICY, Receiver
from sqlalchemy import text
from support import free_port

from dgxmm.alerts import Alerts, AttemptOutcome, DeliveryState
from dgxmm.clock import ManualClock
from dgxmm.errors import DefinitionError
from dgxmm.fleet import Fleet, InsightKind
from dgxmm.server import Host
from dgxmm.store import Store


def _channel(alerts: Alerts, receiver: Receiver, body_format: str = "generic") -> int:
    channel, secret = alerts.channels.create(
        {"name": "ops", "url": receiver.url, "format": body_format}, actor="user:alice"
    )
    receiver.secret = secret
    return channel.id


def test_it_sends_a_signed_test_message(alerts: Alerts) -> None:
    with Receiver() as receiver:
        delivery = alerts.test(_channel(alerts, receiver), actor="user:alice")
        assert alerts.sender.send_due() == 1
    [got] = receiver.requests()
    assert got.signed
    assert got.path == "/hook/s3cr3t-path"
    assert (got.body["kind"], got.body["title"]) == ("test", "a test of channel ops")
    entry = alerts.deliveries.get(delivery)
    assert entry.delivery.state is DeliveryState.SENT
    assert [(a.outcome, a.status_code) for a in entry.attempts] == [(AttemptOutcome.SENT, 200)]


@pytest.mark.parametrize(
    ("body_format", "key"),
    [("slack", "text"), ("teams", "attachments")],
    ids=["slack-text", "teams-card"],
)
def test_it_sends_the_body_of_the_channels_format(
    alerts: Alerts, body_format: str, key: str
) -> None:
    with Receiver() as receiver:
        alerts.test(_channel(alerts, receiver, body_format), actor="user:alice")
        alerts.sender.send_due()
    [got] = receiver.requests()
    assert got.signed
    assert key in got.body
    assert "a test of channel ops" in str(got.body)


def test_it_retries_with_backoff_through_failures_and_a_stall(
    alerts: Alerts, clock: ManualClock
) -> None:
    with Receiver(fail_first=2, stall_once_s=1.5) as receiver:
        delivery = alerts.test(_channel(alerts, receiver), actor="user:alice")
        alerts.sender.send_due()  # stalls: no answer within 0.5 s
        assert alerts.sender.send_due() == 0  # not due again before its backoff
        clock.advance(timedelta(seconds=10))
        alerts.sender.send_due()  # 500
        clock.advance(timedelta(seconds=19))
        assert alerts.sender.send_due() == 0  # the second wait is 20 s
        clock.advance(timedelta(seconds=1))
        alerts.sender.send_due()  # 500
        clock.advance(timedelta(seconds=40))
        alerts.sender.send_due()  # 200
    got = receiver.requests()
    assert [r.status for r in got] == [0, 500, 500, 200]
    assert all(r.signed for r in got)
    entry = alerts.deliveries.get(delivery)
    assert entry.delivery.state is DeliveryState.SENT
    assert [(a.outcome.value, a.status_code) for a in entry.attempts] == [
        ("retried", None),
        ("retried", 500),
        ("retried", 500),
        ("sent", 200),
    ]
    assert "no answer within 0.5 s" in (entry.attempts[0].error or "")
    # The stalled attempt waited for the timeout, not for the receiver.
    assert entry.attempts[0].duration_ms < 1400


def test_it_gives_up_after_an_hour_and_raises_an_insight(
    alerts: Alerts, fleet: Fleet, clock: ManualClock
) -> None:
    with Receiver(fail_first=1000) as receiver:
        channel = _channel(alerts, receiver)
        delivery = alerts.test(channel, actor="user:alice")
        for _ in range(30):
            alerts.sender.send_due()
            clock.advance(timedelta(minutes=10))
    entry = alerts.deliveries.get(delivery)
    assert entry.delivery.state is DeliveryState.FAILED
    assert entry.attempts[-1].outcome is AttemptOutcome.FAILED
    # Tried every 10 minutes here (each backoff is at most that), for an hour, then given up.
    assert len(entry.attempts) == 7
    assert entry.attempts[-1].at - entry.attempts[0].at == 3600 * 10**6
    [insight] = [i for i in fleet.insights.list() if i.kind is InsightKind.ALERT_CHANNEL_FAILING]
    assert "ops" in insight.message


def test_it_does_not_follow_a_redirect(alerts: Alerts) -> None:
    with Receiver(redirect=True) as receiver:
        delivery = alerts.test(_channel(alerts, receiver), actor="user:alice")
        alerts.sender.send_due()
    assert len(receiver.requests()) == 1  # nothing went to the Location
    entry = alerts.deliveries.get(delivery)
    assert (entry.attempts[0].outcome, entry.attempts[0].status_code) == (
        AttemptOutcome.RETRIED,
        302,
    )
    assert entry.attempts[0].error == "a redirect, not followed"


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "ftp://example.com/x", "gopher://x", "http://", "http://u:p@host/"],
    ids=["file", "ftp", "gopher", "no-host", "credentials"],
)
def test_it_refuses_a_url_that_is_not_plain_http(alerts: Alerts, url: str) -> None:
    with pytest.raises(DefinitionError) as refused:
        alerts.channels.create({"name": "x", "url": url}, actor="user:alice")
    assert refused.value.field == "url"
    assert alerts.channels.list() == []


def test_it_names_every_wrong_field_at_once(alerts: Alerts) -> None:
    with pytest.raises(DefinitionError) as refused:
        alerts.channels.create(
            {"name": "no spaces", "url": "ftp://x", "format": "fax", "colour": 1},
            actor="user:alice",
        )
    assert [field for field, _ in refused.value.errors] == ["colour", "name", "url", "format"]


def test_the_url_and_secret_are_sealed_in_the_database(alerts: Alerts, store: Store) -> None:
    with Receiver() as receiver:
        channel = _channel(alerts, receiver)
        secret = receiver.secret
    with store.engine.connect() as connection:
        row = connection.execute(text("SELECT * FROM alert_channels")).one()
    stored = " ".join(str(value) for value in row)
    assert secret not in stored
    assert "s3cr3t-path" not in stored
    assert alerts.channels.get(channel).to_json()["url"].endswith("/…")
    assert "s3cr3t" not in str(alerts.channels.get(channel).to_json())


def test_alerts_purge_deletes_the_log_older_than_30_days(
    alerts: Alerts, store: Store, clock: ManualClock
) -> None:
    with Receiver() as receiver:
        channel = _channel(alerts, receiver)
        alerts.test(channel, actor="user:alice")
        alerts.sender.send_due()
        clock.advance(timedelta(days=29))
        alerts.test(channel, actor="user:alice")
        alerts.sender.send_due()
    clock.advance(timedelta(days=2))
    host = Host(store, time_zone="UTC", clock=clock, system_jobs=alerts.system_jobs())
    try:
        result = host.run_now("alerts_purge", timeout=30)
    finally:
        host.stop()
    assert result.detail == "1 alert message deleted"
    assert len(alerts.deliveries.log()) == 1


def test_a_receiver_that_is_not_there_is_retried(alerts: Alerts) -> None:
    port = free_port()
    channel, _ = alerts.channels.create(
        {"name": "gone", "url": f"http://127.0.0.1:{port}/hook/s3cr3t-path"}, actor="user:a"
    )
    delivery = alerts.test(channel.id, actor="user:alice")
    alerts.sender.send_due()
    [attempt] = alerts.deliveries.get(delivery).attempts
    assert (attempt.outcome, attempt.status_code) == (AttemptOutcome.RETRIED, None)
    assert attempt.error == "ConnectError: cannot reach it"


def test_an_instance_with_another_key_leaves_the_delivery_to_one_that_can_send_it(
    alerts: Alerts, store: Store, fleet: Fleet, clock: ManualClock
) -> None:
    other = Alerts(
        store, fleet, key=bytes(32), clock=clock, policy=POLICY, destinations=LOOPBACK_ALLOWED
    )
    try:
        with Receiver() as receiver:
            first = alerts.test(_channel(alerts, receiver), actor="user:alice")
            assert other.sender.send_due() == 0  # it cannot open the channel: not claimed
            [insight] = [i for i in fleet.insights.list() if i.key and "alerts-key" in i.key]
            assert "same alerts.key" in insight.message
            clock.advance(timedelta(seconds=10))
            assert alerts.sender.send_due() == 1
            assert len(receiver.requests()) == 1
            second = alerts.test(alerts.channels.list()[0].id, actor="user:alice")
            clock.advance(timedelta(hours=1))  # nobody with the key sent it within its hour
            other.sender.send_due()
    finally:
        other.stop()
    assert alerts.deliveries.get(first).delivery.state is DeliveryState.SENT
    given_up = alerts.deliveries.get(second)
    assert given_up.delivery.state is DeliveryState.FAILED
    assert "does not open with this instance's key" in (given_up.attempts[0].error or "")
