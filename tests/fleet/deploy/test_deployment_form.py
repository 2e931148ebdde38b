"""The deployment form's page: built from the API's fields, filled in for an edit."""

from __future__ import annotations

import html

from fastapi.testclient import TestClient
from fleet.deploy.deploykit import standin

from dgxmm.fleet import Fleet
from dgxmm.server.api.deployments import CreateDeployment


def test_the_new_form_has_a_field_for_every_field_the_api_takes(client: TestClient) -> None:
    page = client.get("/deployments/new").text
    for name in CreateDeployment.model_fields:
        assert f'data-field="{name}"' in page, name
        assert f'data-error-for="{name}"' in page, name
    assert 'data-field="command" data-kind="lines" data-backends="process ray"' in page
    assert 'data-field="aliases" data-kind="lines">' in page  # for every backend
    assert 'data-field="base_url" data-kind="text" data-backends="external"' in page
    assert '<option value="external"' in page
    assert 'name="gpus" value="0"' in page  # one box per GPU of the inventory
    assert 'name="sleep_timeout_s" id="f-sleep_timeout_s" inputmode="decimal" value="300"' in page


def test_the_edit_form_shows_the_deployments_values(client: TestClient, fleet: Fleet) -> None:
    created = fleet.deployments.create(
        actor="user:a", **standin("chat", awake=30), aliases=["fast", "small"]
    )
    page = client.get(f"/deployments/{created.id}/edit").text
    assert 'value="chat"' in page
    assert 'id="f-aliases" rows="4" spellcheck="false">fast\nsmall</textarea>' in page
    assert 'name="memory_gib_awake" id="f-memory_gib_awake" inputmode="decimal" value="30"' in page
    assert "{port}" in html.unescape(page)  # the command, one argument a line
    assert client.get("/deployments/999/edit", headers={"Accept": "text/html"}).status_code == 404
