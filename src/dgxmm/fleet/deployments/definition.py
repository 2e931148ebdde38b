"""What a deployment is defined by, checked field by field before anything is written.

``check_definition`` takes the keys a person gave (all of them for a new deployment; the
changed ones merged over the current row for an edit) and returns the column values, or
raises ``DefinitionError`` naming the first field it cannot use, its ``errors`` listing every
one (``Refusals``, as a job definition's check). The GPUs are checked
against the inventory: a deployment that declares a GPU this machine does not have, or more
memory than the GPU holds, could never start. A ray deployment names no GPU: it asks for
``num_gpus`` and Ray gives its actor GPUs on the node the fit check chose; ``backend: ray``
is refused, saying what to install, where the ``ray`` package is missing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from dgxmm.errors import DefinitionError, ZoneError
from dgxmm.fleet.backends.external import check_base_url
from dgxmm.fleet.backends.protocol import BackendKind
from dgxmm.fleet.deployments.deployment import (
    DEFAULT_SLEEP_LEVEL,
    DEFAULT_SLEEP_TIMEOUT_S,
    SLEEP_LEVELS,
    Deployment,
    wake_lead_column,
)
from dgxmm.fleet.deployments.idle_columns import budget_column, check_idle_columns, idle_keys
from dgxmm.fleet.placement.cluster import check_ray_address, ray_missing
from dgxmm.fleet.placement.inventory import GpuInventory, as_finite
from dgxmm.jobs import resolve_zone
from dgxmm.jobs.keys import Refusals, check_name

__all__ = [
    "DEFAULT_PRIORITY",
    "DEFAULT_SLEEP_LEVEL",
    "DEFAULT_SLEEP_TIMEOUT_S",
    "DEFAULT_STARTUP_TIMEOUT_S",
    "FIELDS",
    "IDLE_FIELDS",
    "MAX_ALIASES",
    "RUN_FIELDS",
    "check_backend",
    "check_definition",
    "columns_of",
    "current_keys",
]

DEFAULT_PRIORITY = 50
# vLLM loads weights and captures CUDA graphs before it answers: minutes for a large model.
DEFAULT_STARTUP_TIMEOUT_S = 600.0
_MAX_TIMEOUT_S = 24 * 3600.0

FIELDS = (
    "name",
    "model",
    "aliases",
    "backend",
    "command",
    "port",
    "environment",
    "base_url",
    "gpus",
    "memory_gib_awake",
    "memory_gib_asleep",
    "priority",
    "time_zone",
    "startup_timeout_s",
    "wake_on_request",
    "max_concurrent_requests",
    "max_queued_requests",
    "loading_progress",
    "sleep_timeout_s",
    "sleep_level",
    "ray_address",
    "ray_node",
    "num_gpus",
    "idle_sleep_after_s",
    "idle_deepen_after_s",
    "idle_stop_after_s",
    "idle_policy",
    "wake_lead",
    "idle_wait_budget",
)
# The idle settings (issue 25; the wait budget, issue 42): an edit of any of them lifts a
# pause of the idle policy.
IDLE_FIELDS = frozenset(FIELDS[-6:])
# How dgxmm runs the server: changed only while nothing of it runs, so that the server that
# runs is always the one the row describes (a pid file, a port probed, a URL, an actor).
RUN_FIELDS = frozenset(
    {
        "backend",
        "command",
        "port",
        "environment",
        "base_url",
        "gpus",
        "ray_address",
        "ray_node",
        "num_gpus",
    }
)
_PROCESS_ONLY = ("command", "port", "environment")
_RAY_ONLY = ("ray_address", "ray_node", "num_gpus")
_MAX_RAY_GPUS = 64
MAX_ALIASES = 20
# Past its concurrency limit, this many requests wait for a slot by default (Ollama's
# OLLAMA_MAX_QUEUE is 512 for a whole server; one deployment's queue is smaller).
DEFAULT_MAX_QUEUED = 100
_MOST_REQUESTS = 10_000


def current_keys(deployment: Deployment) -> dict[str, Any]:
    """Return a deployment's definition as the keys ``check_definition`` takes."""
    return {
        "name": deployment.name,
        "model": deployment.model,
        "aliases": list(deployment.aliases),
        "backend": deployment.backend.value,
        "command": list(deployment.command) if deployment.command is not None else None,
        "port": deployment.port,
        "environment": dict(deployment.environment) or None,
        "base_url": deployment.base_url,
        # A ray deployment's GPUs are Ray's choice, not part of its definition.
        "gpus": [] if deployment.backend is BackendKind.RAY else list(deployment.gpus),
        "memory_gib_awake": deployment.memory_gib_awake,
        "memory_gib_asleep": deployment.memory_gib_asleep,
        "priority": deployment.priority,
        "time_zone": deployment.time_zone,
        "startup_timeout_s": deployment.startup_timeout_s,
        "wake_on_request": deployment.wake_on_request,
        "max_concurrent_requests": deployment.max_concurrent_requests,
        "max_queued_requests": deployment.max_queued_requests,
        "loading_progress": deployment.loading_progress,
        "sleep_timeout_s": deployment.sleep_timeout_s,
        "sleep_level": deployment.sleep_level,
        "ray_address": deployment.ray_address,
        "ray_node": deployment.ray_node,
        "num_gpus": deployment.num_gpus,
        **idle_keys(deployment),
    }


def columns_of(deployment: Deployment) -> dict[str, Any]:
    """Return a deployment's definition as the column values ``check_definition`` returns."""
    keys = current_keys(deployment)
    return {
        **keys,
        "aliases": json.dumps(keys["aliases"]),
        "command": json.dumps(keys["command"]) if keys["command"] is not None else None,
        "environment": json.dumps(keys["environment"]) if keys["environment"] else None,
        "gpus": json.dumps(keys["gpus"]),
        "wake_lead": wake_lead_column(deployment.wake_lead),
        "idle_wait_budget": budget_column(deployment.idle_wait_budget),
    }


def check_definition(keys: Mapping[str, Any], inventory: GpuInventory) -> dict[str, Any]:
    """Return the column values of a definition; ``DefinitionError`` names the fields refused.

    Every field is checked, so the error raised lists each wrong one in ``errors`` (as a job
    definition's does); it is the first of them.
    """
    refusals = Refusals()
    checked = refusals.check
    refusals.found.extend(
        DefinitionError(key, "is not a deployment field") for key in keys if key not in FIELDS
    )
    backend = checked(lambda: check_backend(keys.get("backend")))
    model = checked(lambda: _text(keys.get("model"), "model", 200))
    aliases = checked(lambda: _aliases(keys.get("aliases"), model))
    values: dict[str, Any] = {
        "name": checked(lambda: check_name(keys.get("name"), kind="deployment")),
        "model": model,
        "aliases": json.dumps(aliases),
        "backend": None if backend is None else backend.value,
        "command": None,
        "port": None,
        "environment": None,
        "base_url": None,
        "ray_address": None,
        "ray_node": None,
        "num_gpus": None,
    }
    if backend is not None:
        _check_runner(keys, backend, values, refusals)
    gpus = (
        []
        if backend is BackendKind.RAY
        else checked(lambda: _gpus(keys.get("gpus", []), inventory))
    )
    awake = checked(lambda: _gib(keys.get("memory_gib_awake", 0.0), "memory_gib_awake"))
    asleep = checked(lambda: _gib(keys.get("memory_gib_asleep", 0.0), "memory_gib_asleep"))
    if awake is not None and asleep is not None:
        checked(lambda: _asleep_within(asleep, awake))
    if awake is not None:
        checked(lambda: _fits_each(awake, gpus or [], inventory))
    values.update(
        gpus=json.dumps(gpus),
        memory_gib_awake=awake,
        memory_gib_asleep=asleep,
        priority=checked(lambda: _priority(keys.get("priority", DEFAULT_PRIORITY))),
        time_zone=checked(lambda: _zone(keys.get("time_zone", "UTC"))),
        startup_timeout_s=checked(
            lambda: _timeout(
                keys.get("startup_timeout_s", DEFAULT_STARTUP_TIMEOUT_S), "startup_timeout_s"
            )
        ),
        sleep_timeout_s=checked(
            lambda: _timeout(
                keys.get("sleep_timeout_s", DEFAULT_SLEEP_TIMEOUT_S), "sleep_timeout_s"
            )
        ),
        sleep_level=checked(lambda: _sleep_level(keys.get("sleep_level", DEFAULT_SLEEP_LEVEL))),
        wake_on_request=checked(
            lambda: _flag(keys.get("wake_on_request", True), "wake_on_request")
        ),
        max_concurrent_requests=checked(lambda: _limit(keys.get("max_concurrent_requests"))),
        max_queued_requests=checked(
            lambda: _whole(
                _or(keys.get("max_queued_requests"), DEFAULT_MAX_QUEUED),
                "max_queued_requests",
                0,
                _MOST_REQUESTS,
            )
        ),
        loading_progress=checked(
            lambda: _flag(keys.get("loading_progress", False), "loading_progress")
        ),
    )
    values.update(check_idle_columns(keys, refusals))
    refusals.raise_any()
    return values


def _check_runner(
    keys: Mapping[str, Any], backend: BackendKind, values: dict[str, Any], refusals: Refusals
) -> None:
    """Check how the backend runs the server (command, port, URL, Ray) into ``values``."""
    checked = refusals.check
    if backend is not BackendKind.RAY:
        for key in _RAY_ONLY:
            if keys.get(key) is not None:
                refusals.found.append(
                    DefinitionError(key, f"is for backend ray, not {backend.value}")
                )
    if backend in (BackendKind.PROCESS, BackendKind.RAY):
        if keys.get("base_url") is not None:
            refusals.found.append(
                DefinitionError(
                    "base_url", f"is for an external server; {backend.value} runs a command"
                )
            )
        command = checked(lambda: _command(keys.get("command")))
        values["command"] = None if command is None else json.dumps(command)
        if backend is BackendKind.PROCESS or keys.get("port") is not None:
            values["port"] = checked(lambda: _port(keys.get("port")))
        environment = checked(lambda: _environment(keys.get("environment")))
        values["environment"] = json.dumps(environment) if environment else None
    if backend is BackendKind.RAY:
        checked(lambda: _check_ray(keys, values))
    elif backend is BackendKind.EXTERNAL:
        for key in _PROCESS_ONLY:
            if keys.get(key) not in (None, {}):
                refusals.found.append(
                    DefinitionError(key, "is for a process; an external server has a base_url")
                )
        if keys.get("base_url") is None:
            refusals.found.append(
                DefinitionError("base_url", "an external deployment needs its server's URL")
            )
        else:
            values["base_url"] = checked(
                lambda: check_base_url(_text(keys.get("base_url"), "base_url", 500))
            )


def _asleep_within(asleep: float, awake: float) -> None:
    if asleep > awake:
        raise DefinitionError(
            "memory_gib_asleep", f"{asleep:g} GiB is more than it holds awake ({awake:g} GiB)"
        )


def _fits_each(awake: float, gpus: list[int], inventory: GpuInventory) -> None:
    for index in gpus:
        gpu = inventory.gpu(index)
        if awake > gpu.memory_gib:
            raise DefinitionError(
                "memory_gib_awake",
                f"{awake:g} GiB is more than GPU {index} ({gpu.name}) holds "
                f"({gpu.memory_gib:g} GiB)",
            )


def check_backend(value: Any) -> BackendKind:
    """Return the backend a definition names (``DefinitionError`` for another)."""
    try:
        return BackendKind(value)
    except ValueError:
        raise DefinitionError(
            "backend", f"{value!r} is not a backend (process, external or ray)"
        ) from None


def _check_ray(keys: Mapping[str, Any], values: dict[str, Any]) -> None:
    """Check a ray deployment's own fields into ``values``."""
    missing = ray_missing()
    if missing is not None:
        raise DefinitionError("backend", missing)
    if keys.get("gpus") not in (None, [], ()):
        raise DefinitionError(
            "gpus", "Ray gives a ray deployment its GPUs on the node it runs on: set num_gpus"
        )
    if keys.get("ray_address") is None:
        raise DefinitionError("ray_address", "a ray deployment needs its Ray cluster's address")
    values["ray_address"] = check_ray_address(_text(keys["ray_address"], "ray_address", 500))
    if keys.get("ray_node") is not None:
        values["ray_node"] = _text(keys["ray_node"], "ray_node", 200)
    values["num_gpus"] = _whole(keys.get("num_gpus", 1), "num_gpus", 0, _MAX_RAY_GPUS)


def _text(value: Any, field: str, longest: int) -> str:
    if value is None:
        raise DefinitionError(field, "is required")
    if not isinstance(value, str) or not value.strip():
        raise DefinitionError(field, f"{value!r} is not a non-empty text")
    if len(value) > longest or not value.isprintable():
        raise DefinitionError(field, f"must be printable and at most {longest} characters")
    return value


def _aliases(value: Any, model: str | None) -> list[str]:
    """Check the other names a request may give as its model (None: none)."""
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise DefinitionError("aliases", "give the aliases as a list of names")
    if len(value) > MAX_ALIASES:
        raise DefinitionError("aliases", f"{len(value)} names are more than {MAX_ALIASES}")
    seen: list[str] = []
    for position, alias in enumerate(value):
        field = f"aliases[{position}]"
        _text(alias, field, 200)
        if alias == model:
            raise DefinitionError(field, f"{alias!r} is the deployment's model already")
        if alias in seen:
            raise DefinitionError(field, f"{alias!r} is listed twice")
        seen.append(alias)
    return seen


def _or(value: Any, default: Any) -> Any:
    """Return ``value``, or ``default`` for a value not given (null: the default)."""
    return default if value is None else value


def _limit(value: Any) -> int | None:
    """Return the concurrency limit: None (no limit) or 1 to 10,000 requests at once."""
    if value is None:
        return None
    return _whole(value, "max_concurrent_requests", 1, _MOST_REQUESTS)


def _whole(value: Any, field: str, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise DefinitionError(field, f"{value!r} is not a whole number")
    if not low <= value <= high:
        raise DefinitionError(field, f"{value} is out of range {low}-{high}")
    return value


def _command(value: Any) -> list[str]:
    if value is None:
        raise DefinitionError("command", "a process deployment needs its command line")
    if not isinstance(value, list | tuple) or not value:
        raise DefinitionError("command", "give the command line as a list of arguments")
    if len(value) > 1000:
        raise DefinitionError("command", f"{len(value)} arguments are more than 1000")
    for position, argument in enumerate(value):
        if not isinstance(argument, str) or not argument or "\0" in argument:
            raise DefinitionError(
                f"command[{position}]", f"{argument!r} is not a non-empty argument"
            )
    return list(value)


def _port(value: Any) -> int:
    if value is None:
        raise DefinitionError("port", "a process deployment needs the port its server uses")
    return _whole(value, "port", 1, 65535)


def _environment(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise DefinitionError("environment", "give the environment as an object of texts")
    for key, text in value.items():
        if not isinstance(key, str) or not key or "=" in key or "\0" in key:
            raise DefinitionError("environment", f"{key!r} is not a variable name")
        if not isinstance(text, str) or "\0" in text:
            raise DefinitionError(f"environment.{key}", f"{text!r} is not a text")
    return dict(value)


def _gpus(value: Any, inventory: GpuInventory) -> list[int]:
    if not isinstance(value, list | tuple):
        raise DefinitionError("gpus", "give the GPUs as a list of indices, such as [0, 1]")
    known = {gpu.index for gpu in inventory.gpus}
    seen: list[int] = []
    for position, index in enumerate(value):
        _whole(index, f"gpus[{position}]", 0, 1023)
        if index in seen:
            raise DefinitionError(f"gpus[{position}]", f"GPU {index} is listed twice")
        if index not in known:
            have = ", ".join(str(i) for i in sorted(known)) or "none"
            raise DefinitionError(
                f"gpus[{position}]",
                f"GPU {index} is not in this machine's inventory (GPUs: {have}; "
                f"{inventory.note or inventory.source.value})",
            )
        seen.append(index)
    return seen


def _gib(value: Any, field: str) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise DefinitionError(field, f"{value!r} is not a number of GiB")
    number = as_finite(value)
    if number is None:
        raise DefinitionError(field, "is too large a number of GiB")
    if number < 0:
        raise DefinitionError(field, f"{value!r} must be 0 or more GiB")
    return number


def _priority(value: Any) -> int:
    return _whole(value, "priority", 0, 100)


def _zone(value: Any) -> str:
    try:
        return resolve_zone(value, field="time_zone").key
    except ZoneError as error:
        raise DefinitionError("time_zone", error.message) from None


def _flag(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise DefinitionError(field, f"{value!r} is not true or false")
    return value


def _timeout(value: Any, field: str) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise DefinitionError(field, f"{value!r} is not a number of seconds")
    number = as_finite(value)
    if number is None:
        raise DefinitionError(field, f"is too large: not between 0 and {_MAX_TIMEOUT_S:g} s")
    if not 0 < number <= _MAX_TIMEOUT_S:
        raise DefinitionError(field, f"{value!r} is not between 0 and {_MAX_TIMEOUT_S:g} s")
    return number


def _sleep_level(value: Any) -> int:
    if value not in SLEEP_LEVELS or isinstance(value, bool) or not isinstance(value, int):
        raise DefinitionError(
            "sleep_level",
            f"{value!r} is not 1 (weights to CPU memory) or 2 (weights dropped, reloaded "
            "from disk on a wake)",
        )
    return value
