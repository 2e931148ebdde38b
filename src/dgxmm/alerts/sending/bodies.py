"""What a webhook is sent: the body of a channel's format, and its signature.

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

__all__ = ["SIGNATURE_HEADER", "TIMESTAMP_HEADER", "render", "sign", "signature"]

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
        body = {"text": f"{heading}\n{message.text}"}
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
                            {
                                "type": "TextBlock",
                                "text": heading,
                                "weight": "Bolder",
                                "wrap": True,
                            },
                            {"type": "TextBlock", "text": message.text, "wrap": True},
                        ],
                    },
                }
            ],
        }
    else:
        body = {"dgxmm": 1, **message.to_json()}
    return orjson.dumps(body)


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
