"""Per-minute rollups and request activity from real scrapes of a stand-in."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType

import httpx
import pytest
from fleet.deploy.deploykit import standin
from support import at

from dgxmm.clock import ManualClock
from dgxmm.errors import Conflict, InvalidInput
from dgxmm.fleet import Fleet, HttpTimeouts, PageProcess
from dgxmm.fleet.deployments.tables import metric_rollups
from dgxmm.fleet.metrics import scrapes as scrapes_module
from dgxmm.fleet.metrics.rollups import RETENTION_SETTING
from dgxmm.store import writing

MINUTE = 60_000_000


@pytest.fixture(params=["inline", "process"])
def pages(request: pytest.FixtureRequest) -> Iterator[PageProcess | None]:
    """Who reads the pages of a pass: the pass's own threads, or a child (as ``serve``'s)."""
    if request.param == "inline":
        yield None
        return
    reader = PageProcess()
    yield reader
    reader.close()


def chat(url: str, n: int) -> None:
    with httpx.Client(base_url=url, timeout=60, trust_env=False) as client:
        for _ in range(n):
            answer = client.post(
                "/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]}
            )
            assert answer.status_code == 200


def test_it_rolls_up_the_requests_completed_since_the_last_sample(
    make_fleet: Callable[..., Fleet], clock: ManualClock, pages: PageProcess | None
) -> None:
    fleet = make_fleet(pages=pages)
    created = fleet.deployments.create(actor="user:a", **standin("llama", "--latency", "50"))
    fleet.deployer.start(created.id, actor="user:a")
    clock.set(at("2026-06-01T10:00:05+00:00"))
    assert fleet.metrics.rollup_all() == "1 sampled"  # the baseline
    assert fleet.metrics.last_request_at(created.id) is None

    chat(created.url, 3)
    clock.set(at("2026-06-01T10:01:05+00:00"))
    fleet.metrics.rollup_all()

    rollups = fleet.metrics.rollups(created.id, at("2026-06-01T10:00:00+00:00"), 2**62)
    assert [(r.minute_us, r.requests, r.samples) for r in rollups] == [
        (at("2026-06-01T10:00:00+00:00"), 0, 1),
        (at("2026-06-01T10:01:00+00:00"), 3, 1),
    ]
    assert rollups[0].mean_latency_s is None
    latency = rollups[1].mean_latency_s
    assert latency is not None
    assert latency >= 0.05  # the stand-in holds each request at least its --latency
    assert (rollups[1].mean_running, rollups[1].mean_waiting) == (0.0, 0.0)
    assert fleet.metrics.last_request_at(created.id) == at("2026-06-01T10:01:05+00:00")

    # A quiet minute: a row with no requests, and the activity stays where it was.
    clock.set(at("2026-06-01T10:02:05+00:00"))
    fleet.metrics.rollup_all()
    quiet = fleet.metrics.rollups(created.id, at("2026-06-01T10:02:00+00:00"), 2**62)
    assert [(r.requests, r.mean_latency_s) for r in quiet] == [(0, None)]
    assert fleet.metrics.last_request_at(created.id) == at("2026-06-01T10:01:05+00:00")


def test_samples_in_one_minute_are_averaged_into_one_row(fleet: Fleet, clock: ManualClock) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("llama", "--latency", "20"))
    fleet.deployer.start(created.id, actor="user:a")
    clock.set(at("2026-06-01T10:00:05+00:00"))
    fleet.metrics.sample_now(created.id)
    chat(created.url, 2)
    clock.set(at("2026-06-01T10:00:35+00:00"))
    sample = fleet.metrics.sample_now(created.id)  # the schedule runner's fresh sample
    assert sample.is_idle
    chat(created.url, 1)
    clock.set(at("2026-06-01T10:00:50+00:00"))
    fleet.metrics.rollup_all()

    [row] = fleet.metrics.rollups(created.id, 0, 2**62)
    assert (row.minute_us, row.requests, row.samples) == (at("2026-06-01T10:00:00+00:00"), 3, 3)
    assert fleet.metrics.last_request_at(created.id) == at("2026-06-01T10:00:50+00:00")


def test_a_sleeping_deployment_gets_no_rollup_rows(fleet: Fleet, clock: ManualClock) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("llama"))
    fleet.deployer.start(created.id, actor="user:a")
    fleet.deployer.sleep(created.id, actor="user:a")
    assert fleet.metrics.rollup_all() == "0 sampled"
    assert fleet.metrics.sample_now(created.id).sleep_state is not None
    assert fleet.metrics.rollups(created.id, 0, 2**62) == []
    fleet.deployer.stop(created.id, actor="user:a")
    with pytest.raises(Conflict, match="stopped: no metrics"):
        fleet.metrics.sample_now(created.id)


def test_the_purge_deletes_rollups_past_the_retention(fleet: Fleet, clock: ManualClock) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("llama"))
    now = clock.now_us()
    day = 24 * 60 * MINUTE
    with writing(fleet.store.engine) as connection:
        for age_days in (40, 36, 34, 1):
            connection.execute(
                metric_rollups.insert().values(
                    deployment_id=created.id,
                    minute_us=now - age_days * day - now % MINUTE,
                    requests=1,
                    mean_running=0.0,
                    mean_waiting=0.0,
                    samples=1,
                )
            )
    assert fleet.metrics.purge() == 2
    assert len(fleet.metrics.rollups(created.id, 0, 2**62)) == 2
    fleet.store.set_setting(RETENTION_SETTING, 7)
    assert fleet.metrics.purge() == 1
    fleet.store.set_setting(RETENTION_SETTING, "a week")
    with pytest.raises(InvalidInput, match=RETENTION_SETTING):
        fleet.metrics.purge()


def test_the_fleet_gives_the_host_its_two_system_jobs(fleet: Fleet) -> None:
    jobs = {job.name: str(job.schedule) for job in fleet.system_jobs()}
    assert jobs == {"metrics_rollup": "* * * * *", "metrics_purge": "30 3 * * *"}


def test_it_samples_the_others_while_one_target_hangs(
    make_fleet: Callable[..., Fleet], clock: ManualClock, pages: PageProcess | None
) -> None:
    fleet = make_fleet(
        http_timeouts=HttpTimeouts(connect_s=2.0, probe_s=5.0, metrics_s=1.0), pages=pages
    )
    hung = fleet.deployments.create(
        actor="user:a", **standin("hung", "--silent-metrics", awake=20.0)
    )
    slow = fleet.deployments.create(
        actor="user:a", **standin("slow", "--slow-metrics", "0.2", awake=20.0)
    )
    fine = fleet.deployments.create(actor="user:a", **standin("fine", awake=20.0))
    for deployment in (hung, slow, fine):
        fleet.deployer.start(deployment.id, actor="user:a")
    clock.set(at("2026-06-01T10:00:05+00:00"))
    assert fleet.metrics.rollup_all() == "2 sampled, 1 unreadable"
    minute = at("2026-06-01T10:00:00+00:00")
    for sampled in (slow, fine):
        assert [r.samples for r in fleet.metrics.rollups(sampled.id, minute, 2**62)] == [1]
    assert fleet.metrics.rollups(hung.id, minute, 2**62) == []
    assert fleet.deployments.get(hung.id).state.value == "running"  # unreadable, not failed
    [insight] = fleet.insights.list()
    assert (insight.kind, insight.deployment_id) == ("metrics_unreadable", hung.id)


def test_hung_servers_beyond_the_moving_scrapes_hold_up_no_healthy_one(
    make_fleet: Callable[..., Fleet],
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
    pages: PageProcess | None,
) -> None:
    # One scrape moving at a time: each hung server is found stuck and a thread starts in its
    # place. Without that, the healthy servers queued behind four hung ones (1 s each) would
    # still wait at the pass's 3 s deadline and count as unreadable.
    monkeypatch.setattr(scrapes_module, "MOVING_SCRAPES", 1)
    fleet = make_fleet(
        http_timeouts=HttpTimeouts(connect_s=2.0, probe_s=5.0, metrics_s=1.0), pages=pages
    )
    hung = [
        fleet.deployments.create(
            actor="user:a", **standin(f"hung{n}", "--silent-metrics", awake=10.0)
        )
        for n in range(4)
    ]
    fine = [
        fleet.deployments.create(actor="user:a", **standin(f"well{n}", awake=10.0))
        for n in range(2)
    ]
    for deployment in (*hung, *fine):  # by name, the hung ones come first in the queue
        fleet.deployer.start(deployment.id, actor="user:a")
    clock.set(at("2026-06-01T10:00:05+00:00"))
    assert fleet.metrics.rollup_all() == "2 sampled, 4 unreadable"
    minute = at("2026-06-01T10:00:00+00:00")
    for sampled in fine:
        assert [r.samples for r in fleet.metrics.rollups(sampled.id, minute, 2**62)] == [1]


def test_a_pass_with_a_page_process_reads_no_page_in_this_interpreter(
    make_fleet: Callable[..., Fleet], clock: ManualClock, pages: PageProcess | None
) -> None:
    """The pass's HTTP and parsing run in the child: no request sent, no page parsed here.

    Counted, not timed: the calls on any of this process's threads during the pass. Inline,
    each server costs one of each; that work held the API's requests behind the GIL.
    """
    fleet = make_fleet(pages=pages)
    created = [
        fleet.deployments.create(actor="user:a", **standin(f"m{n}", awake=10.0)) for n in range(2)
    ]
    for deployment in created:
        fleet.deployer.start(deployment.id, actor="user:a")
    calls: list[str] = []

    def profile(frame: FrameType, event: str, arg: object) -> None:
        code = frame.f_code
        if event == "call" and (
            code.co_name == "parse_exposition"
            or (code.co_name == "send" and code.co_filename.endswith("httpx/_client.py"))
        ):
            calls.append(code.co_name)

    clock.set(at("2026-06-01T10:00:05+00:00"))
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        assert fleet.metrics.rollup_all() == "2 sampled"
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    expected = [] if pages is not None else ["parse_exposition", "send"] * 2
    assert sorted(calls) == sorted(expected)
