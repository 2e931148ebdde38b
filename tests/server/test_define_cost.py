"""A define costs the same whatever the number of jobs: the host reads only what changed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dgxmm.clock import ManualClock
from dgxmm.server import Host
from dgxmm.server.lists import jobs as job_list
from dgxmm.server.lists.jobs import job_row, job_rows
from dgxmm.store import Store


def scheduled(host: Host) -> dict[str, str]:
    return {
        job.name: str(job.schedule) for job in host.scheduler.jobs() if job.kind.value == "user"
    }


def test_a_define_reads_only_the_job_it_changed(
    store: Store, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(50):
        store.define_job(name=f"j{i:02}", schedule="0 3 * * *", action="checkpoint")
    host = Host(store, time_zone="UTC", clock=clock)
    host.tick()
    job_rows(host, full_errors=True)  # the first read of the whole catalog
    whole: list[str] = []
    for method in ("jobs", "sync"):
        real = getattr(store, method)

        def counted(*args: object, _real: object = real, _name: str = method) -> object:
            whole.append(_name)
            return _real(*args)  # type: ignore[operator]

        monkeypatch.setattr(store, method, counted)
    store.define_job(name="new", schedule="5 4 * * *", action="checkpoint")
    host.sync()
    row = job_row(host, "new", full_errors=True)
    store.set_job_enabled("j07", False)
    host.sync()
    assert whole == []  # neither the scheduler's sync nor the job list read every job
    assert row["schedule"] == "5 4 * * *"
    assert scheduled(host)["new"] == "5 4 * * *"
    assert job_row(host, "j07", full_errors=True)["enabled"] is False
    assert not host.scheduler.get("j07").enabled


def test_the_jobs_read_change_by_change_equal_a_whole_read(
    store: Store, clock: ManualClock
) -> None:
    store.define_query("q", None, "SELECT 1 AS one")
    host = Host(store, time_zone="UTC", clock=clock)
    host.tick()
    steps: list[Callable[[], object]] = [
        lambda: store.define_job(name="a", schedule="0 3 * * *", action="checkpoint"),
        lambda: store.define_job(name="b", schedule="0 4 * * *", action="query", query="q"),
        lambda: store.define_job(name="a", schedule="0 5 * * *", action="checkpoint"),
        lambda: store.set_job_enabled("b", False),
        lambda: store.define_query("q", None, "SELECT 2 AS two"),  # a query: all read again
        lambda: store.drop_job("a"),
        lambda: store.define_job(name="c", schedule="0 6 * * *", action="checkpoint"),
    ]
    for step in steps:
        step()
        host.sync()
        fresh = Host(store, time_zone="UTC", clock=clock)
        fresh.sync(force=True)
        assert scheduled(host) == scheduled(fresh)
        assert [(n.name, n.reason) for n in host.not_scheduled] == [
            (n.name, n.reason) for n in fresh.not_scheduled
        ]
        assert host.definitions() == fresh.definitions()
        assert job_rows(host, full_errors=True) == job_rows(fresh, full_errors=True)


def test_one_jobs_row_is_built_without_listing_every_job(
    store: Store, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A define answers its job's row: listing every job to pick it cost more than the define
    # at 10,000 jobs (benchmarks/server.py).
    for i in range(20):
        store.define_job(name=f"j{i:02}", schedule="0 3 * * *", action="checkpoint")
    host = Host(store, time_zone="UTC", clock=clock)
    host.tick()
    listed: list[object] = []
    real = job_list.Listed

    def counted(**keys: object) -> object:
        listed.append(keys)
        return real(**keys)  # type: ignore[arg-type]

    monkeypatch.setattr(job_list, "Listed", counted)
    assert job_row(host, "j07", full_errors=True)["name"] == "j07"
    assert listed == []


@pytest.mark.parametrize(
    ("changes", "added"),
    [
        pytest.param(["b"], [], id="one-replaced"),
        pytest.param(["aa", "zz", "0"], ["aa", "zz", "0"], id="added-first-middle-last"),
        pytest.param(["c", "cc"], ["cc"], id="one-dropped-one-added"),
    ],
)
def test_the_jobs_by_name_stay_in_name_order_as_they_change(
    store: Store, clock: ManualClock, changes: list[str], added: list[str]
) -> None:
    for name in ("a", "b", "c", "d"):
        store.define_job(name=name, schedule="0 3 * * *", action="checkpoint")
    host = Host(store, time_zone="UTC", clock=clock)
    assert host.definitions_in_order()[1] == ["a", "b", "c", "d"]
    for name in changes:
        if name in ("c",):
            store.drop_job(name)
        else:
            store.define_job(name=name, schedule="0 4 * * *", action="checkpoint")
    expected = sorted({"a", "b", "c", "d", *added} - ({"c"} if "c" in changes else set()))
    by_name, names = host.definitions_in_order()
    assert names == expected
    assert sorted(by_name) == expected
    assert [job.name for job in host.definitions()] == expected
    assert all(by_name[name].definition["schedule"] == "0 4 * * *" for name in added)
