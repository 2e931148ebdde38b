"""A user job's ``time_zone``: checked, kept as written, scheduled in it; older files import."""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

import pytest
from support import at

from dgxmm.errors import DefinitionError
from dgxmm.store import Store


def test_it_schedules_a_job_in_its_own_zone(store: Store) -> None:
    store.define_job(
        name="ny", schedule="30 2 * * *", action="checkpoint", time_zone="America/New_York"
    )
    store.define_job(name="here", schedule="30 2 * * *", action="checkpoint")
    jobs = {job.name: job for job in store.user_jobs().jobs}
    assert jobs["ny"].time_zone == ZoneInfo("America/New_York")
    assert jobs["here"].time_zone is None  # the scheduler's
    scheduler = store.scheduler("Europe/Berlin")
    scheduler.tick(at("2026-03-07T12:00:00-05:00"))
    # 02:30 does not exist in New York on 2026-03-08: right after the gap.
    assert scheduler.next_run("ny") == at("2026-03-08T03:00:00-04:00")
    assert scheduler.next_run("here") == at("2026-03-08T02:30:00+01:00")


@pytest.mark.parametrize(
    ("zone", "message"),
    [
        ("Mars/Olympus_Mons", "unknown time zone 'Mars/Olympus_Mons'"),
        (" Europe/Berlin", "unknown time zone"),
        ("", "unknown time zone"),
        (5, "expected an IANA zone name as text, got 5"),
    ],
    ids=["unknown", "spaces", "empty", "number"],
)
def test_it_refuses_a_zone_that_does_not_exist_and_changes_nothing(
    store: Store, zone: object, message: str
) -> None:
    store.define_job(name="kept", schedule="0 3 * * *", action="checkpoint")
    version = store.catalog_version()
    with pytest.raises(DefinitionError) as refused:
        store.define_job(name="kept", schedule="0 4 * * *", action="checkpoint", time_zone=zone)
    assert refused.value.field == "time_zone"
    assert message in refused.value.message
    assert store.catalog_version() == version
    assert store.job("kept").definition == {
        "name": "kept",
        "schedule": "0 3 * * *",
        "action": "checkpoint",
    }


def test_it_lists_a_bad_zone_beside_the_other_wrong_fields(store: Store) -> None:
    with pytest.raises(DefinitionError) as refused:
        store.define_job(name="x", schedule="61 * * * *", action="checkpoint", time_zone="Nowhere")
    assert [field for field, _ in refused.value.errors] == ["schedule", "time_zone"]


def test_an_older_catalog_file_without_zones_imports_and_runs_in_the_schedulers_zone(
    store: Store,
) -> None:
    older: dict[str, Any] = {
        "format": 1,
        "kind": "dgxmm-catalog",
        "queries": [],
        "jobs": [{"name": "cp", "schedule": "0 3 * * *", "action": "checkpoint"}],
    }
    store.import_catalog(older)
    assert store.job("cp").served
    scheduler = store.scheduler("Asia/Tokyo")
    scheduler.tick(at("2026-06-01T12:00:00+09:00"))
    assert scheduler.next_run("cp") == at("2026-06-02T03:00:00+09:00")


def test_it_exports_and_imports_a_jobs_zone(store: Store, tmp_path: Any) -> None:
    store.define_job(name="ny", schedule="0 3 * * *", action="checkpoint", time_zone="Asia/Tokyo")
    document = store.export_catalog()
    assert document["jobs"][0]["time_zone"] == "Asia/Tokyo"
    other = Store.open(tmp_path / "other.db")
    try:
        other.import_catalog(document)
        assert other.user_jobs().jobs[0].time_zone == ZoneInfo("Asia/Tokyo")
    finally:
        other.close()


def test_it_keeps_a_job_whose_zone_this_machine_does_not_know_and_does_not_run_it(
    store: Store,
) -> None:
    # A catalog written where the zone data is newer: the job is kept as written, not lost.
    job = {"name": "far", "schedule": "0 3 * * *", "action": "checkpoint", "time_zone": "X/New"}
    store.import_catalog({"format": 1, "kind": "dgxmm-catalog", "queries": [], "jobs": [job]})
    kept = store.job("far")
    assert kept.definition == job
    assert not kept.served
    assert "time_zone" in (kept.reason or "")
    assert [(n.name, "time_zone" in n.reason) for n in store.user_jobs().not_scheduled] == [
        ("far", True)
    ]
