"""Rights: the authorizer asked at definition, effects stored, enforced on every run."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from store.storekit import ctx, make_items, rows

from dgxmm.errors import Forbidden, NotAllowed
from dgxmm.store import Create, Execute, Request, Store, Write


class Recording:
    """An authorizer that records what it is asked and refuses what it is told to."""

    def __init__(self, refuse: set[Request] | None = None) -> None:
        self.asked: list[tuple[str | None, Request]] = []
        self.refuse = refuse or set()

    def allows(self, actor: str | None, request: Request) -> bool:
        self.asked.append((actor, request))
        return request not in self.refuse


def test_it_asks_for_execute_and_every_table_the_query_may_write(store: Store) -> None:
    make_items(store)
    store.define_query(
        "move", None, "INSERT INTO audit (note) SELECT label FROM items; DELETE FROM items"
    )
    authorizer = Recording()
    job = store.define_job(
        name="mover",
        schedule="* * * * *",
        action="query",
        query="move",
        actor="alice",
        authorizer=authorizer,
    )
    expected = (Execute(query="move"), Write(table="audit"), Write(table="items"))
    assert authorizer.asked == [("alice", request) for request in expected]
    assert job.effects == expected
    assert store.job("mover").to_json()["effects"] == [
        {"execute": "move"},
        {"write": "audit"},
        {"write": "items"},
    ]


def test_it_asks_to_create_the_backup_directory(store: Store) -> None:
    authorizer = Recording()
    store.define_job(
        name="b", schedule="0 1 * * *", action="backup", path="/srv/backups", authorizer=authorizer
    )
    assert authorizer.asked == [(None, Create(directory="/srv/backups"))]


def test_it_refuses_a_definition_whose_request_is_refused_and_stores_nothing(
    open_store: Callable[..., Store],
) -> None:
    store = open_store(authorizer=Recording(refuse={Write(table="items")}))
    make_items(store)
    store.define_query("add", None, "INSERT INTO items (label) VALUES ('x')")
    with pytest.raises(Forbidden, match=r"bob may not Write\(items\)"):
        store.define_job(
            name="adder", schedule="* * * * *", action="query", query="add", actor="bob"
        )
    assert store.jobs() == []


def test_it_refuses_runs_once_the_query_writes_more_until_the_job_is_defined_again(
    store: Store,
) -> None:
    make_items(store)
    store.define_query("add", None, "INSERT INTO items (label) VALUES ('x')")
    store.define_job(name="adder", schedule="* * * * *", action="query", query="add")
    store.run_job("adder", ctx("adder"))
    store.define_query(
        "add", None, "INSERT INTO items (label) VALUES ('x'); INSERT INTO audit (note) VALUES ('y')"
    )
    with pytest.raises(NotAllowed, match="now writes audit"):
        store.run_job("adder", ctx("adder"))
    assert rows(store, "SELECT count(*) FROM items") == [(1,)]
    assert rows(store, "SELECT count(*) FROM audit") == [(0,)]
    store.define_job(name="adder", schedule="* * * * *", action="query", query="add")
    store.run_job("adder", ctx("adder"))
    assert rows(store, "SELECT count(*) FROM audit") == [(1,)]


def test_it_asks_the_recheck_authorizer_before_every_run(
    open_store: Callable[..., Store],
) -> None:
    recheck = Recording()
    store = open_store(recheck=recheck)
    make_items(store)
    store.define_query("add", None, "INSERT INTO items (label) VALUES ('x')")
    store.define_job(name="adder", schedule="* * * * *", action="query", query="add", actor="ann")
    store.run_job("adder", ctx("adder"))
    store.run_job("adder", ctx("adder"))
    assert recheck.asked == 2 * [("ann", Execute(query="add")), ("ann", Write(table="items"))]
    recheck.refuse = {Write(table="items")}  # ann's right to write items was revoked
    with pytest.raises(NotAllowed, match=r"ann may no longer Write\(items\)"):
        store.run_job("adder", ctx("adder"))
    assert rows(store, "SELECT count(*) FROM items") == [(2,)]


def test_it_does_not_stop_a_job_when_rights_change_without_a_recheck(
    open_store: Callable[..., Store],
) -> None:
    authorizer = Recording()
    store = open_store(authorizer=authorizer)
    make_items(store)
    store.define_query("add", None, "INSERT INTO items (label) VALUES ('x')")
    store.define_job(name="adder", schedule="* * * * *", action="query", query="add", actor="ann")
    authorizer.refuse = {Write(table="items")}
    store.run_job("adder", ctx("adder"))
    assert rows(store, "SELECT count(*) FROM items") == [(1,)]
