"""The fleet's part of ``<data_dir>/config.json``: the GPUs to use where NVML finds none.

    {"gpus": [{"index": 0, "name": "H100", "memory_gib": 80}, {"index": 1, "memory_gib": 80}]}

A missing file means no configured GPUs. A file that is not JSON, or a GPU entry that cannot
be used, is refused naming the place (``config.json: gpus[1].memory_gib: ...``) rather than
read as "no GPUs": a typo must not make every deployment refuse to start for another reason.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dgxmm.errors import DefinitionError
from dgxmm.fleet.placement.inventory import Gpu, GpuInventory, NvmlReader, parse_gpu_config

__all__ = ["CONFIG_NAME", "configured_gpus", "discover_inventory", "read_config", "write_gpus"]

CONFIG_NAME = "config.json"


def read_config(data_dir: Path) -> dict[str, Any]:
    """Return the configuration object, or an empty one when there is no file."""
    path = data_dir / CONFIG_NAME
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    try:
        config = json.loads(text)
    except ValueError as error:
        raise DefinitionError(CONFIG_NAME, f"{path} is not valid JSON: {error}") from None
    if not isinstance(config, dict):
        raise DefinitionError(CONFIG_NAME, f"{path} must hold a JSON object")
    return config


def configured_gpus(data_dir: Path) -> tuple[Gpu, ...]:
    """Return the GPUs listed in the configuration."""
    entries = read_config(data_dir).get("gpus", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise DefinitionError(f"{CONFIG_NAME}: gpus", "must be a list of objects")
    try:
        return parse_gpu_config(entries)
    except DefinitionError as error:
        raise DefinitionError(f"{CONFIG_NAME}: {error.field}", error.message) from None


def discover_inventory(data_dir: Path, *, nvml: NvmlReader | None = None) -> GpuInventory:
    """Return the machine's GPUs: NVML's where it finds some, else the configured ones."""
    return GpuInventory.discover(configured_gpus(data_dir), nvml=nvml)


def write_gpus(data_dir: Path, gpus: Sequence[Gpu]) -> Path:
    """Write the GPU list into the configuration, keeping its other keys; return the file."""
    config = read_config(data_dir)
    config["gpus"] = [
        {"index": gpu.index, "name": gpu.name, "memory_gib": gpu.memory_gib} for gpu in gpus
    ]
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / CONFIG_NAME
    temporary = path.with_name(CONFIG_NAME + ".tmp")
    temporary.write_text(json.dumps(config, indent=2) + "\n")
    os.replace(temporary, path)
    return path
