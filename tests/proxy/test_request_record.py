"""The proxy's record of its requests per deployment and minute (issue 26): what it took,
what it held while the deployment woke with the added wait, what it refused and why, written
by the metrics job's flush and read by the savings report."""

from __future__ import annotations

from proxy.proxykit import ProxyKit, chat_body
from proxy.proxykit import proxied as proxied  # noqa: PLC0414  (the fixture, by its own name)

from dgxmm.time_units import MINUTE_US


def test_it_records_warm_held_and_refused_requests(proxied: ProxyKit) -> None:
    kit = proxied
    awake = kit.deployment("awake", awake=20.0)
    asleep = kit.deployment("asleep", awake=20.0)
    kit.fleet.deployer.sleep(asleep, actor="user:alice")
    refusing = kit.deployment("refusing", awake=20.0, wake_on_request=False)
    kit.fleet.deployer.sleep(refusing, actor="user:alice")
    minute = kit.clock.now_us() - kit.clock.now_us() % MINUTE_US
    assert kit.post("/v1/chat/completions", chat_body(kit.model(awake))).status_code == 200
    assert kit.post("/v1/chat/completions", chat_body(kit.model(asleep))).status_code == 200
    assert kit.post("/v1/chat/completions", chat_body(kit.model(refusing))).status_code == 503
    assert kit.fleet.request_minutes.add(kit.fleet.activity.take_minutes()) == 3
    (warm,) = kit.fleet.request_minutes.read(awake, minute, minute + MINUTE_US)
    assert (warm.requests, warm.held, warm.waits_ms, dict(warm.refused)) == (1, 0, (), {})
    (cold,) = kit.fleet.request_minutes.read(asleep, minute, minute + MINUTE_US)
    assert (cold.requests, cold.held, len(cold.waits_ms)) == (1, 1, 1)
    assert cold.waits_ms[0] > 0  # the wake took a while of wall time
    (refused,) = kit.fleet.request_minutes.read(refusing, minute, minute + MINUTE_US)
    assert (refused.requests, refused.held, dict(refused.refused)) == (
        1,
        0,
        {"wake_on_request_off": 1},
    )
    # Taken: a second flush adds nothing; a request later is added to the minute's row.
    assert kit.fleet.request_minutes.add(kit.fleet.activity.take_minutes()) == 0
    assert kit.post("/v1/chat/completions", chat_body(kit.model(awake))).status_code == 200
    kit.fleet.request_minutes.add(kit.fleet.activity.take_minutes())
    (again,) = kit.fleet.request_minutes.read(awake, minute, minute + MINUTE_US)
    assert again.requests == 2
