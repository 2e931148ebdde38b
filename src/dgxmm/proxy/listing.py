"""``GET /v1/models``: every model a deployment serves, in OpenAI's list shape, with its state.

OpenAI's model object is ``{"id", "object", "created", "owned_by"}``; each entry here adds
``state``, the state of the deployment a request for that model goes to (``ModelState``), so
a person or a chat UI can tell that a request will wait for a wake. Client libraries keep
the fields they do not know (the ``openai`` package's models allow extra ones) and ignore
them otherwise. Listing reads the route table only: it wakes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from enum import StrEnum

from dgxmm.fleet import DeploymentState
from dgxmm.proxy.replies import Reply
from dgxmm.proxy.routes import Route

__all__ = ["ModelState", "model_state", "models_reply"]


class ModelState(StrEnum):
    """A model's state as a client reads it: its deployment's, in a client's words."""

    AWAKE = "awake"  # a request is answered at once
    ASLEEP = "asleep"  # a request waits for a wake (or is refused: wake_on_request off)
    STARTING = "starting"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"


_STATES = {
    DeploymentState.RUNNING: ModelState.AWAKE,
    DeploymentState.SLEEPING: ModelState.ASLEEP,
    DeploymentState.STARTING: ModelState.STARTING,
    DeploymentState.STOPPING: ModelState.STOPPING,
    DeploymentState.STOPPED: ModelState.STOPPED,
    DeploymentState.FAILED: ModelState.FAILED,
}


def model_state(state: DeploymentState) -> ModelState:
    """Return the state a client sees for a deployment in ``state``."""
    return _STATES[state]


def models_reply(served: Iterable[tuple[str, Route]]) -> Reply:
    """Answer ``/v1/models`` for each model name and the route a request for it takes."""
    data = [
        {
            "id": name,
            "object": "model",
            "created": route.deployment.created_at // 1_000_000,
            "owned_by": "dgxmm",
            "state": model_state(route.deployment.state).value,
        }
        for name, route in sorted(served, key=lambda pair: pair[0])
    ]
    body = json.dumps({"object": "list", "data": data}).encode()
    return Reply(200, body, [(b"content-type", b"application/json")])
