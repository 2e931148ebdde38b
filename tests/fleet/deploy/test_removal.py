"""Removing a deployment: its process stopped, an audit row first, the hooks, then the rows."""

from __future__ import annotations

from typing import Any

import pytest
from fleet.deploy.deploykit import standin
from fleet.fleetkit import pid_exists
from sqlalchemy import Connection, func, select

from dgxmm.decider.tables import deployment_schedules, schedule_proposals, traffic_profiles
from dgxmm.errors import NotFound
from dgxmm.fleet import AuditAction, Deployment, Fleet, InsightKind, Severity
from dgxmm.fleet.backends.pidfile import read_pid_file
from dgxmm.fleet.deployments.tables import audit_log, deployment_events, insights, metric_rollups
from dgxmm.store import reading, writing


def count(fleet: Fleet, table: Any, deployment_id: int) -> int:
    with reading(fleet.store.engine) as connection:
        return int(
            connection.execute(
                select(func.count())
                .select_from(table)
                .where(table.c.deployment_id == deployment_id)
            ).scalar_one()
        )


def test_it_stops_audits_runs_its_hooks_and_removes_every_row(fleet: Fleet) -> None:
    created = fleet.deployments.create(actor="user:alice", **standin("llama"))
    kept = fleet.deployments.create(actor="user:alice", **standin("kept", gpus=(1,)))
    fleet.deployer.start(created.id, actor="user:alice")
    record = read_pid_file(fleet.backends.run_dir(created.id) / "server.pid")
    assert record is not None
    fleet.metrics.rollup_all()
    fleet.insights.raise_insight(
        InsightKind.METRICS_UNREADABLE,
        deployment_id=created.id,
        severity=Severity.INFO,
        message="about llama",
    )
    fleet.insights.raise_insight(
        InsightKind.METRICS_UNREADABLE,
        deployment_id=kept.id,
        severity=Severity.INFO,
        message="kept",
    )
    now = fleet.clock.now_us()
    with writing(fleet.store.engine) as connection:  # as the schedule runner writes them
        connection.execute(
            deployment_schedules.insert().values(
                deployment_id=created.id, action="sleep", days=127, at_time="22:00",
                time_zone="UTC", enabled=True, creator="user:alice", created_at=now,
                updated_at=now,
            )
        )  # fmt: skip
        connection.execute(
            traffic_profiles.insert().values(
                deployment_id=created.id, hour_of_week=3, rpm_p50=1.0, rpm_p95=2.0,
                active_share=0.5, observed_minutes=60, observed_weeks=1, idle_weeks=0,
                built_at=now,
            )
        )  # fmt: skip
        connection.execute(
            schedule_proposals.insert().values(
                deployment_id=created.id, sleep_days=127, sleep_time="22:00", wake_days=127,
                wake_time="07:00", time_zone="UTC", source="rules", confidence=1.0,
                evidence="{}", features="{}", status="open", created_at=now,
            )
        )  # fmt: skip
    seen: list[tuple[str, int, int, str]] = []

    def hook(connection: Connection, deployment: Deployment, actor: str) -> None:
        audit = connection.execute(
            select(audit_log.c.action).order_by(audit_log.c.id.desc()).limit(1)
        ).scalar_one()
        schedules = connection.execute(
            select(func.count()).select_from(deployment_schedules)
        ).scalar_one()
        left = connection.execute(
            select(func.count())
            .select_from(insights)
            .where(insights.c.deployment_id == deployment.id)
        ).scalar_one()
        seen.append((audit, int(schedules), int(left), actor))

    fleet.add_removal_hook(hook)
    fleet.remove(created.id, actor="user:alice")

    # The audit row came first, the fleet's own hook had deleted the insights, the
    # schedules were still there for the runner's hook to audit.
    assert seen == [("deployment.remove", 1, 0, "user:alice")]
    assert not pid_exists(record.pid)
    assert not fleet.backends.run_dir(created.id).exists()
    with pytest.raises(NotFound):
        fleet.deployments.get(created.id)
    for table in (
        deployment_events,
        metric_rollups,
        insights,
        deployment_schedules,
        traffic_profiles,
        schedule_proposals,
    ):
        assert count(fleet, table, created.id) == 0, table.name
    assert [i.message for i in fleet.insights.list()] == ["kept"]
    removal = fleet.audit.list(action=AuditAction.DEPLOYMENT_REMOVE)[0]
    assert (removal.actor, removal.subject_id) == ("user:alice", str(created.id))
    assert removal.detail["before"]["name"] == "llama"
    # Its process was stopped as an audited stop by the same actor.
    assert fleet.audit.list(action=AuditAction.DEPLOYMENT_STOP)[0].actor == "user:alice"


def test_a_hook_that_fails_removes_nothing(fleet: Fleet) -> None:
    created = fleet.deployments.create(actor="user:alice", **standin("llama"))

    def refuse(connection: Connection, deployment: Deployment, actor: str) -> None:
        raise RuntimeError("not today")

    fleet.add_removal_hook(refuse)
    with pytest.raises(RuntimeError, match="not today"):
        fleet.remove(created.id, actor="user:alice")
    assert fleet.deployments.get(created.id).name == "llama"
    assert fleet.audit.list(action=AuditAction.DEPLOYMENT_REMOVE) == []
