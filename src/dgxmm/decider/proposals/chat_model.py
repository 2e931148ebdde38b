"""The ``openai`` decision model: an OpenAI-compatible chat endpoint asked for a JSON verdict.

The endpoint is a base URL, or one of the managed deployments by name (an external one's
URL, a process one's ``http://127.0.0.1:<port>``). It is *ready* when:

- a named deployment is ``running`` (asleep, stopped or failed, it is not asked at all);
- ``GET /health`` answers 200 (a server without ``/health`` may answer ``GET /v1/models``
  instead);
- ``GET /is_sleeping`` does not say ``true`` (a server without that endpoint cannot sleep).

Each candidate is one ``POST /v1/chat/completions`` (temperature 0) with the candidate's
evidence, asking for exactly ``{"propose": bool, "confidence": 0..1, "reason": text}``. The
answer is read defensively: the first JSON object in the message (code fences allowed); an
answer that is not JSON, lacks a field, or has a confidence outside 0..1 is ``CannotDecide``,
as is any HTTP failure, so the rules decide that candidate instead. Every answer is read by
the fleet's ``read_answer`` (a byte bound, one deadline): at most ``MAX_CONTROL_BYTES`` of a
probe's, ``_ANSWER_BYTES`` of a verdict's.
"""

from __future__ import annotations

import json
import math
from typing import Any

import httpx

from dgxmm.decider.proposals.candidates import Candidate
from dgxmm.decider.proposals.decision_models import Decision, Endpoint, ModelKind, Readiness
from dgxmm.errors import CannotDecide, NotFound
from dgxmm.fleet import MAX_CONTROL_BYTES, Answer, DeploymentRepo, DeploymentState, read_answer

__all__ = ["SYSTEM_PROMPT", "ChatModel", "parse_verdict"]

SYSTEM_PROMPT = (
    "You help run GPU model servers. A deployment can be put to sleep on a weekly schedule "
    "during hours when it serves no requests, freeing GPU memory; waking it takes time, and a "
    "request that arrives while it sleeps fails. Given the evidence about one idle window, "
    "decide whether to propose the sleep schedule to the admins. Answer with one JSON object "
    'and nothing else: {"propose": true or false, "confidence": a number from 0 to 1, '
    '"reason": "one short sentence"}.'
)
_PROBE_TIMEOUT_S = 5.0
_ANSWER_BYTES = 64 * 1024  # a verdict is a line of JSON; the completion around it, a few KiB


def parse_verdict(text: object) -> Decision:
    """Read a JSON verdict out of a chat answer; ``CannotDecide`` when there is none."""
    if not isinstance(text, str) or not text.strip():
        raise CannotDecide("the chat model gave an empty answer")
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise CannotDecide(f"the chat model's answer holds no JSON object: {_clip(text)}")
    try:
        verdict = json.loads(text[start : end + 1])
    except ValueError as error:
        raise CannotDecide(
            f"the chat model's answer is not JSON ({error}): {_clip(text)}"
        ) from error
    if not isinstance(verdict, dict):
        raise CannotDecide(f"the chat model's verdict is not an object: {_clip(text)}")
    propose, confidence = verdict.get("propose"), verdict.get("confidence")
    reason = verdict.get("reason", "")
    if not isinstance(propose, bool):
        raise CannotDecide(f"the chat model's verdict has no true/false propose: {_clip(text)}")
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not math.isfinite(confidence)
        or not 0 <= confidence <= 1
    ):
        raise CannotDecide(f"the chat model's confidence is not from 0 to 1: {confidence!r}")
    return Decision(
        propose=propose,
        confidence=float(confidence),
        reason=reason if isinstance(reason, str) else json.dumps(reason),
    )


class ChatModel:
    """Asks an OpenAI-compatible chat endpoint; not ready while it is down or asleep."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        deployments: DeploymentRepo,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._endpoint = endpoint
        self._deployments = deployments
        # trust_env=False: the endpoint is addressed directly, never through a proxy that
        # would turn "connection refused" into a proxy's error page.
        self._client = httpx.Client(
            timeout=endpoint.timeout_s, trust_env=False, transport=transport
        )
        self._served: str | None = endpoint.model

    @property
    def name(self) -> str:
        """``openai``."""
        return ModelKind.OPENAI.value

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()

    def ready(self) -> Readiness:
        """Tell whether the endpoint answers and is awake."""
        try:
            base = self._base_url()
            self._probe(base)
        except CannotDecide as error:
            return Readiness(ready=False, reason=str(error))
        return Readiness(ready=True, reason=f"the chat endpoint at {base} answers and is awake")

    def decide(self, candidate: Candidate) -> Decision:
        """Ask the endpoint for a verdict on one candidate."""
        base = self._base_url()
        body = {
            "model": self._served_model(base),
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": json.dumps(_question(candidate), sort_keys=True)},
            ],
            "temperature": 0,
            "max_tokens": 300,
        }
        answer = self._json("POST", f"{base}/v1/chat/completions", body=body)
        try:
            content = answer["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as error:
            raise CannotDecide(f"the chat endpoint's answer has no message: {error!r}") from error
        return parse_verdict(content)

    # -- HTTP ---------------------------------------------------------------------------------

    def _base_url(self) -> str:
        if self._endpoint.base_url is not None:
            return self._endpoint.base_url
        name = self._endpoint.deployment
        assert name is not None  # an endpoint names a base URL or a deployment
        try:
            deployment = self._deployments.by_name(name)
        except NotFound:
            raise CannotDecide(f"the chat endpoint's deployment {name!r} does not exist") from None
        if deployment.state is not DeploymentState.RUNNING:
            raise CannotDecide(
                f"the chat endpoint's deployment {name!r} is {deployment.state.value}"
            )
        return deployment.url.rstrip("/")

    def _probe(self, base: str) -> None:
        health = self._get(f"{base}/health")
        if health.status == 404:  # not every OpenAI-compatible server has /health
            health = self._get(f"{base}/v1/models")
        if health.status != 200:
            raise CannotDecide(f"the chat endpoint at {base} is not healthy ({health.status})")
        sleeping = self._get(f"{base}/is_sleeping")
        if sleeping.status == 200:
            try:
                asleep = json.loads(sleeping.body).get("is_sleeping") is True
            except (ValueError, AttributeError):
                asleep = False
            if asleep:
                raise CannotDecide(f"the chat endpoint at {base} is asleep")

    def _served_model(self, base: str) -> str:
        if self._served is None:
            listing = self._json("GET", f"{base}/v1/models")
            try:
                self._served = str(listing["data"][0]["id"])
            except (KeyError, IndexError, TypeError) as error:
                raise CannotDecide(f"the chat endpoint at {base} lists no model") from error
        return self._served

    def _get(self, url: str) -> Answer:
        seconds = min(_PROBE_TIMEOUT_S, self._endpoint.timeout_s)
        try:
            return read_answer(
                self._client, "GET", url,
                max_bytes=MAX_CONTROL_BYTES, seconds=seconds, connect_s=seconds,
            )  # fmt: skip
        except httpx.HTTPError as error:
            raise CannotDecide(f"the chat endpoint is down: {url}: {error!r}") from error

    def _json(self, method: str, url: str, *, body: object = None) -> Any:
        seconds = self._endpoint.timeout_s
        try:
            response = read_answer(
                self._client, method, url,
                max_bytes=_ANSWER_BYTES, seconds=seconds, connect_s=seconds, json=body,
            )  # fmt: skip
        except httpx.HTTPError as error:
            raise CannotDecide(f"the chat endpoint failed: {method} {url}: {error!r}") from error
        if response.status != 200:
            raise CannotDecide(
                f"the chat endpoint answered {response.status} to {method} {url}: "
                f"{_clip(response.text)}"
            )
        if response.cut:
            raise CannotDecide(
                f"the chat endpoint's answer to {method} {url} is over {_ANSWER_BYTES} bytes"
            )
        try:
            return json.loads(response.body)
        except ValueError as error:
            raise CannotDecide(
                f"the chat endpoint's answer to {method} {url} is not JSON"
            ) from error


def _question(candidate: Candidate) -> dict[str, Any]:
    deployment = candidate.deployment
    return {
        "deployment": deployment.name,
        "priority": deployment.priority,
        "priority_scale": "0 (lowest) to 100 (highest)",
        "time_zone": deployment.time_zone,
        "proposal": candidate.description,
        "evidence": candidate.evidence,
    }


def _clip(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
