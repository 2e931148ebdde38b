"""Deployments and the model servers behind them: backends, metrics, GPU inventory.

- ``service``: ``Fleet``, the facade: deployments, deployer, events, audit, insights,
  metrics, removal hooks, system jobs.
- ``deployment`` / ``deployments`` / ``definition``: the typed row, the repository, checks.
- ``deployer`` / ``fit`` / ``recorder`` / ``reattach``: actions under per-deployment locks,
  the fit check and eviction plans, how actions are written down, finding servers again.
- ``events`` / ``audit`` / ``insights`` / ``rollups``: what happened, who did what, what a
  person should know, per-minute metrics and request activity.
- ``config`` / ``demo``: the GPUs of ``config.json``; ``dgxmm serve --demo``.
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
    from dgxmm.fleet.audit import Audit, AuditEntry
    from dgxmm.fleet.backend import (
        Backend,
        BackendKind,
        Health,
        HealthCheck,
        HttpTimeouts,
        StopOutcome,
        wait_until_healthy,
    )
    from dgxmm.fleet.config import configured_gpus, discover_inventory
    from dgxmm.fleet.demo import Demo, prepare_demo_gpus
    from dgxmm.fleet.deployer import Deployer
    from dgxmm.fleet.deployment import Deployment, DeploymentState
    from dgxmm.fleet.deployments import DeploymentRepo
    from dgxmm.fleet.events import Event, EventAction, EventOutcome, Events
    from dgxmm.fleet.external import ExternalBackend
    from dgxmm.fleet.fit import Eviction, EvictionAction, Fit, GpuFit, Holding, Plan
    from dgxmm.fleet.insights import Insight, Insights, Severity
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
    from dgxmm.fleet.recorder import ActionResult
    from dgxmm.fleet.rollups import Metrics, Rollup
    from dgxmm.fleet.service import METRICS_PURGE, METRICS_ROLLUP, Fleet, RemovalHook

_HOMES = {
    "Audit": "audit",
    "AuditEntry": "audit",
    "configured_gpus": "config",
    "discover_inventory": "config",
    "Deployer": "deployer",
    "Demo": "demo",
    "prepare_demo_gpus": "demo",
    "Deployment": "deployment",
    "DeploymentState": "deployment",
    "DeploymentRepo": "deployments",
    "Event": "events",
    "EventAction": "events",
    "EventOutcome": "events",
    "Events": "events",
    "Eviction": "fit",
    "EvictionAction": "fit",
    "Fit": "fit",
    "GpuFit": "fit",
    "Holding": "fit",
    "Plan": "fit",
    "Insight": "insights",
    "Insights": "insights",
    "Severity": "insights",
    "ActionResult": "recorder",
    "Metrics": "rollups",
    "Rollup": "rollups",
    "METRICS_PURGE": "service",
    "METRICS_ROLLUP": "service",
    "Fleet": "service",
    "RemovalHook": "service",
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
    "METRICS_PURGE",
    "METRICS_ROLLUP",
    "ActionResult",
    "Audit",
    "AuditEntry",
    "Backend",
    "BackendKind",
    "Demo",
    "Deployer",
    "Deployment",
    "DeploymentRepo",
    "DeploymentState",
    "Event",
    "EventAction",
    "EventOutcome",
    "Events",
    "Eviction",
    "EvictionAction",
    "Exposition",
    "ExternalBackend",
    "Fit",
    "Fleet",
    "Gpu",
    "GpuFit",
    "GpuInventory",
    "Health",
    "HealthCheck",
    "Holding",
    "HttpTimeouts",
    "Insight",
    "Insights",
    "InventorySource",
    "Metrics",
    "MetricsDelta",
    "MetricsSample",
    "NvmlReader",
    "NvmlReading",
    "Plan",
    "ProcessBackend",
    "ProcessSpec",
    "RemovalHook",
    "Rollup",
    "Series",
    "Severity",
    "SleepState",
    "StopOutcome",
    "configured_gpus",
    "delta_between",
    "discover_inventory",
    "parse_exposition",
    "parse_gpu_config",
    "prepare_demo_gpus",
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
