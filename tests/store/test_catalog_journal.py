"""Catalog versions, the journal (who, when, what, before, after) and settings."""

from __future__ import annotations

import pytest
from support import at

from dgxmm.clock import ManualClock
from dgxmm.errors import InvalidInput
from dgxmm.store import Change, Store, Subject


def test_it_gives_every_catalog_change_a_new_version_and_a_journal_row(
    store: Store, clock: ManualClock
) -> None:
    store.define_query("q", None, "SELECT 1", actor="alice")
    clock.set(at("2026-03-02T11:00:00+00:00"))
    store.define_query("q", None, "SELECT 2", actor="bob")
    store.define_job(name="j", schedule="* * * * *", action="query", query="q", actor="bob")
    store.set_job_enabled("j", False, actor="carol")
    store.drop_job("j", actor="carol")
    store.drop_query("q", actor="alice")
    entries = store.journal()
    assert [(e.version, e.actor, e.subject, e.name, e.change) for e in entries] == [
        (1, "alice", Subject.QUERY, "q", Change.DEFINE),
        (2, "bob", Subject.QUERY, "q", Change.REPLACE),
        (3, "bob", Subject.JOB, "j", Change.DEFINE),
        (4, "carol", Subject.JOB, "j", Change.DISABLE),
        (5, "carol", Subject.JOB, "j", Change.DROP),
        (6, "alice", Subject.QUERY, "q", Change.DROP),
    ]
    assert store.catalog_version() == 6
    assert entries[0].at_us == at("2026-03-02T10:00:00+00:00")
    assert entries[1].at_us == at("2026-03-02T11:00:00+00:00")
    assert (entries[1].before["body"], entries[1].after["body"]) == ("SELECT 1", "SELECT 2")
    assert entries[3].before["definition"].get("enabled") is None
    assert entries[3].after["definition"]["enabled"] is False
    assert entries[3].after["effects"] == [{"execute": "q"}]
    assert (entries[5].before["body"], entries[5].after) == ("SELECT 2", None)
    assert [e.version for e in store.journal(after_version=4)] == [5, 6]


def test_it_keeps_settings_as_json_on_the_same_journal(store: Store) -> None:
    assert store.get_setting("schedules.paused_all", False) is False
    version = store.set_setting("schedules.paused_all", True, actor="admin")
    assert version is not None
    assert store.get_setting("schedules.paused_all") is True
    assert store.set_setting("schedules.paused_all", True, actor="admin") is None  # unchanged
    store.set_setting("limits", {"a": [1, 2], "b": None}, actor="admin")
    assert store.get_setting("limits") == {"a": [1, 2], "b": None}
    store.set_setting("schedules.paused_all", None, actor="admin")  # removes it
    assert store.get_setting("schedules.paused_all", "gone") == "gone"
    rows = [(e.version, e.subject, e.name, e.change, e.before, e.after) for e in store.journal()]
    assert rows == [
        (version, Subject.SETTING, "schedules.paused_all", Change.SET, None, True),
        (version + 1, Subject.SETTING, "limits", Change.SET, None, {"a": [1, 2], "b": None}),
        (version + 2, Subject.SETTING, "schedules.paused_all", Change.DROP, True, None),
    ]


def test_it_refuses_a_setting_key_that_is_not_a_key(store: Store) -> None:
    with pytest.raises(InvalidInput):
        store.set_setting("", 1)
