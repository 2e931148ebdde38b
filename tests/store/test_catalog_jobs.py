"""User job definitions: the spec's keys, checked; a refused one changes nothing."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store.storekit import make_items

from dgxmm.errors import DefinitionError, NotFound
from dgxmm.jobs import JobLimits
from dgxmm.store import Create, Execute, Store, Write


@pytest.fixture
def catalog(store: Store) -> Store:
    make_items(store)
    store.define_query(
        "add",
        {"label": "string", "n": "int", "ratio": "float", "flag": "bool", "at": "timestamp"},
        "INSERT INTO items (label, n) SELECT :label, :n WHERE :flag AND :ratio > 0 AND :at <> ''",
    )
    return store


ARGS = {"label": "a", "n": 1, "ratio": 0.5, "flag": True, "at": "2026-03-29T02:30:00+01:00"}
QUERY_JOB: dict[str, Any] = {
    "name": "adder",
    "schedule": "0 3 * * *",
    "action": "query",
    "query": "add",
}


def test_it_defines_a_query_job_with_its_effects(catalog: Store) -> None:
    job = catalog.define_job(**QUERY_JOB, args=ARGS, timeout_ms=30000, actor="alice")
    assert job.definition == {**QUERY_JOB, "args": ARGS, "timeout_ms": 30000}
    assert job.effects == (Execute(query="add"), Write(table="items"))
    assert (job.served, job.reason, job.defined_by) == (True, None, "alice")
    assert [(j.name, j.schedule, j.action) for j in catalog.jobs()] == [
        ("adder", "0 3 * * *", "query")
    ]
    assert catalog.user_jobs().jobs[0].limits == JobLimits(timeout=timedelta(seconds=30))


def test_it_defines_checkpoint_and_backup_jobs(catalog: Store) -> None:
    checkpoint = catalog.define_job(name="cp", schedule="*/10 * * * *", action="checkpoint")
    backup = catalog.define_job(name="bk", schedule="0 4 * * *", action="backup", path="backups")
    assert checkpoint.effects == ()
    assert backup.effects == (Create(directory=str(catalog.data_dir / "backups")),)


def test_it_replaces_a_job_of_the_same_name(catalog: Store) -> None:
    catalog.define_job(**QUERY_JOB, args=ARGS)
    catalog.define_job(name="adder", schedule="*/5 * * * *", action="checkpoint")
    assert [(j.name, j.action) for j in catalog.jobs()] == [("adder", "checkpoint")]


def test_it_switches_a_job_off_keeping_its_effects(catalog: Store) -> None:
    defined = catalog.define_job(**QUERY_JOB, args=ARGS)
    off = catalog.set_job_enabled("adder", False, actor="bob")
    assert (off.enabled, off.effects) == (False, defined.effects)
    assert off.definition == {**QUERY_JOB, "args": ARGS, "enabled": False}
    assert catalog.user_jobs().jobs[0].enabled is False
    version = catalog.catalog_version()
    catalog.set_job_enabled("adder", False)  # already off: no change, no new version
    assert catalog.catalog_version() == version


def test_it_drops_a_job(catalog: Store) -> None:
    catalog.define_job(**QUERY_JOB, args=ARGS)
    catalog.drop_job("adder")
    assert catalog.jobs() == []
    with pytest.raises(NotFound):
        catalog.drop_job("adder")


REFUSED: list[Any] = [
    pytest.param({**QUERY_JOB, "schedule": "61 * * * *"}, "schedule", id="schedule-range"),
    pytest.param({**QUERY_JOB, "schedule": "* * *"}, "schedule", id="schedule-fields"),
    pytest.param({**QUERY_JOB, "schedule": 5}, "schedule", id="schedule-not-text"),
    pytest.param(
        {k: v for k, v in QUERY_JOB.items() if k != "schedule"}, "schedule", id="no-schedule"
    ),
    pytest.param({**QUERY_JOB, "action": "sync"}, "action", id="unknown-action"),
    pytest.param({**QUERY_JOB, "action": None}, "action", id="no-action"),
    pytest.param({**QUERY_JOB, "query": "nothing"}, "query", id="no-such-query"),
    pytest.param({**QUERY_JOB, "args": {**ARGS, "extra": 1}}, "args", id="extra-arg"),
    pytest.param(
        {**QUERY_JOB, "args": {k: v for k, v in ARGS.items() if k != "n"}}, "args", id="missing-arg"
    ),
    pytest.param({**QUERY_JOB, "args": {**ARGS, "n": "1"}}, "args", id="int-as-text"),
    pytest.param({**QUERY_JOB, "args": {**ARGS, "n": True}}, "args", id="bool-as-int"),
    pytest.param({**QUERY_JOB, "args": {**ARGS, "flag": 1}}, "args", id="int-as-bool"),
    pytest.param(
        {**QUERY_JOB, "args": {**ARGS, "at": "2026-03-29T02:30"}}, "args", id="naive-time"
    ),
    pytest.param({**QUERY_JOB, "args": {**ARGS, "at": "yesterday"}}, "args", id="not-a-time"),
    pytest.param({**QUERY_JOB, "args": [1]}, "args", id="args-not-object"),
    pytest.param({**QUERY_JOB, "path": "/tmp/x"}, "path", id="path-on-query"),
    pytest.param({**QUERY_JOB, "args": ARGS, "timeout_ms": 0}, "timeout_ms", id="timeout-zero"),
    pytest.param(
        {**QUERY_JOB, "args": ARGS, "timeout_ms": -5}, "timeout_ms", id="timeout-negative"
    ),
    pytest.param(
        {**QUERY_JOB, "args": ARGS, "timeout_ms": 1.5}, "timeout_ms", id="timeout-fraction"
    ),
    pytest.param({**QUERY_JOB, "args": ARGS, "memory_limit": 0}, "memory_limit", id="memory-zero"),
    pytest.param({**QUERY_JOB, "args": ARGS, "run_on": "everywhere"}, "run_on", id="run-on"),
    pytest.param({**QUERY_JOB, "args": ARGS, "enabled": "yes"}, "enabled", id="enabled-text"),
    pytest.param({**QUERY_JOB, "args": ARGS, "priority": 5}, "priority", id="unknown-key"),
    pytest.param({**QUERY_JOB, "args": ARGS, "name": "no spaces"}, "name", id="bad-name"),
    pytest.param({**QUERY_JOB, "args": ARGS, "name": "stats_flush"}, "name", id="system-name"),
    pytest.param(
        {"name": "b", "schedule": "* * * * *", "action": "backup"}, "path", id="backup-no-path"
    ),
    pytest.param(
        {"name": "b", "schedule": "* * * * *", "action": "backup", "path": ""},
        "path",
        id="backup-empty-path",
    ),
    pytest.param(
        {"name": "c", "schedule": "* * * * *", "action": "checkpoint", "query": "add"},
        "query",
        id="query-on-checkpoint",
    ),
]


@pytest.mark.parametrize(("keys", "field"), REFUSED)
def test_it_refuses_a_definition_naming_the_field_and_changes_nothing(
    catalog: Store, keys: dict[str, Any], field: str
) -> None:
    catalog.define_job(name="kept", schedule="* * * * *", action="checkpoint")
    version, journal = catalog.catalog_version(), catalog.journal()
    with pytest.raises(DefinitionError) as refused:
        catalog.define_job(**keys)
    assert refused.value.field == field
    assert [j.name for j in catalog.jobs()] == ["kept"]
    assert (catalog.catalog_version(), catalog.journal()) == (version, journal)


def test_it_refuses_a_backup_path_that_is_a_file(catalog: Store, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(DefinitionError) as refused:
        catalog.define_job(
            name="b", schedule="* * * * *", action="backup", path=str(tmp_path / "file")
        )
    assert refused.value.field == "path"


values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=5),
    st.just("2026-01-01T00:00:00Z"),
)


@settings(
    max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)
@given(args=st.dictionaries(st.sampled_from([*ARGS, "zz"]), values, max_size=6))
def test_it_accepts_arguments_only_when_each_matches_its_type(
    catalog: Store, args: dict[str, Any]
) -> None:
    kinds: dict[str, type | tuple[type, ...]] = {
        "label": str,
        "n": int,
        "ratio": (int, float),
        "flag": bool,
        "at": str,
    }
    fits = set(args) == set(ARGS) and all(
        isinstance(args[k], kinds[k])
        and not (k in ("n", "ratio") and isinstance(args[k], bool))
        and not (k == "ratio" and args[k] != args[k])  # NaN
        and not (k == "ratio" and abs(args[k]) == float("inf"))
        and not (k == "at" and args[k] != ARGS["at"] and args[k] != "2026-01-01T00:00:00Z")
        for k in args
    )
    try:
        catalog.define_job(**QUERY_JOB, args=args)
    except DefinitionError as error:
        accepted, field = False, error.field
    else:
        accepted, field = True, "args"
    assert (accepted, field) == (fits, "args")
