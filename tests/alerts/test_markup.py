"""What came from outside arrives inert in each chat's markup.

A deployment fails with a model server's answer as its ``last_error``, and that answer holds
Slack's mention and link syntax and Markdown's: it reaches Slack (and Mattermost, which take
the same body) escaped, and Teams as plain text runs, which Teams shows as typed.
"""

from __future__ import annotations

from typing import Any

from alerts.alertkit import Receiver

from dgxmm.alerts import Alerts
from dgxmm.clock import ManualClock
from dgxmm.fleet import DeploymentState, Fleet
from dgxmm.store import writing

HOSTILE = (
    "upstream said: <!channel> <!here|here> see <https://evil.example|the dgxmm console> "
    "or [the console](https://evil.example/t) @channel & more"
)
LIVE = ("<!channel>", "<!here", "<https://evil.example", "](https://", "@channel")


def _failed_deployment(alerts: Alerts, fleet: Fleet, receiver: Receiver, kind: str) -> Any:
    _, receiver.secret = alerts.channels.create(
        {"name": "ops", "url": receiver.url, "format": kind}, actor="user:alice"
    )
    alerts.rules.create(
        {"name": "watch", "condition": "deployment_failed", "channels": ["ops"]},
        actor="user:alice",
    )
    key = fleet.deployments.create(
        actor="user:alice", name="llama", model="m", backend="external",
        base_url="http://127.0.0.1:9", gpus=[0], memory_gib_awake=1.0, memory_gib_asleep=0.5,
    ).id  # fmt: skip
    with writing(fleet.store.engine) as connection:
        fleet.deployments.set_state(connection, key, DeploymentState.FAILED, error=HOSTILE)
    alerts.pulse(alerts.clock.now_us())
    alerts.step()
    [got] = receiver.requests()
    assert got.signed
    return got.body


def test_slack_gets_the_outside_words_escaped(
    alerts: Alerts, fleet: Fleet, clock: ManualClock
) -> None:
    with Receiver() as receiver:
        body = _failed_deployment(alerts, fleet, receiver, "slack")
    text = body["text"]
    for live in LIVE:
        assert live not in text
    # Slack shows the escapes as the characters: the reader sees what the server said.
    assert "&lt;!channel&gt;" in text
    assert "&lt;https://evil.example|the dgxmm console&gt;" in text
    assert "&amp; more" in text
    assert text.startswith("[dgxmm] FIRING: deployment llama failed: upstream said:")


def test_teams_gets_the_outside_words_as_plain_text_runs(
    alerts: Alerts, fleet: Fleet, clock: ManualClock
) -> None:
    with Receiver() as receiver:
        body = _failed_deployment(alerts, fleet, receiver, "teams")
    card = body["attachments"][0]["content"]
    assert card["type"] == "AdaptiveCard"
    # A TextBlock renders Markdown; a TextRun does not. No words of a message in a TextBlock.
    blocks = [element for element in card["body"] if element["type"] == "TextBlock"]
    assert all(HOSTILE not in block["text"] for block in blocks)
    runs = [run for element in card["body"] if element["type"] == "RichTextBlock"
            for run in element["inlines"]]  # fmt: skip
    assert all(run["type"] == "TextRun" for run in runs)
    assert any(HOSTILE in run["text"] for run in runs)  # verbatim, and shown as such


def test_the_generic_body_keeps_the_words_as_they_are(
    alerts: Alerts, fleet: Fleet, clock: ManualClock
) -> None:
    # JSON fields, no markup: the receiver's program decides how to show them.
    with Receiver() as receiver:
        body = _failed_deployment(alerts, fleet, receiver, "generic")
    assert body["title"] == f"deployment llama failed: {HOSTILE}"
