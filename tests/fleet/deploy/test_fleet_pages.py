"""The fleet's pages as HTML: what they show, the extras hook, who sees the audit."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest
from fastapi.testclient import TestClient
from fleet.deploy.deploykit import standin

from dgxmm.clock import ManualClock
from dgxmm.fleet import AuditAction, AuditSubject, Fleet, InsightKind, Severity
from dgxmm.server import (
    FLEET_ROUTES,
    DeploymentSection,
    Host,
    Routes,
    Services,
    Tokens,
    create_app,
)
from dgxmm.server.access.tokens import Role
from dgxmm.server.pages.render import templates


def test_the_deployments_page_shows_states_memory_and_actions(
    client: TestClient, fleet: Fleet
) -> None:
    running = fleet.deployments.create(actor="user:a", **standin("chat", awake=30))
    fleet.deployments.create(actor="user:a", **standin("code", awake=20, gpus=(1,)))
    fleet.deployer.start(running.id, actor="user:a")
    page = client.get("/deployments").text
    assert 'data-deployment="chat" data-id="1" data-state="running"' in page
    assert 'data-deployment="code" data-id="2" data-state="stopped"' in page
    assert 'data-deploy-action="sleep"' in page
    assert 'data-deploy-action="start"' in page
    assert 'data-gpu="0" data-deployment="chat"' not in page  # a bar per GPU, not per row
    assert '<g class="held awake" data-deployment="chat" data-gib="30">' in page
    assert "30 of 80 GiB held" in page
    assert 'id="plan-preview"' in page


def test_a_viewer_sees_no_action_buttons_and_no_audit(viewer: TestClient, fleet: Fleet) -> None:
    fleet.deployments.create(actor="user:a", **standin("chat"))
    assert "data-deploy-action" not in viewer.get("/deployments").text
    audit = viewer.get("/audit").text
    assert 'id="audit-forbidden"' in audit
    assert 'href="/audit"' not in audit  # nor the link to it


def test_a_deployments_page_shows_facts_charts_and_events(
    client: TestClient, fleet: Fleet, clock: ManualClock
) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("chat", "--latency", "20"))
    fleet.deployer.start(created.id, actor="user:a")
    fleet.metrics.rollup_all()
    with httpx.Client(base_url=created.url, trust_env=False, timeout=60) as model:
        for _ in range(4):
            model.post(
                "/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]}
            )
    clock.advance(60_000_000)
    fleet.metrics.rollup_all()
    page = client.get(f"/deployments/{created.id}").text
    assert "<h1>chat" in page
    assert "4 requests in all; one bar per 10 minutes" in page  # the total, not a rate
    assert page.count('data-measure="requests"') == 1  # the range picked: a day by default
    week = client.get(f"/deployments/{created.id}", params={"range": "week"}).text
    assert "4 requests in all; one bar per hour" in week
    wrong = client.get(f"/deployments/{created.id}", params={"range": "year"})
    assert wrong.status_code == 400
    assert "'year' is not one of hour, day, week, month" in wrong.text
    assert '<g class="bar"' in page
    assert 'data-value="4"' in page
    assert "server.log" in page
    assert page.count("<td>user:a</td>") == 2  # create, start
    assert client.get("/deployments/99").status_code == 404


@pytest.fixture
def extra_template(tmp_path: Path) -> Iterator[str]:
    """A template of another part of dgxmm, in a folder the page templates are searched in."""
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "test_extra.html").write_text(
        '<p id="from-extra">{{ deployment.name }}: {{ extra.note }}</p>'
    )
    searchpath = templates.env.loader.searchpath  # type: ignore[union-attr]
    searchpath.append(str(folder))
    yield "test_extra.html"
    searchpath.remove(str(folder))


def test_other_parts_add_sections_to_a_deployments_page(
    host: Host, tokens: Tokens, fleet: Fleet, extra_template: str
) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("chat"))
    section = DeploymentSection(
        name="test",
        template=extra_template,
        context=lambda services, deployment, zone: {"note": f"priority {deployment.priority}"},
    )
    services = Services(host=host, tokens=tokens, fleet=fleet)
    with_section = create_app(services, [FLEET_ROUTES, Routes(name="test", sections=(section,))])
    without = create_app(services, [FLEET_ROUTES])
    token = tokens.create(Role.VIEWER, "victor")
    with TestClient(with_section) as one, TestClient(without) as other:
        one.headers["Authorization"] = other.headers["Authorization"] = f"Bearer {token}"
        assert (
            '<p id="from-extra">chat: priority 50</p>' in one.get(f"/deployments/{created.id}").text
        )
        # The section belongs to the app it was given to, not to the process.
        assert 'id="from-extra"' not in other.get(f"/deployments/{created.id}").text


def test_an_app_refuses_routes_whose_service_it_lacks(host: Host, tokens: Tokens) -> None:
    with pytest.raises(ValueError, match=r"the fleet routes need services\.fleet"):
        create_app(Services(host=host, tokens=tokens), [FLEET_ROUTES])


def test_the_insights_and_audit_pages_list_what_happened(client: TestClient, fleet: Fleet) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("chat"))
    fleet.insights.raise_insight(
        InsightKind.METRICS_UNREADABLE,
        deployment_id=created.id,
        severity=Severity.WARNING,
        message="look here",
    )
    insights = client.get("/insights").text
    assert "look here" in insights
    assert "data-dismiss=" in insights
    audit = client.get("/audit").text
    assert 'data-action="deployment.create"' in audit
    assert "user:a" in audit
    assert 'data-action="deployment.create"' not in client.get("/audit?actor=user:z").text


def test_the_audit_page_pages_by_cursor_each_row_once(
    client: TestClient, fleet: Fleet, clock: ManualClock
) -> None:
    for number in range(130):
        fleet.audit.record(
            actor="user:a", action=AuditAction.DEPLOYMENT_START,
            subject=AuditSubject.DEPLOYMENT, subject_id=number,
        )  # fmt: skip
        clock.advance(1_000_000)
    first = client.get("/audit").text
    assert 'data-live="audit"' in first  # the newest page follows new rows
    assert 'id="newest-page"' not in first
    older = re.search(r'id="audit-pager" data-live>\s*<a href="([^"]+)" id="older-page"', first)
    assert older is not None
    second = client.get(html.unescape(older.group(1))).text
    assert 'data-live="audit"' not in second  # an older page stays as it was read
    assert 'id="newest-page"' in second
    assert 'id="older-page"' not in second
    shown = [int(n) for page in (first, second) for n in re.findall(r'data-audit="(\d+)"', page)]
    assert len(shown) == len(set(shown)) == 130
    assert shown == sorted(shown, reverse=True)


def test_the_audit_page_filters_by_time_and_names_every_wrong_field(
    client: TestClient, fleet: Fleet, clock: ManualClock
) -> None:
    fleet.audit.record(
        actor="user:a", action=AuditAction.DEPLOYMENT_START,
        subject=AuditSubject.DEPLOYMENT, subject_id=1,
    )  # fmt: skip
    clock.advance(3_600_000_000)
    fleet.audit.record(
        actor="user:b", action=AuditAction.DEPLOYMENT_STOP,
        subject=AuditSubject.DEPLOYMENT, subject_id=1,
    )  # fmt: skip
    recent = datetime.fromtimestamp(clock.now_us() / 1e6 - 1800, ZoneInfo("Europe/Berlin"))
    wall = recent.strftime("%Y-%m-%dT%H:%M:%S")  # a wall time in the server's zone
    since = client.get("/audit", params={"since": wall}).text
    assert re.findall(r'data-action="([^"]+)"', since) == ["deployment.stop"]
    until = client.get("/audit", params={"until": wall}).text
    assert re.findall(r'data-action="([^"]+)"', until) == ["deployment.start"]
    wrong = client.get("/audit", params={"since": "yesterday", "subject": "planet"})
    assert wrong.status_code == 400
    assert 'data-error-for="since">From: ' in wrong.text
    assert 'data-error-for="subject">Subject: ' in wrong.text
    assert 'data-live="audit"' not in wrong.text
