"""Sleep and stop times measured by the deployer with real stand-ins (issue 42, point 3), and
the priced idle policy's inputs reading them: a sleep at each level and a stop record how
long they took; a sleep that timed out counts at its bound, one that failed otherwise not at
all; where none was measured, vLLM's published figures stand in."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from fastapi.testclient import TestClient
from fleet.deploy.deploykit import standin
from support import PATIENCE_S, StandinProcess

from dgxmm.clock import ManualClock
from dgxmm.decider.idle import IdleStep
from dgxmm.decider.idle.pricing import PUBLISHED, Pricing
from dgxmm.errors import BackendError, TimedOut
from dgxmm.fleet import EventAction, EventOutcome, Fleet
from dgxmm.store import Store
from dgxmm.time_units import SECOND_US


def downs(
    pricing: Pricing, fleet: Fleet, deployment_id: int, clock: ManualClock
) -> dict[IdleStep, tuple[int, int | None]]:
    """Return each level's way down as the priced policy reads it: (mean, mean left)."""
    costs = pricing.costs(fleet.deployments.get(deployment_id), clock.now_us())
    return {level.step: (level.down_us, level.down_left_us) for level in costs.levels}


def test_a_sleep_at_each_level_and_a_stop_are_measured_and_priced(
    fleet: Fleet, store: Store, clock: ManualClock
) -> None:
    # The stand-in holds each /sleep half a second: a slow sleep, at both levels.
    created = fleet.deployments.create(actor="user:a", **standin("slow", "--hang-sleep", "0.5"))
    fleet.deployer.start(created.id, actor="user:a")
    assert fleet.events.down_times(created.id, 1, 20) == []
    fleet.deployer.sleep(created.id, actor="idle")
    fleet.deployer.deepen(created.id, actor="idle")  # woken from level 1, asleep at level 2
    fleet.deployer.wake(created.id, actor="user:a")
    fleet.deployer.stop(created.id, actor="user:a")

    [slept] = fleet.events.down_times(created.id, 1, 20)
    [deepened] = fleet.events.down_times(created.id, 2, 20)
    [stopped] = fleet.events.down_times(created.id, 0, 20)
    assert slept >= SECOND_US // 2  # the stand-in's hang is in it
    assert deepened >= SECOND_US // 2  # the deepening's whole way: a wake, then the sleep
    assert stopped > 0
    # The ways up are read apart from the ways down: a start and a level-2 wake.
    assert len(fleet.events.ready_times(created.id, 0, 20)) == 1
    assert len(fleet.events.ready_times(created.id, 2, 20)) == 1
    # The events say so: the sleep's at level 1, the stop's at level 0, both done.
    events = {
        e.action: e
        for e in reversed(fleet.events.list(created.id))
        if e.action in (EventAction.SLEEP, EventAction.STOP)
    }
    assert (events[EventAction.STOP].ready_us, events[EventAction.STOP].from_level) == (stopped, 0)
    assert events[EventAction.SLEEP].from_level == 2  # the newest sleep: the deepening

    # One of each: its mean, and a request that meets it waits half of it.
    assert downs(Pricing(store, fleet), fleet, created.id, clock) == {
        IdleStep.SLEEP: (slept, round(slept / 2)),
        IdleStep.DEEPEN: (deepened, round(deepened / 2)),
        IdleStep.STOP: (stopped, round(stopped / 2)),
    }


def test_a_sleep_that_timed_out_counts_at_its_bound(
    fleet: Fleet, store: Store, clock: ManualClock
) -> None:
    keys = standin("hung", "--hang-sleep", "3600", sleep_timeout_s=1.0)
    created = fleet.deployments.create(actor="user:a", **keys)
    fleet.deployer.start(created.id, actor="user:a")
    with pytest.raises(TimedOut):
        fleet.deployer.sleep(created.id, actor="idle")
    failed = fleet.events.latest(created.id, EventAction.SLEEP, outcome=EventOutcome.FAILED)
    assert failed is not None
    assert (failed.ready_us, failed.from_level) == (SECOND_US, 1)
    assert fleet.events.down_times(created.id, 1, 20) == [SECOND_US]
    found = downs(Pricing(store, fleet), fleet, created.id, clock)
    assert found[IdleStep.SLEEP] == (SECOND_US, SECOND_US // 2)
    assert found[IdleStep.STOP] == PUBLISHED[(IdleStep.STOP, False)]  # none measured yet
    # Let the server's sleep end, so that the stop after the test finds it quiet.
    url = fleet.backends.of(fleet.deployments.get(created.id)).base_url
    httpx.post(f"{url}/dgxmm/faults", json={"sleep_hang_s": 0}, timeout=PATIENCE_S)


def test_a_sleep_the_server_refused_measures_nothing(
    fleet: Fleet, store: Store, clock: ManualClock
) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("refuses", "--fail-sleep"))
    fleet.deployer.start(created.id, actor="user:a")
    with pytest.raises(BackendError) as caught:
        fleet.deployer.sleep(created.id, actor="idle")
    assert not isinstance(caught.value, TimedOut)
    failed = fleet.events.latest(created.id, EventAction.SLEEP, outcome=EventOutcome.FAILED)
    assert failed is not None
    assert (failed.ready_us, failed.from_level) == (None, None)
    assert fleet.events.down_times(created.id, 1, 20) == []
    found = downs(Pricing(store, fleet), fleet, created.id, clock)
    assert found[IdleStep.SLEEP] == PUBLISHED[(IdleStep.SLEEP, False)]


def test_the_last_times_down_are_read_per_level_oldest_first(fleet: Fleet) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("many"))
    for n in range(25):
        fleet.events.record(
            created.id, EventAction.SLEEP, actor="idle", outcome=EventOutcome.DONE,
            took=(n * SECOND_US, 1),
        )  # fmt: skip
    fleet.events.record(
        created.id, EventAction.WAKE, actor="user:a", outcome=EventOutcome.DONE,
        took=(9 * SECOND_US, 1),
    )  # fmt: skip
    assert fleet.events.down_times(created.id, 1, 20) == [n * SECOND_US for n in range(5, 25)]
    assert fleet.events.down_times(created.id, 2, 20) == []
    assert fleet.events.ready_times(created.id, 1, 20) == [9 * SECOND_US]  # only the wake


def test_an_actions_page_says_how_long_a_way_down_took(client: TestClient, fleet: Fleet) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("shown"))
    timed_out = fleet.events.record(
        created.id, EventAction.SLEEP, actor="idle", outcome=EventOutcome.FAILED,
        took=(30 * SECOND_US, 1),
    )  # fmt: skip
    stop = fleet.events.record(
        created.id, EventAction.STOP, actor="idle", outcome=EventOutcome.DONE,
        took=(1_500_000, 0),
    )  # fmt: skip
    wake = fleet.events.record(
        created.id, EventAction.WAKE, actor="idle", outcome=EventOutcome.DONE,
        took=(2 * SECOND_US, 2),
    )  # fmt: skip
    page = client.get(f"/runs/actions/{timed_out.id}").text
    assert '<dt>Took</dt><dd id="action-took">30.0 s <span class="muted">(to sleep level 1)' in page
    assert "(timed out: counted at its bound)" in page
    page = client.get(f"/runs/actions/{stop.id}").text
    assert '<dd id="action-took">1.5 s</dd>' in page
    assert "Ready after" not in page
    page = client.get(f"/runs/actions/{wake.id}").text
    assert "<dt>Ready after</dt><dd>2.0 s" in page
    assert "(from sleep level 2)" in page


def test_a_stop_that_stopped_nothing_measures_nothing(
    fleet: Fleet, standin: Callable[..., StandinProcess]
) -> None:
    # An external server: dgxmm marks it stopped, the server keeps running; no way down.
    server = standin()
    created = fleet.deployments.create(
        actor="user:a", name="remote", model=server.model, backend="external",
        base_url=server.base_url, gpus=[0], memory_gib_awake=40.0, memory_gib_asleep=4.0,
    )  # fmt: skip
    fleet.deployer.start(created.id, actor="user:a")
    stopped = fleet.deployer.stop(created.id, actor="user:a")
    assert (stopped.event.ready_us, stopped.event.from_level) == (None, None)
    assert fleet.events.down_times(created.id, 0, 20) == []
    assert len(fleet.events.ready_times(created.id, 0, 20)) == 1  # its start was timed
