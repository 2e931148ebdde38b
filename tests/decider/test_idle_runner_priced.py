"""The priced idle policy through real stand-in servers on a manual clock (issue 42): its
first rung from the published figures at the product's price, taken as the ladder's steps
are; and an idle sleep that timed out, tried again, the third in a row pausing the policy."""

from __future__ import annotations

from decider.schedulekit import Kit
from proxy.proxykit import ProxyKit
from proxy.proxykit import proxied as proxied  # noqa: PLC0414  (the fixture, by its own name)
from support import at

from dgxmm.decider.idle import PRODUCT_PRICE, IdleOutcome, priced_ladder
from dgxmm.decider.idle.pricing import Pricing
from dgxmm.fleet import DeploymentState, IdlePolicy

S = 1_000_000
T0 = at("2026-06-03T12:00:00+02:00")  # the kit's clock when its deployments start


def pulse(kit: Kit | ProxyKit, now: int) -> list[IdleOutcome]:
    """Set the clock, run one idle pulse and wait for the steps it handed on."""
    kit.clock.set(now)
    return [future.result(timeout=120) for future in kit.schedules.idle_pulse(now)]


def test_a_priced_deployment_sleeps_at_its_first_rung_with_no_ladder_of_its_own(
    proxied: ProxyKit,
) -> None:
    kit = proxied
    deployment = kit.deployment("priced", idle_policy="priced")
    found = kit.fleet.deployments.get(deployment)
    assert found.idle_policy is IdlePolicy.PRICED
    assert found.idle.is_off
    # No wake measured yet (its start is: the stand-in's, well under a second or two), no
    # profile built: vLLM's published figures for the rest, unscaled, at the product's price.
    rungs = Pricing(kit.store, kit.fleet).ladder(found, T0, in_awake_window=False)
    assert rungs == priced_ladder(
        Pricing(kit.store, kit.fleet).costs(found, T0), price=PRODUCT_PRICE
    )
    first = rungs.first_after_us()
    assert first is not None
    assert first > 5 * S  # a round trip's seconds and the wait's price on top
    # A quick start can make the stop the first rung (the level-1 sleep then skipped).
    down = DeploymentState.SLEEPING if first == rungs.sleep_after_us else DeploymentState.STOPPED
    assert pulse(kit, T0 + first - S) == []
    assert pulse(kit, T0 + first + S) == [IdleOutcome.DONE]
    assert kit.fleet.deployments.get(deployment).state is down
    actors = [actor for _, actor, _, _ in kit.events(deployment)]
    assert actors[-1] == "idle"


def test_an_idle_sleep_that_times_out_is_tried_again_and_the_third_pauses(
    proxied: ProxyKit,
) -> None:
    kit = proxied
    # The stand-in answers /sleep after a minute; the deployment gives a sleep one second.
    deployment = kit.deployment(
        "slow", "--hang-sleep", "60", idle_sleep_after_s=60, sleep_timeout_s=1
    )
    assert pulse(kit, T0 + 61 * S) == [IdleOutcome.TIMED_OUT]
    found = kit.fleet.deployments.get(deployment)
    assert (found.state, found.idle_paused) == (DeploymentState.RUNNING, None)
    assert pulse(kit, T0 + 120 * S) == []  # not before 15 minutes from the timeout
    assert pulse(kit, T0 + 962 * S) == [IdleOutcome.TIMED_OUT]
    assert pulse(kit, T0 + 1863 * S) == [IdleOutcome.FAILED]  # the third in a row
    paused = kit.fleet.deployments.get(deployment).idle_paused
    assert paused is not None
    assert "idle sleep failed" in paused
