"""Decision models: what decides whether a candidate window becomes a proposal.

One interface, two models:

- ``feedback`` (``feedback_model.py``): a small scikit-learn classifier trained on the features
  of past proposals and the admins' decisions on them; not ready until it has 20 accepted
  and 20 dismissed proposals to learn from;
- ``openai`` (``chat_model.py``): any OpenAI-compatible chat endpoint (one of the managed
  deployments, say) asked for a JSON verdict; not ready while it is down or asleep.

A model answers ``Decision(propose, confidence, reason)``; the proposer proposes when it
says propose with a confidence at or above the threshold. A model that cannot decide one
candidate raises ``CannotDecide``, and the rules decide that candidate instead.

The settings are one store setting, ``proposals.model``::

    {"enabled": true, "model": "feedback", "threshold": 0.7,
     "endpoint": {"base_url": "http://127.0.0.1:8001", "model": null, "timeout_s": 30}}

``endpoint`` (for ``openai``) names a ``base_url`` or a managed ``deployment`` by name, and
optionally the served ``model`` (default: the first the endpoint lists).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol
from urllib.parse import urlsplit

from dgxmm.decider.proposals.candidates import Candidate
from dgxmm.errors import InvalidInput

__all__ = [
    "DEFAULT_THRESHOLD",
    "MODEL_SETTING",
    "Decision",
    "DecisionModel",
    "Endpoint",
    "ModelKind",
    "ModelSettings",
    "Readiness",
    "parse_settings",
]

MODEL_SETTING = "proposals.model"
DEFAULT_THRESHOLD = 0.7
_SETTING_KEYS = {"enabled", "model", "threshold", "endpoint"}
_ENDPOINT_KEYS = {"base_url", "deployment", "model", "timeout_s"}


class ModelKind(StrEnum):
    """The decision models dgxmm has."""

    FEEDBACK = "feedback"
    OPENAI = "openai"


@dataclass(frozen=True, slots=True, kw_only=True)
class Readiness:
    """Whether a model can be asked now, and why (not)."""

    ready: bool
    reason: str

    def __bool__(self) -> bool:
        return self.ready


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """A model's verdict on one candidate."""

    propose: bool
    confidence: float  # 0..1: how sure the model is of this verdict
    reason: str


class DecisionModel(Protocol):
    """What the proposer asks: whether it can be asked, and its verdict on a candidate."""

    @property
    def name(self) -> str:
        """The model's name, written as a proposal's source."""
        ...

    def ready(self) -> Readiness:
        """Tell whether the model can decide now, with the reason."""
        ...

    def decide(self, candidate: Candidate) -> Decision:
        """Decide one candidate; raise ``CannotDecide`` when it cannot."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Endpoint:
    """Where the ``openai`` model's chat endpoint is: a URL, or a managed deployment."""

    base_url: str | None = None
    deployment: str | None = None
    model: str | None = None  # the served model's name; None: the first /v1/models lists
    timeout_s: float = 30.0

    def to_json(self) -> dict[str, Any]:
        """Return the endpoint as JSON values."""
        return {
            "base_url": self.base_url,
            "deployment": self.deployment,
            "model": self.model,
            "timeout_s": self.timeout_s,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSettings:
    """Which model decides, its threshold, and whether it is used at all."""

    enabled: bool = True
    model: ModelKind = ModelKind.FEEDBACK
    threshold: float = DEFAULT_THRESHOLD
    endpoint: Endpoint | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the settings as JSON values (as stored)."""
        return {
            "enabled": self.enabled,
            "model": self.model.value,
            "threshold": self.threshold,
            "endpoint": self.endpoint.to_json() if self.endpoint is not None else None,
        }


def parse_settings(value: object) -> ModelSettings:
    """Read settings from JSON values; ``InvalidInput`` names the first wrong field."""
    if value is None:
        return ModelSettings()
    if not isinstance(value, Mapping):
        raise InvalidInput("settings", "must be an object")
    unknown = sorted(set(value) - _SETTING_KEYS)
    if unknown:
        raise InvalidInput(unknown[0], "is not a setting of the decision model")
    enabled = value.get("enabled", True)
    if not isinstance(enabled, bool):
        raise InvalidInput("enabled", f"{enabled!r} is not true or false")
    kind = value.get("model", ModelKind.FEEDBACK.value)
    if kind not in {k.value for k in ModelKind}:
        known = ", ".join(k.value for k in ModelKind)
        raise InvalidInput("model", f"{kind!r} is not a decision model (known: {known})")
    threshold = value.get("threshold", DEFAULT_THRESHOLD)
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not 0 <= threshold <= 1
    ):
        raise InvalidInput("threshold", f"{threshold!r} is not a number from 0 to 1")
    endpoint = _endpoint(value.get("endpoint"))
    if ModelKind(kind) is ModelKind.OPENAI and endpoint is None:
        raise InvalidInput("endpoint", "the openai model needs an endpoint")
    return ModelSettings(
        enabled=enabled, model=ModelKind(kind), threshold=float(threshold), endpoint=endpoint
    )


def _endpoint(value: object) -> Endpoint | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidInput("endpoint", "must be an object")
    unknown = sorted(set(value) - _ENDPOINT_KEYS)
    if unknown:
        raise InvalidInput(f"endpoint.{unknown[0]}", "is not a key of an endpoint")
    base_url, deployment = value.get("base_url"), value.get("deployment")
    if (base_url is None) == (deployment is None):
        raise InvalidInput("endpoint", "give either base_url or deployment")
    if base_url is not None:
        if not isinstance(base_url, str) or not _is_http_url(base_url):
            raise InvalidInput("endpoint.base_url", f"{base_url!r} is not an http(s) URL")
        base_url = base_url.rstrip("/")
    if deployment is not None and (not isinstance(deployment, str) or not deployment.strip()):
        raise InvalidInput("endpoint.deployment", f"{deployment!r} is not a deployment's name")
    model = value.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise InvalidInput("endpoint.model", f"{model!r} is not a model name")
    timeout = value.get("timeout_s", 30.0)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or not 0 < timeout <= 600
    ):
        raise InvalidInput("endpoint.timeout_s", f"{timeout!r} is not a number of seconds 0-600")
    return Endpoint(base_url=base_url, deployment=deployment, model=model, timeout_s=float(timeout))


def _is_http_url(text: str) -> bool:
    try:
        parts = urlsplit(text)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)
