"""The console's fleet parts: a server log's tail and download, audit rows by name."""

from __future__ import annotations

from fastapi.testclient import TestClient
from fleet.deploy.deploykit import standin

from dgxmm.fleet import Fleet
from dgxmm.fleet.backends.process import LOG_NAME
from dgxmm.fleet.deployments.server_log import MAX_CHUNK


def write_log(fleet: Fleet, deployment_id: int, text: str) -> None:
    run_dir = fleet.backends.run_dir(deployment_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / LOG_NAME).write_text(text)


def test_it_tails_a_server_log_and_follows_it_from_an_offset(
    client: TestClient, fleet: Fleet
) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("chat"))
    lines = "".join(f"line {n}\n" for n in range(3000))
    write_log(fleet, created.id, lines)
    tail = client.get(f"/api/deployments/{created.id}/log", params={"limit": 100}).json()
    assert tail["size"] == len(lines)
    assert tail["end"] == len(lines)
    assert tail["text"].endswith("line 2999\n")
    assert tail["text"].startswith("line ")  # from a line's start, the cut one dropped
    assert len(tail["text"]) <= 100
    write_log(fleet, created.id, lines + "line 3000\n")
    more = client.get(f"/api/deployments/{created.id}/log", params={"offset": tail["end"]})
    assert more.json()["text"] == "line 3000\n"
    assert more.json()["rotated"] is False
    write_log(fleet, created.id, "fresh\n")  # rotated: shorter than the offset
    again = client.get(f"/api/deployments/{created.id}/log", params={"offset": tail["end"]})
    assert again.json() | {} == {**again.json(), "text": "fresh\n", "start": 0, "rotated": True}


def test_a_log_read_is_bounded_and_refuses_bad_input(client: TestClient, fleet: Fleet) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("chat"))
    write_log(fleet, created.id, "x" * (MAX_CHUNK + 10))
    whole = client.get(
        f"/api/deployments/{created.id}/log", params={"offset": 0, "limit": MAX_CHUNK}
    )
    assert len(whole.json()["text"]) == MAX_CHUNK
    answer = client.get(f"/api/deployments/{created.id}/log", params={"limit": MAX_CHUNK + 1})
    assert answer.status_code == 422
    assert answer.json()["field"] == "limit"
    assert client.get(f"/api/deployments/{created.id}/log", params={"offset": -1}).status_code == (
        422
    )


def test_it_downloads_the_log_and_keeps_it_from_viewers(
    client: TestClient, viewer: TestClient, fleet: Fleet
) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("chat"))
    write_log(fleet, created.id, "hello\n")
    download = client.get(f"/api/deployments/{created.id}/log/download")
    assert download.text == "hello\n"
    assert 'filename="chat.log"' in download.headers["content-disposition"]
    assert viewer.get(f"/api/deployments/{created.id}/log").status_code == 403
    page = client.get(f"/deployments/{created.id}").text
    assert f'data-log="/api/deployments/{created.id}/log"' in page
    assert "data-log=" not in viewer.get(f"/deployments/{created.id}").text


def test_an_external_deployment_has_no_log(client: TestClient, fleet: Fleet) -> None:
    created = fleet.deployments.create(
        actor="user:a", name="ext", model="m", backend="external", base_url="http://127.0.0.1:9"
    )
    answer = client.get(f"/api/deployments/{created.id}/log")
    assert answer.status_code == 404
    assert "ext" in answer.json()["message"]


def test_the_audit_names_and_links_deployments(client: TestClient, fleet: Fleet) -> None:
    kept = fleet.deployments.create(actor="user:a", **standin("chat"))
    gone = fleet.deployments.create(actor="user:a", **standin("code"))
    fleet.remove(gone.id, actor="user:a")
    page = client.get("/audit").text
    assert f'<a href="/deployments/{kept.id}">chat</a>' in page
    assert "code (removed)" in page
    assert f"deployment {kept.id}</td>" not in page


def test_home_opens_deployments_the_navs_first_page(client: TestClient) -> None:
    answer = client.get("/", follow_redirects=False)
    assert (answer.status_code, answer.headers["location"]) == (303, "/deployments")
