"""The priced idle policy through real stand-in servers on a manual clock (issue 42): its
first rung from the published figures at the product's price, taken as the ladder's steps
are; and an idle sleep that timed out, tried again, the third in a row pausing the policy."""

from __future__ import annotations

from decider.schedulekit import Kit
from proxy.proxykit import ProxyKit
from proxy.proxykit import proxied as proxied  # noqa: PLC0414  (the fixture, by its own name)
from sqlalchemy import insert
from support import at

from dgxmm.decider.idle import PRODUCT_PRICE, IdleOutcome, priced_ladder
from dgxmm.decider.idle.pricing import Pricing
from dgxmm.decider.tables import traffic_profiles
from dgxmm.fleet import DeploymentState, IdlePolicy
from dgxmm.store import writing

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


def test_it_wakes_ahead_of_a_regular_start_by_the_measured_wake_time(proxied: ProxyKit) -> None:
    kit = proxied
    # A small model (1 GiB awake, half of it asleep): a wake's 1.7 s of waiting at 0.1 is
    # worth more than half a GiB held for the minute until the start hour's first request.
    deployment = kit.deployment("early", idle_policy="priced", awake=1.0, asleep=0.5)
    start = 2 * 24 + 13  # Wednesday 13:00-13:59, Berlin: quiet before, busy every week
    with writing(kit.store.engine) as connection:
        connection.execute(
            insert(traffic_profiles),
            [
                {"deployment_id": deployment, "hour_of_week": hour, "rpm_p50": 0.0,
                 "rpm_p95": 0.0, "active_share": 1.0 if hour == start else 0.0,
                 "observed_minutes": 240, "observed_weeks": 4,
                 "idle_weeks": 0 if hour == start else 4, "built_at": T0}
                for hour in range(168)
            ],
        )  # fmt: skip
    # A quiet hour: down well within half an hour (asleep, or stopped when its measured
    # start is quick enough to make the stop the first rung).
    assert pulse(kit, T0 + 1800 * S) == [IdleOutcome.DONE]
    state = kit.fleet.deployments.get(deployment).state
    assert state in (DeploymentState.SLEEPING, DeploymentState.STOPPED)
    one = at("2026-06-03T13:00:00+02:00")
    assert pulse(kit, one - 10 * S) == []  # not yet: its way up takes less than that
    assert pulse(kit, one - S // 100) == [IdleOutcome.DONE]  # its measured way up before 13:00
    assert kit.fleet.deployments.get(deployment).state is DeploymentState.RUNNING
    up = "wake" if state is DeploymentState.SLEEPING else "start"
    ups = [(a, actor) for a, actor, _, _ in kit.events(deployment) if a == up]
    assert ups[-1] == (up, "idle")
