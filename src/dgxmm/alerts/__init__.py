"""Alerts: tell someone when a job, a schedule or a deployment fails (docs/alerts.md).

- ``channels``: webhooks with their body format (generic, Slack, Teams), URL and secret
  sealed (``sealing``, AES-GCM) under the key of ``keys`` (kept and rotated in the data
  directory); ``destinations``: the addresses a webhook may point at;
- ``rules``: a condition, its numbers, its quiet period, its channels; ``conditions``: where
  each is read from; ``evaluator``: findings grouped into incidents and messages;
- ``messages``, ``deliveries``: what is to be sent, to whom, and every attempt;
- ``sending/``: the JSON and its signature, one attempt with its deadline, one lane per
  channel, the claims and retries;
- ``service``: ``Alerts``, the facade and its thread.
"""

from dgxmm.alerts.channels import BodyFormat, Channel, Channels
from dgxmm.alerts.conditions import Conditions, Finding
from dgxmm.alerts.deliveries import (
    Attempt,
    AttemptOutcome,
    Deliveries,
    Delivery,
    DeliveryState,
    LogEntry,
)
from dgxmm.alerts.destinations import Destinations
from dgxmm.alerts.evaluator import Evaluator, Finder
from dgxmm.alerts.keys import KEY_ENV, KEY_FILE, KeyFile, Keys, load_or_create_key
from dgxmm.alerts.messages import Message, MessageKind
from dgxmm.alerts.rules import Condition, Rule, Rules
from dgxmm.alerts.sealing import Sealer, Unsealable
from dgxmm.alerts.sending.bodies import SIGNATURE_HEADER, TIMESTAMP_HEADER, render, signature
from dgxmm.alerts.sending.sender import Sender, SendPolicy
from dgxmm.alerts.service import Alerts

__all__ = [
    "KEY_ENV",
    "KEY_FILE",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "Alerts",
    "Attempt",
    "AttemptOutcome",
    "BodyFormat",
    "Channel",
    "Channels",
    "Condition",
    "Conditions",
    "Deliveries",
    "Delivery",
    "DeliveryState",
    "Destinations",
    "Evaluator",
    "Finder",
    "Finding",
    "KeyFile",
    "Keys",
    "LogEntry",
    "Message",
    "MessageKind",
    "Rule",
    "Rules",
    "Sealer",
    "SendPolicy",
    "Sender",
    "Unsealable",
    "load_or_create_key",
    "render",
    "signature",
]
