"""The form that creates or edits a deployment, built from the API's own field list.

Its fields are ``CreateDeployment``'s (the body ``POST /api/deployments`` takes), so a field
added to the API appears here too: the ones below have a label, a hint and the backends they
belong to; any other is drawn from its JSON schema (a number, a text, a switch, a menu or
JSON). ``static/deployment_form.js`` sends the form to the API (only the changed fields for
an edit) and puts each refused field's message beside it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.fleet import (
    DEFAULT_PRIORITY,
    DEFAULT_SLEEP_LEVEL,
    DEFAULT_SLEEP_TIMEOUT_S,
    DEFAULT_STARTUP_TIMEOUT_S,
    BackendKind,
    Deployment,
    IdlePolicy,
    LeadKind,
    current_keys,
)
from dgxmm.server.access.redaction import deployment_shown_to
from dgxmm.server.api.deployments import CreateDeployment
from dgxmm.server.edge.deps import FleetDep, HostDep, PathId, identify
from dgxmm.server.pages.render import render_page

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Known:
    label: str
    # text, int, float, bool, select, lines, env, gpus, json, lead (the wake lead), budget
    # (the wait budget: a mean in ms and a p99 in s)
    kind: str
    hint: str = ""
    backends: tuple[str, ...] = ()  # empty: every backend


_KNOWN = {
    "name": _Known(
        label="Name",
        kind="text",
        hint="letters, digits, '.', '-' and '_'; not starting with . or -",
    ),
    "model": _Known(label="Model", kind="text", hint="what the server serves, e.g. org/model-8b"),
    "aliases": _Known(
        label="Aliases",
        kind="lines",
        hint="other names requests may give as the model, one a line (at most 20)",
    ),
    "backend": _Known(label="Backend", kind="select"),
    "command": _Known(
        label="Command",
        kind="lines",
        hint="one argument per line; {port} is replaced by the port ({host}: the Ray node's)",
        backends=("process", "ray"),
    ),
    "port": _Known(
        label="Port", kind="int", hint="ray: empty for a free port", backends=("process", "ray")
    ),
    "environment": _Known(
        label="Environment",
        kind="env",
        hint="NAME=value, one a line",
        backends=("process", "ray"),
    ),
    "base_url": _Known(
        label="Server URL", kind="text", hint="http://host:port", backends=("external",)
    ),
    "gpus": _Known(label="GPUs", kind="gpus", backends=("process", "external")),
    "memory_gib_awake": _Known(label="Memory awake (GiB per GPU)", kind="float"),
    "memory_gib_asleep": _Known(label="Memory asleep (GiB per GPU)", kind="float"),
    "priority": _Known(label="Priority", kind="int", hint="0-100; plans evict lower ones only"),
    "time_zone": _Known(label="Time zone", kind="text", hint="IANA name, for its schedules"),
    "startup_timeout_s": _Known(
        label="Start-up timeout (s)", kind="float", hint="a start or wake, with its checks"
    ),
    "sleep_timeout_s": _Known(label="Sleep timeout (s)", kind="float"),
    "sleep_level": _Known(
        label="Sleep level",
        kind="int",
        hint="1: weights to CPU memory; 2: weights dropped, reloaded on a wake",
    ),
    "wake_on_request": _Known(label="Wake on a request", kind="bool"),
    "max_concurrent_requests": _Known(
        label="Requests at once",
        kind="int",
        hint="the proxy passes this many to it at once, the rest wait; empty: no limit",
    ),
    "max_queued_requests": _Known(
        label="Requests waiting",
        kind="int",
        hint="past the limit, this many wait for a slot, then 429 (default 100)",
    ),
    "loading_progress": _Known(
        label="Loading progress",
        kind="bool",
        hint="a streamed request held while it wakes gets progress chunks, as llama-swap sends",
    ),
    "ray_address": _Known(
        label="Ray cluster", kind="text", hint="host:port of its head node", backends=("ray",)
    ),
    "ray_node": _Known(
        label="Ray node",
        kind="text",
        hint="a resource the node declares, or the start of its id; empty: any",
        backends=("ray",),
    ),
    "num_gpus": _Known(
        label="GPUs asked of Ray", kind="int", hint="Ray picks them on the node", backends=("ray",)
    ),
    # The idle ladder: each step after that long with no request through the proxy and none
    # on the server's own counters (probes, scrapes and the post-wake check never count).
    "idle_sleep_after_s": _Known(
        label="Idle: sleep after (s)",
        kind="float",
        hint="sleep at level 1 after this long without requests; empty: off",
    ),
    "idle_deepen_after_s": _Known(
        label="Idle: deepen after (s)",
        kind="float",
        hint="then level 2 (weights dropped) after this long; more than the sleep's; empty: off",
    ),
    "idle_stop_after_s": _Known(
        label="Idle: stop after (s)",
        kind="float",
        hint="then stop after this long; more than the steps before; empty: off",
    ),
    "idle_policy": _Known(
        label="Idle policy",
        kind="select",
        hint="ladder: the steps above; histogram: learned from the gaps between its requests, "
        "the ladder until they are enough; priced: its own steps from its measured sleep and "
        "wake times at a price of waiting (0.1 GiB-h a request-second), the steps above unused",
    ),
    "idle_wait_budget": _Known(
        label="Wait budget (priced)",
        kind="budget",
        hint="the added wait per request the priced policy may spend: a mean in ms and/or a "
        "p99 in s; a daily job finds the price that spends it on the last 28 days; empty: none",
    ),
    "wake_lead": _Known(
        label="Wake lead",
        kind="lead",
        hint="how early scheduled wakes and starts begin: off, measured (p95 of its last 20 "
        "wakes at that level) or seconds (0-900)",
    ),
}
# The choices of the menus whose values the API checks itself (listed in order).
_CHOICES = {
    "backend": [kind.value for kind in BackendKind],
    "idle_policy": [policy.value for policy in IdlePolicy],
}


def _schema_kind(schema: dict[str, Any], definitions: dict[str, Any]) -> tuple[str, list[str]]:
    """Return the widget a field of another kind gets from its JSON schema, and its choices."""
    options = [s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    one = options[0] if options else schema
    if "$ref" in one:
        one = definitions.get(one["$ref"].rsplit("/", 1)[-1], {})
    if "enum" in one:
        return "select", [str(v) for v in one["enum"]]
    kind = {"boolean": "bool", "integer": "int", "number": "float", "string": "text"}
    return kind.get(one.get("type", ""), "json"), []


def _fields(values: dict[str, Any]) -> list[dict[str, Any]]:
    schema = CreateDeployment.model_json_schema()
    definitions = schema.get("$defs", {})
    required = set(schema.get("required", []))
    fields = []
    for name, prop in schema["properties"].items():
        known = _KNOWN.get(name)
        kind, choices = _schema_kind(prop, definitions)
        choices = _CHOICES.get(name, choices)
        value = values.get(name, prop.get("default"))
        fields.append(
            {
                "name": name,
                "label": known.label if known else prop.get("title", name),
                "kind": known.kind if known else kind,
                "hint": known.hint if known else prop.get("description", ""),
                "backends": " ".join(known.backends) if known else "",
                "choices": choices,
                "required": name in required,
                "value": value,
                "text": _as_text(known.kind if known else kind, value),
            }
        )
    return fields


def _as_text(kind: str, value: Any) -> str:
    """Return a field's value as its input shows it."""
    if value is None:
        return ""
    if kind == "lines":
        return "\n".join(value)
    if kind == "env":
        return "\n".join(f"{key}={text}" for key, text in value.items())
    if kind == "json":
        return json.dumps(value)
    if kind == "float" or (kind == "lead" and not isinstance(value, str)):
        return f"{value:g}"
    return str(value)


def _form(
    request: Request, fleet: FleetDep, values: dict[str, Any], editing: Deployment | None
) -> Response:
    return render_page(
        request,
        "deployment_form.html",
        fields=_fields(values),
        editing=editing,
        initial=values,
        gpus=fleet.inventory.gpus,
    )


@router.get("/deployments/new", response_class=HTMLResponse)
def new_deployment(request: Request, fleet: FleetDep, host: HostDep) -> Response:
    """The form that creates a deployment."""
    defaults = {
        "backend": BackendKind.PROCESS.value,
        "priority": DEFAULT_PRIORITY,
        "time_zone": host.time_zone.key,
        "startup_timeout_s": DEFAULT_STARTUP_TIMEOUT_S,
        "sleep_timeout_s": DEFAULT_SLEEP_TIMEOUT_S,
        "sleep_level": DEFAULT_SLEEP_LEVEL,
        "command": [],
        "idle_policy": IdlePolicy.LADDER.value,
        "wake_lead": LeadKind.OFF.value,
    }
    return _form(request, fleet, defaults, None)


@router.get("/deployments/{deployment_id}/edit", response_class=HTMLResponse)
def edit_deployment(request: Request, deployment_id: PathId, fleet: FleetDep) -> Response:
    """The form that changes a deployment (404 for one that does not exist).

    A viewer may look at the form (it cannot send it) but reads it masked, as in the API.
    """
    deployment = deployment_shown_to(fleet.deployments.get(deployment_id), identify(request))
    values = {**deployment.to_json(), **current_keys(deployment)}
    return _form(request, fleet, values, deployment)
