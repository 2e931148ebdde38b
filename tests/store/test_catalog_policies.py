"""A user job's catch-up and overlap keys: checked with every wrong field named, scheduled,
carried by the catalog file; a file written before them still imports with the spec's rules."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from dgxmm.errors import DefinitionError
from dgxmm.jobs import CatchUp, Coalesce, Overlap
from dgxmm.store import Store


def test_it_schedules_a_job_with_its_catch_up_and_overlap(store: Store) -> None:
    store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint",
                     catchup_window_s=900, coalesce="all", overlap="buffer_one")  # fmt: skip
    (job,) = store.user_jobs().jobs
    assert job.catch_up == CatchUp(window=timedelta(minutes=15), coalesce=Coalesce.ALL)
    assert job.overlap is Overlap.BUFFER_ONE
    store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint", coalesce="earliest")
    (job,) = store.user_jobs().jobs
    # A coalesce alone keeps the one-minute lateness as its window.
    assert job.catch_up == CatchUp(window=timedelta(minutes=1), coalesce=Coalesce.EARLIEST)
    store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    (job,) = store.user_jobs().jobs
    assert (job.catch_up, job.overlap) == (None, Overlap.SKIP)  # the spec's rules


@pytest.mark.parametrize(
    ("keys", "fields"),
    [
        ({"catchup_window_s": -30}, ["catchup_window_s"]),
        ({"catchup_window_s": 0}, ["catchup_window_s"]),
        ({"catchup_window_s": 7 * 86_400 + 1}, ["catchup_window_s"]),
        ({"catchup_window_s": "60"}, ["catchup_window_s"]),
        ({"coalesce": "newest"}, ["coalesce"]),
        ({"overlap": "allow_all"}, ["overlap"]),
        ({"catchup_window_s": -1, "coalesce": "x", "overlap": 3},
         ["catchup_window_s", "coalesce", "overlap"]),
    ],
    ids=["negative", "zero", "too-long", "text", "coalesce", "overlap", "all-three"],
)  # fmt: skip
def test_it_refuses_policies_it_cannot_use_naming_every_field_and_changes_nothing(
    store: Store, keys: dict[str, Any], fields: list[str]
) -> None:
    version = store.catalog_version()
    with pytest.raises(DefinitionError) as refused:
        store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint", **keys)
    assert [field for field, _ in refused.value.errors] == fields
    assert store.catalog_version() == version
    assert store.jobs() == []


def test_the_catalog_file_carries_them_and_an_older_file_still_imports(store: Store) -> None:
    store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint",
                     catchup_window_s=3600, coalesce="latest", overlap="cancel_other")  # fmt: skip
    document = store.export_catalog()
    assert document["jobs"][0]["overlap"] == "cancel_other"
    store.import_catalog(document, replace=True)
    (job,) = store.user_jobs().jobs
    assert (job.catch_up, job.overlap) == (
        CatchUp(window=timedelta(hours=1), coalesce=Coalesce.LATEST),
        Overlap.CANCEL_OTHER,
    )
    older = {
        "format": 1,
        "kind": "dgxmm-catalog",
        "queries": [],
        "jobs": [{"name": "old", "schedule": "0 4 * * *", "action": "checkpoint"}],
    }
    store.import_catalog(older, replace=True)
    (old,) = store.user_jobs().jobs
    assert (old.name, old.catch_up, old.overlap) == ("old", None, Overlap.SKIP)
    assert store.jobs()[0].served
