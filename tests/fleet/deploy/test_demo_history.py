"""The demo's synthetic weeks tell only what its deployments' settings allow (issue 45).

Each sleep comes by ``idle`` its idle ladder's wait after the day's last request, each wake
by ``request`` with its time to ready, so a deployment's page reads its measured wake time
from the same history; a restart does not write the weeks again.
"""

from __future__ import annotations

from dgxmm.clock import ManualClock
from dgxmm.fleet import Demo, Fleet
from dgxmm.fleet.demo.history import SYNTHETIC_WAKE_US, synthetic_rollups, synthetic_story
from dgxmm.fleet.demo.models import DEMO_MODELS
from dgxmm.fleet.deployments.events import EventAction
from dgxmm.fleet.metrics import Rollup
from dgxmm.time_units import DAY_US, MINUTE_US, SECOND_US


def _rows(requests: list[int]) -> list[Rollup]:
    return [
        Rollup(deployment_id=1, minute_us=i * MINUTE_US, requests=n, mean_running=0.0,
               mean_waiting=0.0, mean_latency_s=0.1 if n else None, samples=4)
        for i, n in enumerate(requests)
    ]  # fmt: skip


def test_it_sleeps_its_idle_wait_after_the_last_request_and_wakes_on_the_next() -> None:
    # Requests in minutes 0-1, quiet 2-9, requests again in minute 10.
    rows = _rows([5, 3, 0, 0, 0, 0, 0, 0, 0, 0, 2])
    events, minutes = synthetic_story(rows, sleep_after_us=3 * MINUTE_US + 20 * SECOND_US)
    assert [(e.action, e.actor, e.at_us) for e in events] == [
        (EventAction.SLEEP, "idle", 5 * MINUTE_US + 20 * SECOND_US),  # minute 1 ended at 2
        (EventAction.WAKE, "request", 10 * MINUTE_US + SYNTHETIC_WAKE_US),
    ]
    assert events[1].ready_us == SYNTHETIC_WAKE_US
    assert (minutes[10 * MINUTE_US].held, minutes[10 * MINUTE_US].waits_ms) == (1, [2000])
    assert minutes[0].held == 0
    assert 2 * MINUTE_US not in minutes  # no request, no row


def test_a_wait_longer_than_the_quiet_never_sleeps() -> None:
    events, _ = synthetic_story(_rows([5, 0, 0, 4]), sleep_after_us=30 * MINUTE_US)
    assert events == []


def test_the_demo_writes_its_weeks_once_with_measured_wakes(
    fleet: Fleet, clock: ManualClock
) -> None:
    demo = Demo(fleet, say=lambda _: None)
    demo.create()
    chat = demo.deployments[0]
    model = DEMO_MODELS[0]
    assert chat.idle.sleep_after_us == round(model.idle_sleep_after_s * SECOND_US)
    now = clock.now_us()
    demo.write_history(now)
    sleeps = [e for e in fleet.events.list(chat.id, 1000) if e.action is EventAction.SLEEP]
    wakes = [e for e in fleet.events.list(chat.id, 1000) if e.action is EventAction.WAKE]
    assert len(sleeps) >= 20
    assert {e.actor for e in sleeps} == {"idle"}
    assert {e.actor for e in wakes} == {"request"}
    # Each sleep came its idle wait after the last minute with a request.
    rows = synthetic_rollups(model, chat, now - now % MINUTE_US - 28 * DAY_US, now - MINUTE_US)
    busy = [r.minute_us for r in rows if r.requests]
    for sleep in sleeps:
        last = max(at for at in busy if at < sleep.at_us)
        assert sleep.at_us == last + MINUTE_US + round(model.idle_sleep_after_s * SECOND_US)
    # The page's measured wake time reads these wakes.
    assert fleet.events.ready_times(chat.id, 1, 20) == [SYNTHETIC_WAKE_US] * 20
    # A restart, a minute later: the weeks are not written again.
    clock.advance(MINUTE_US)
    Demo(fleet, say=lambda _: None).create()
    demo.write_history(clock.now_us())
    again = [e for e in fleet.events.list(chat.id, 1000) if e.action is EventAction.SLEEP]
    assert len(again) == len(sleeps)
