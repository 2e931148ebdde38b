"""The alerts API: admins only, secrets shown once, every wrong field in one 400."""

from __future__ import annotations

import logging

import pytest
from alerts.alertkit import Receiver
from fastapi.testclient import TestClient

from dgxmm.alerts import Alerts


def test_it_shows_a_channels_secret_once(full_admin: TestClient) -> None:
    made = full_admin.post(
        "/api/alerts/channels",
        json={
            "name": "ops",
            "url": "https://hooks.example.com/services/T0/B0/XyZ",
            "format": "slack",
        },
    )
    assert made.status_code == 200, made.text
    secret = made.json()["secret"]
    assert secret.startswith("whsec_")
    listed = full_admin.get("/api/alerts/channels")
    one = full_admin.get(f"/api/alerts/channels/{made.json()['channel']['id']}")
    for answer in (listed, one):
        assert answer.status_code == 200
        assert secret not in answer.text
        assert "XyZ" not in answer.text  # a Slack URL is a credential: only its host shows
    assert listed.json()["channels"][0]["url"] == "https://hooks.example.com/…"


def test_viewers_see_no_channel(full_viewer: TestClient) -> None:
    assert full_viewer.get("/api/alerts/channels").status_code == 403
    assert full_viewer.get("/api/alerts/deliveries").status_code == 403
    refused = full_viewer.post("/api/alerts/channels", json={"name": "x", "url": "https://x"})
    assert refused.status_code == 403
    page = full_viewer.get("/alerts", headers={"Accept": "text/html"})
    assert 'id="alerts-forbidden"' in page.text


def test_it_names_every_wrong_field_of_a_channel(full_admin: TestClient) -> None:
    answer = full_admin.post(
        "/api/alerts/channels", json={"name": 7, "url": "javascript:alert(1)", "format": "fax"}
    )
    assert answer.status_code == 400
    assert [e["field"] for e in answer.json()["errors"]] == ["name", "url", "format"]
    assert full_admin.get("/api/alerts/channels").json()["channels"] == []


def test_it_names_every_wrong_field_of_a_rule(full_admin: TestClient) -> None:
    answer = full_admin.post(
        "/api/alerts/rules",
        json={
            "name": "r",
            "condition": "job_failed",
            "threshold": 3,
            "quiet_minutes": -1,
            "channels": ["nobody"],
            "enabled": "yes",
        },
    )
    assert answer.status_code == 400
    fields = [e["field"] for e in answer.json()["errors"]]
    assert fields == ["threshold", "quiet_minutes", "enabled", "channels"]
    assert full_admin.get("/api/alerts/rules").json()["rules"] == []


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": None, "url": None},
        {"name": "x" * 5000, "url": "http://" + "a" * 5000},
        {"name": "x", "url": "http://[::1"},
        {"name": "x", "url": "http://host:99999999/"},
        {"name": ["x"], "url": {"a": 1}, "format": 1.5},
        {"name": "x", "url": "http://h/\u0000"},
    ],
    ids=["empty", "nulls", "huge", "bad-ipv6", "bad-port", "wrong-types", "nul"],
)
def test_no_channel_body_gives_a_500(full_admin: TestClient, body: dict[str, object]) -> None:
    assert full_admin.post("/api/alerts/channels", json=body).status_code in (200, 400)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": "r", "condition": "proxy_refused", "channels": [2**70], "threshold": 2**70},
        {"name": "r", "condition": None, "channels": "ops", "window_minutes": "5"},
        {"name": "r", "condition": "job_late", "channels": [True], "window_minutes": 0},
    ],
    ids=["empty", "huge", "wrong-types", "booleans"],
)
def test_no_rule_body_gives_a_500(full_admin: TestClient, body: dict[str, object]) -> None:
    assert full_admin.post("/api/alerts/rules", json=body).status_code == 400


def test_a_test_send_is_queued_sent_and_logged(
    full_admin: TestClient, alerts: Alerts, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with Receiver() as receiver:
        made = full_admin.post("/api/alerts/channels", json={"name": "ops", "url": receiver.url})
        receiver.secret = made.json()["secret"]
        channel = made.json()["channel"]["id"]
        queued = full_admin.post(f"/api/alerts/channels/{channel}/test")
        assert queued.status_code == 200
        alerts.step()
    [got] = receiver.requests()
    assert got.signed
    delivery = full_admin.get(f"/api/alerts/deliveries/{queued.json()['delivery']}").json()
    assert delivery["state"] == "sent"
    assert [(a["outcome"], a["status_code"]) for a in delivery["log"]] == [("sent", 200)]
    log = full_admin.get("/api/alerts/deliveries").json()["deliveries"]
    assert [d["channel"] for d in log] == ["ops"]
    page = full_admin.get("/alerts", headers={"Accept": "text/html"})
    assert page.status_code == 200
    assert 'data-state="sent"' in page.text
    # Neither the secret nor the URL's path is in a page, an answer or a log line.
    for text in (page.text, str(log), caplog.text):
        assert receiver.secret not in text
        assert "s3cr3t-path" not in text
    audit = full_admin.get("/api/audit", params={"subject": "alert_channel"}).json()["audit"]
    assert [a["action"] for a in audit] == ["alert_channel.test", "alert_channel.create"]


def test_the_alerts_topic_moves_when_a_channel_is_made(full_admin: TestClient) -> None:
    before = full_admin.get("/api/changes", params={"topics": "alerts"}).json()["version"]
    full_admin.post("/api/alerts/channels", json={"name": "ops", "url": "https://h.example/x"})
    after = full_admin.get("/api/changes", params={"topics": "alerts", "since": before})
    assert after.json()["changed"] is True


def test_a_rule_is_switched_off_and_on(full_admin: TestClient) -> None:
    full_admin.post("/api/alerts/channels", json={"name": "ops", "url": "https://h.example/x"})
    rule = full_admin.post(
        "/api/alerts/rules", json={"name": "r", "condition": "job_failed", "channels": ["ops"]}
    ).json()
    off = full_admin.post(f"/api/alerts/rules/{rule['id']}/enabled", json={"enabled": False})
    assert (off.status_code, off.json()["enabled"]) == (200, False)
    wrong = full_admin.post(f"/api/alerts/rules/{rule['id']}/enabled", json={"enabled": "on"})
    assert (wrong.status_code, wrong.json()["field"]) == (400, "enabled")
    extra = full_admin.post(f"/api/alerts/rules/{rule['id']}/enabled", json={"on": True})
    assert (extra.status_code, extra.json()["field"]) == (400, "on")
    assert (
        full_admin.post("/api/alerts/rules/999/enabled", json={"enabled": True}).status_code == 404
    )
    assert full_admin.get("/api/alerts/rules").json()["rules"][0]["enabled"] is False


def test_a_channel_on_a_metadata_address_is_refused_naming_the_url(
    full_admin: TestClient,
) -> None:
    refused = full_admin.post(
        "/api/alerts/channels", json={"name": "x", "url": "http://[::ffff:169.254.169.254]/"}
    )
    assert refused.status_code == 400
    assert refused.json()["field"] == "url"
    assert full_admin.get("/api/alerts/channels").json()["channels"] == []


def test_a_key_not_kept_in_a_file_is_not_rotated(full_admin: TestClient) -> None:
    # The tests' app is given its key as bytes: nothing on disk to rotate.
    refused = full_admin.post("/api/alerts/key/rotate")
    assert refused.status_code == 409
    assert "not kept in a file" in refused.text


def test_viewers_cannot_rotate_the_key(full_viewer: TestClient) -> None:
    assert full_viewer.post("/api/alerts/key/rotate").status_code == 403
