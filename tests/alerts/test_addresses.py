"""Where a channel may point: never link-local or a cloud's metadata address, in any
spelling; private networks only when the operator allows them; checked when the channel is
made and again, on the resolved address, at each send (a name may be rebound meanwhile).

Every connection a test makes is to 127.0.0.1; refused addresses are refused before any
connection, so nothing here reaches another address.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from alerts.alertkit import KEY, POLICY, Receiver

from dgxmm.alerts import Alerts, AttemptOutcome, Destinations
from dgxmm.clock import ManualClock
from dgxmm.errors import DefinitionError
from dgxmm.fleet import Fleet
from dgxmm.store import Store

NEVER = {
    "metadata": "http://169.254.169.254/latest/meta-data/",
    "link-local": "http://169.254.1.1/hook",
    "decimal": "http://2852039166/hook",
    "hex": "http://0xa9fea9fe/hook",
    "dotted-hex": "http://0xA9.0xFE.0xA9.0xFE/hook",
    "v4-mapped": "http://[::ffff:169.254.169.254]/hook",
    "v4-mapped-hex": "http://[::ffff:a9fe:a9fe]/hook",
    "v4-compatible": "http://[::169.254.169.254]/hook",
    "nat64": "http://[64:ff9b::a9fe:a9fe]/hook",
    "6to4": "http://[2002:a9fe:a9fe::1]/hook",
    "fe80": "http://[fe80::1]/hook",
    "fe80-scoped": "http://[fe80::1%25eth0]/hook",
    "aws-v6-metadata": "http://[fd00:ec2::254]/hook",
}
PRIVATE = {
    "loopback": "http://127.0.0.1:9/hook",
    "loopback-short": "http://127.1/hook",
    "loopback-decimal": "http://2130706433/hook",
    "localhost": "http://localhost/hook",
    "localhost-dot": "http://LOCALHOST./hook",
    "ten": "http://10.1.2.3/hook",
    "172-16": "http://172.16.0.1/hook",
    "192-168": "http://192.168.1.1/hook",
    "v6-loopback": "http://[::1]/hook",
    "unspecified": "http://0.0.0.0/hook",
    "ula": "http://[fc00::1]/hook",
    "v4-mapped-loopback": "http://[::ffff:127.0.0.1]/hook",
}


@pytest.fixture
def closed(store: Store, fleet: Fleet, clock: ManualClock) -> Iterator[Alerts]:
    """Alerts as ``dgxmm serve`` makes them by default: private networks refused."""
    made = Alerts(store, fleet, key=KEY, clock=clock, policy=POLICY)
    yield made
    made.stop()


@pytest.mark.parametrize("url", NEVER.values(), ids=NEVER.keys())
def test_it_never_takes_a_link_local_or_metadata_address(alerts: Alerts, url: str) -> None:
    # ``alerts`` allows private networks (the tests' receivers are on 127.0.0.1): still no.
    with pytest.raises(DefinitionError) as refused:
        alerts.channels.create({"name": "x", "url": url}, actor="user:alice")
    assert refused.value.field == "url"
    assert "never allowed" in str(refused.value)
    assert alerts.channels.list() == []


@pytest.mark.parametrize("url", PRIVATE.values(), ids=PRIVATE.keys())
def test_it_takes_a_private_address_only_when_allowed(
    closed: Alerts, alerts: Alerts, url: str
) -> None:
    with pytest.raises(DefinitionError) as refused:
        closed.channels.create({"name": "x", "url": url}, actor="user:alice")
    assert refused.value.field == "url"
    assert "--alerts-allow-private-networks" in str(refused.value)
    assert closed.channels.list() == []
    made, _ = alerts.channels.create({"name": "x", "url": url}, actor="user:alice")
    assert made.name == "x"


def test_a_name_that_resolves_to_a_refused_address_is_refused_at_send_time(
    store: Store, fleet: Fleet, clock: ManualClock
) -> None:
    # The name passed when the channel was made; now it resolves to 127.0.0.1 (rebound).
    async def rebound(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    alerts = Alerts(
        store,
        fleet,
        key=KEY,
        clock=clock,
        policy=POLICY,
        destinations=Destinations(resolve=rebound),
    )
    try:
        with Receiver() as receiver:
            port = receiver.port
            channel, _ = alerts.channels.create(
                {"name": "ops", "url": f"http://hooks.example:{port}/hook"}, actor="user:alice"
            )
            delivery = alerts.test(channel.id, actor="user:alice")
            alerts.sender.send_due()
        assert receiver.requests() == []
    finally:
        alerts.stop()
    [attempt] = alerts.deliveries.get(delivery).attempts
    # Nothing of the address in the log: it is no probe of the server's networks.
    assert (attempt.outcome, attempt.status_code) == (AttemptOutcome.RETRIED, None)
    assert attempt.error == "refused: address not allowed"


def test_a_literal_address_is_checked_again_at_send_time(
    alerts: Alerts, closed: Alerts, clock: ManualClock
) -> None:
    # Made while private networks were allowed; sent by an instance that does not allow them.
    with Receiver() as receiver:
        port = receiver.port
        channel, _ = alerts.channels.create(
            {"name": "ops", "url": f"http://2130706433:{port}/hook"}, actor="user:alice"
        )
        delivery = closed.test(channel.id, actor="user:alice")
        closed.sender.send_due()
    assert receiver.requests() == []
    [attempt] = closed.deliveries.get(delivery).attempts
    assert attempt.error == "refused: address not allowed"


def test_it_connects_to_the_address_it_checked(
    store: Store, fleet: Fleet, clock: ManualClock
) -> None:
    # hooks.example resolves nowhere but through the checked resolution: the request reaches
    # 127.0.0.1 only if the sender connects to the address it checked, keeping the Host.
    async def checked(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    alerts = Alerts(
        store, fleet, key=KEY, clock=clock, policy=POLICY,
        destinations=Destinations(allow_private=True, resolve=checked),
    )  # fmt: skip
    try:
        with Receiver() as receiver:
            port = receiver.port
            channel, receiver.secret = alerts.channels.create(
                {"name": "ops", "url": f"http://hooks.example:{port}/hook/s3cr3t-path"},
                actor="user:alice",
            )
            delivery = alerts.test(channel.id, actor="user:alice")
            alerts.sender.send_due()
    finally:
        alerts.stop()
    [got] = receiver.requests()
    assert got.signed
    assert got.host == f"hooks.example:{port}"
    assert alerts.deliveries.get(delivery).attempts[0].outcome is AttemptOutcome.SENT
