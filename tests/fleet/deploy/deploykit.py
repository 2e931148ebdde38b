"""Helpers for the fleet service tests: the keys of a stand-in deployment.

Import as `from deploy.deploykit import standin`."""

from __future__ import annotations

from typing import Any

from fleetkit import STANDIN, free_port


def standin(
    name: str,
    *args: str,
    gpus: tuple[int, ...] = (0,),
    awake: float = 40.0,
    asleep: float = 4.0,
    priority: int = 50,
    timeout: float = 60.0,
) -> dict[str, Any]:
    """Return the keys of a process deployment that runs a stand-in on a free port."""
    return {
        "name": name,
        "model": f"{name}-model",
        "backend": "process",
        "command": [*STANDIN, "--port", "{port}", "--model", f"{name}-model", *args],
        "port": free_port(),
        "gpus": list(gpus),
        "memory_gib_awake": awake,
        "memory_gib_asleep": asleep,
        "priority": priority,
        "startup_timeout_s": timeout,
    }
