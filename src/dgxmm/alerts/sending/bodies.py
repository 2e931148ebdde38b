"""What a webhook is sent: the body of a channel's format, and its signature.

A message's words quote what came from outside (a model server's answer in ``last_error``,
a pause's reason, an insight's text, a job's error), so each chat format carries them inert:
Slack's text is escaped as Slack asks (``&``, ``<``, ``>``: no ``<!channel>``, no disguised
``<url|link>``), and the @-mentions and Markdown links that Mattermost and Rocket.Chat (which
take the same body) would make live are broken with a zero-width space; Teams gets plain
``TextRun``s, which Adaptive Cards never read as Markdown (a ``TextBlock`` would). The
generic body is JSON fields with no markup: the receiver's program decides how to show them.

Every request carries ``X-Dgxmm-Timestamp`` (seconds since the epoch) and
``X-Dgxmm-Signature: sha256=<hex>``, the HMAC-SHA256 under the channel's secret of
``<timestamp>.<body>``: a receiver recomputes it over the raw body it got, compares in
constant time, and refuses a timestamp too far from its clock (a replay).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import orjson

from dgxmm.alerts.channels import BodyFormat
from dgxmm.alerts.messages import Message, MessageKind

__all__ = ["SIGNATURE_HEADER", "TIMESTAMP_HEADER", "render", "sign", "signature", "slack_text"]

SIGNATURE_HEADER = "X-Dgxmm-Signature"
TIMESTAMP_HEADER = "X-Dgxmm-Timestamp"

_MARK = {
    MessageKind.FIRING: "[dgxmm] FIRING",
    MessageKind.SUMMARY: "[dgxmm] AGAIN",
    MessageKind.RESOLVED: "[dgxmm] RESOLVED",
    MessageKind.TEST: "[dgxmm] TEST",
}


def render(message: Message, body_format: BodyFormat) -> bytes:
    """Return the JSON body of ``message`` in ``body_format``."""
    heading = f"{_MARK[message.kind]}: {message.title}"
    body: dict[str, Any]
    if body_format is BodyFormat.SLACK:
        body = {"text": slack_text(f"{heading}\n{message.text}")}
    elif body_format is BodyFormat.TEAMS:
        body = {
            "type": "message",
            "attachments": [
                {
                    "contentType": "application/vnd.microsoft.card.adaptive",
                    "content": {
                        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                        "type": "AdaptiveCard",
                        "version": "1.4",
                        "body": [
                            _plain(heading, weight="Bolder"),
                            _plain(message.text),
                        ],
                    },
                }
            ],
        }
    else:
        body = {"dgxmm": 1, **message.to_json()}
    return orjson.dumps(body)


def slack_text(text: str) -> str:
    """Return ``text`` inert in Slack's mrkdwn (and Mattermost's and Rocket.Chat's Markdown)."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return escaped.replace("@", "@\u200b").replace("](", "]\u200b(")


def _plain(text: str, **style: str) -> dict[str, Any]:
    """Return an Adaptive Card element that shows ``text`` as it is (no Markdown)."""
    return {"type": "RichTextBlock", "inlines": [{"type": "TextRun", "text": text, **style}]}


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """Return the ``sha256=<hex>`` signature of ``body`` sent at ``timestamp``."""
    signed = str(timestamp).encode() + b"." + body
    return "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def sign(secret: str, timestamp: int, body: bytes) -> dict[str, str]:
    """Return the headers of a signed request."""
    return {
        "Content-Type": "application/json",
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: signature(secret, timestamp, body),
    }
