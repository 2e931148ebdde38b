"""Deployments and the model servers behind them: backends, metrics, GPU inventory.

- ``backend``: the ``Backend`` protocol, health and stop outcomes, the start-up gate
  ``wait_until_healthy``.
- ``process`` / ``external``: the two backends; ``client``: vLLM's HTTP surface via httpx.
- ``metrics`` / ``prometheus``: ``/metrics`` read into a ``MetricsSample``; deltas.
- ``inventory``: the machine's GPUs, from NVML or the configuration.
- ``standin``: ``python -m dgxmm.fleet.standin``, a stand-in for vLLM.

Names are re-exported lazily (PEP 562): ``python -m dgxmm.fleet.standin`` imports this
package first, and the stand-in must start fast, without httpx and its dependencies.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dgxmm.fleet.backend import (
        Backend,
        BackendKind,
        Health,
        HealthCheck,
        HttpTimeouts,
        StopOutcome,
        wait_until_healthy,
    )
    from dgxmm.fleet.external import ExternalBackend
    from dgxmm.fleet.inventory import (
        Gpu,
        GpuInventory,
        InventorySource,
        NvmlReader,
        NvmlReading,
        parse_gpu_config,
        read_nvml,
    )
    from dgxmm.fleet.metrics import (
        MetricsDelta,
        MetricsSample,
        SleepState,
        delta_between,
        sample_from_text,
    )
    from dgxmm.fleet.process import ProcessBackend, ProcessSpec
    from dgxmm.fleet.prometheus import Exposition, Series, parse_exposition

_HOMES = {
    "Backend": "backend",
    "BackendKind": "backend",
    "Health": "backend",
    "HealthCheck": "backend",
    "HttpTimeouts": "backend",
    "StopOutcome": "backend",
    "wait_until_healthy": "backend",
    "ExternalBackend": "external",
    "Gpu": "inventory",
    "GpuInventory": "inventory",
    "InventorySource": "inventory",
    "NvmlReader": "inventory",
    "NvmlReading": "inventory",
    "parse_gpu_config": "inventory",
    "read_nvml": "inventory",
    "MetricsDelta": "metrics",
    "MetricsSample": "metrics",
    "SleepState": "metrics",
    "delta_between": "metrics",
    "sample_from_text": "metrics",
    "ProcessBackend": "process",
    "ProcessSpec": "process",
    "Exposition": "prometheus",
    "Series": "prometheus",
    "parse_exposition": "prometheus",
}

__all__ = [
    "Backend",
    "BackendKind",
    "Exposition",
    "ExternalBackend",
    "Gpu",
    "GpuInventory",
    "Health",
    "HealthCheck",
    "HttpTimeouts",
    "InventorySource",
    "MetricsDelta",
    "MetricsSample",
    "NvmlReader",
    "NvmlReading",
    "ProcessBackend",
    "ProcessSpec",
    "Series",
    "SleepState",
    "StopOutcome",
    "delta_between",
    "parse_exposition",
    "parse_gpu_config",
    "read_nvml",
    "sample_from_text",
    "wait_until_healthy",
]


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'dgxmm.fleet' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"dgxmm.fleet.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
