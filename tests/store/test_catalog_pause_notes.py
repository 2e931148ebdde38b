"""Pausing a user job with a note: kept in its definition, journaled, dropped when it is on."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from dgxmm.errors import DefinitionError
from dgxmm.store import Store


def test_it_switches_a_job_off_with_a_note_and_on_without_it(store: Store) -> None:
    store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    off = store.set_job_enabled("cp", False, note="waiting for the new disk", actor="alice")
    assert (off.enabled, off.pause_note) == (False, "waiting for the new disk")
    assert off.definition["pause_note"] == "waiting for the new disk"
    assert store.user_jobs().jobs[0].pause_note == "waiting for the new disk"
    again = store.set_job_enabled("cp", False, note="disk late")  # off already: a new note
    assert again.pause_note == "disk late"
    on = store.set_job_enabled("cp", True)
    assert (on.enabled, on.pause_note) == (True, None)
    assert "pause_note" not in on.definition
    changes = [(e.change.value, e.actor) for e in store.journal() if e.name == "cp"]
    assert changes == [("define", None), ("disable", "alice"), ("disable", None), ("enable", None)]


def test_it_refuses_a_note_with_a_job_switched_on_and_changes_nothing(store: Store) -> None:
    store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    version = store.catalog_version()
    with pytest.raises(DefinitionError) as refused:
        store.set_job_enabled("cp", True, note="why")
    assert refused.value.field == "note"
    with pytest.raises(DefinitionError) as refused:
        store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint", pause_note="x")
    assert refused.value.field == "pause_note"
    assert store.catalog_version() == version
    assert store.job("cp").definition == {
        "name": "cp",
        "schedule": "0 3 * * *",
        "action": "checkpoint",
    }


def test_a_job_defined_off_with_a_note_keeps_it_through_the_catalog_file(
    store: Store, tmp_path: Path
) -> None:
    store.define_job(
        name="cp", schedule="0 3 * * *", action="checkpoint", enabled=False, pause_note="later"
    )
    other = Store.open(tmp_path / "other.db")
    try:
        other.import_catalog(store.export_catalog())
        assert other.job("cp").pause_note == "later"
    finally:
        other.close()


def test_a_system_jobs_pause_note_set_on_one_instance_is_read_on_the_other(
    open_store: Callable[..., Store], tmp_path: Path
) -> None:
    holder, standby = open_store(), open_store(data_dir=tmp_path / "elsewhere")
    ticking, asked = holder.scheduler(), standby.scheduler()
    asked.set_enabled("stats_flush", False, note="flushing by hand this week")
    holder.sync(ticking)
    job = ticking.get("stats_flush")
    assert (job.enabled, job.pause_note) == (False, "flushing by hand this week")
    asked.set_enabled("stats_flush", True)
    holder.sync(ticking)
    assert (ticking.get("stats_flush").enabled, ticking.get("stats_flush").pause_note) == (
        True,
        None,
    )
