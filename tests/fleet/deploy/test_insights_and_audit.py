"""Insights raised once per key while open, dismissed with an audit row; the audit list."""

from __future__ import annotations

import pytest

from dgxmm.errors import InvalidInput, NotFound
from dgxmm.fleet import (
    AuditAction,
    AuditSubject,
    Fleet,
    Gpu,
    GpuInventory,
    InsightKind,
    InventorySource,
    Severity,
)
from dgxmm.fleet.placement.config import configured_gpus, discover_inventory, write_gpus
from dgxmm.fleet.placement.inventory import NvmlReading
from dgxmm.store import Store


def test_an_insight_with_a_key_is_raised_once_while_it_is_open(fleet: Fleet) -> None:
    first = fleet.insights.raise_insight(
        InsightKind.INVENTORY,
        deployment_id=None,
        severity=Severity.WARNING,
        message="disk is filling",
        key="disk:1",
    )
    assert first is not None
    assert first.severity is Severity.WARNING
    again = fleet.insights.raise_insight(
        InsightKind.INVENTORY,
        deployment_id=None,
        severity=Severity.WARNING,
        message="disk is filling",
        key="disk:1",
    )
    assert again is None
    assert [i.id for i in fleet.insights.list()] == [first.id]

    dismissed = fleet.insights.dismiss(first.id, "user:alice")
    assert (dismissed.is_open, dismissed.dismissed_by) == (False, "user:alice")
    assert fleet.insights.list() == []
    assert [i.id for i in fleet.insights.list(include_dismissed=True)] == [first.id]
    audit = fleet.audit.list(action=AuditAction.INSIGHT_DISMISS)[0]
    assert (audit.actor, audit.subject, audit.subject_id) == (
        "user:alice",
        "insight",
        str(first.id),
    )
    # Dismissing again changes nothing; once dismissed, the key may be raised anew.
    assert fleet.insights.dismiss(first.id, "user:bob").dismissed_by == "user:alice"
    assert fleet.insights.raise_insight(
        InsightKind.INVENTORY,
        deployment_id=None,
        severity=Severity.CRITICAL,
        message="full",
        key="disk:1",
    )


def test_it_refuses_what_an_insight_cannot_be(fleet: Fleet) -> None:
    with pytest.raises(InvalidInput) as refused:
        fleet.insights.raise_insight(
            InsightKind.INVENTORY, deployment_id=None, severity=Severity.INFO, message=""
        )
    assert refused.value.field == "message"
    with pytest.raises(NotFound):
        fleet.insights.raise_insight(
            InsightKind.DEMO, deployment_id=42, severity=Severity.INFO, message="m"
        )
    with pytest.raises(NotFound):
        fleet.insights.dismiss(42, "user:alice")


def test_the_audit_list_is_newest_first_and_filters(fleet: Fleet) -> None:
    for n in range(5):
        fleet.audit.record(
            actor=f"user:{'alice' if n % 2 else 'bob'}",
            action=AuditAction.DEPLOYMENT_UPDATE,
            subject=AuditSubject.DEPLOYMENT,
            subject_id=n,
            detail={"n": n},
        )
    assert [a.detail["n"] for a in fleet.audit.list(limit=3)] == [4, 3, 2]
    newest = fleet.audit.list()[0]
    assert [a.detail["n"] for a in fleet.audit.list(before_id=newest.id, limit=2)] == [3, 2]
    assert [a.subject_id for a in fleet.audit.list(actor="user:alice")] == ["3", "1"]


def test_an_empty_inventory_raises_an_insight(store: Store) -> None:
    empty = GpuInventory(gpus=(), source=InventorySource.CONFIGURATION, note="NVML cannot start")
    fleet = Fleet(store, inventory=empty)
    fleet2 = Fleet(store, inventory=empty)  # a restart does not raise it twice
    [insight] = fleet2.insights.list()
    assert (insight.kind, insight.key) == ("inventory", "inventory:empty")
    assert "NVML cannot start" in insight.message
    fleet.close()
    fleet2.close()


def test_the_configured_gpus_come_from_config_json(store: Store) -> None:
    data_dir = store.data_dir
    assert configured_gpus(data_dir) == ()
    write_gpus(data_dir, [Gpu(index=0, name="L4", memory_gib=24.0)])
    inventory = discover_inventory(data_dir, nvml=lambda: NvmlReading(error="no driver"))
    assert [(g.index, g.name, g.memory_gib) for g in inventory.gpus] == [(0, "L4", 24.0)]
    assert inventory.note == "no driver: using the GPUs in the configuration"
    (data_dir / "config.json").write_text('{"gpus": [{"index": 0, "memory_gib": "lots"}]}')
    with pytest.raises(InvalidInput) as refused:
        configured_gpus(data_dir)
    assert refused.value.field == "config.json: gpus[0].memory_gib"
