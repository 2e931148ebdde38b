"""Deployments and the model servers behind them: backends, metrics, GPU inventory.

- ``service``: ``Fleet``, the facade: deployments, deployer, events, audit, insights,
  metrics, removal hooks, system jobs.
- ``deployment`` / ``deployments`` / ``definition``: the typed row, the repository, checks.
- ``deployer`` / ``fit`` / ``recorder`` / ``reattach``: actions under per-deployment locks,
  the fit check and eviction plans, how actions are written down, finding servers again.
- ``activity``: requests through the proxy, per deployment, and the door a take-down shuts.
- ``events`` / ``audit`` / ``insights``: what happened, who did what, what a person should
  know.
- ``config`` / ``demo``: the GPUs of ``config.json``; ``dgxmm serve --demo``.
- ``backends/``: the ``Backend`` protocol, the registry, the process, external and ray backends,
  the HTTP client of vLLM's surface, pid files.
- ``metrics/``: ``/metrics`` read into a ``MetricsSample``, the Prometheus text format,
  per-minute rollups, and ``Metrics``, the service that samples and rolls up.
- ``inventory``: the machine's GPUs, from NVML or the configuration.
- ``cluster`` / ``placement`` / ``local_cluster``: a Ray cluster's nodes and their GPUs, the
  per-node fit check and plans of ray deployments, a loopback cluster with pretend GPUs.

The stand-in model server is its own package, ``dgxmm.standin``.
"""

from dgxmm.fleet.activity import Door as Door
from dgxmm.fleet.activity import Entry as Entry
from dgxmm.fleet.activity import RequestActivity as RequestActivity
from dgxmm.fleet.audit import Audit as Audit
from dgxmm.fleet.audit import AuditAction as AuditAction
from dgxmm.fleet.audit import AuditEntry as AuditEntry
from dgxmm.fleet.audit import AuditSubject as AuditSubject
from dgxmm.fleet.backends import Backend as Backend
from dgxmm.fleet.backends import BackendKind as BackendKind
from dgxmm.fleet.backends import ExternalBackend as ExternalBackend
from dgxmm.fleet.backends import Health as Health
from dgxmm.fleet.backends import HealthCheck as HealthCheck
from dgxmm.fleet.backends import HttpTimeouts as HttpTimeouts
from dgxmm.fleet.backends import ProcessBackend as ProcessBackend
from dgxmm.fleet.backends import ProcessSpec as ProcessSpec
from dgxmm.fleet.backends import RayBackend as RayBackend
from dgxmm.fleet.backends import StopOutcome as StopOutcome
from dgxmm.fleet.backends import wait_until_healthy as wait_until_healthy
from dgxmm.fleet.cluster import ClusterInventory as ClusterInventory
from dgxmm.fleet.cluster import RayCluster as RayCluster
from dgxmm.fleet.cluster import RayNode as RayNode
from dgxmm.fleet.config import configured_gpus as configured_gpus
from dgxmm.fleet.config import discover_inventory as discover_inventory
from dgxmm.fleet.demo import Demo as Demo
from dgxmm.fleet.demo import prepare_demo_gpus as prepare_demo_gpus
from dgxmm.fleet.deployer import Deployer as Deployer
from dgxmm.fleet.deployment import Deployment as Deployment
from dgxmm.fleet.deployment import DeploymentState as DeploymentState
from dgxmm.fleet.deployment import Placement as Placement
from dgxmm.fleet.deployments import DeploymentRepo as DeploymentRepo
from dgxmm.fleet.events import Event as Event
from dgxmm.fleet.events import EventAction as EventAction
from dgxmm.fleet.events import EventOutcome as EventOutcome
from dgxmm.fleet.events import Events as Events
from dgxmm.fleet.fit import Eviction as Eviction
from dgxmm.fleet.fit import EvictionAction as EvictionAction
from dgxmm.fleet.fit import Fit as Fit
from dgxmm.fleet.fit import GpuFit as GpuFit
from dgxmm.fleet.fit import Holding as Holding
from dgxmm.fleet.fit import Plan as Plan
from dgxmm.fleet.insights import Insight as Insight
from dgxmm.fleet.insights import InsightKind as InsightKind
from dgxmm.fleet.insights import Insights as Insights
from dgxmm.fleet.insights import Severity as Severity
from dgxmm.fleet.inventory import Gpu as Gpu
from dgxmm.fleet.inventory import GpuInventory as GpuInventory
from dgxmm.fleet.inventory import InventorySource as InventorySource
from dgxmm.fleet.inventory import NvmlReader as NvmlReader
from dgxmm.fleet.inventory import NvmlReading as NvmlReading
from dgxmm.fleet.inventory import parse_gpu_config as parse_gpu_config
from dgxmm.fleet.inventory import read_nvml as read_nvml
from dgxmm.fleet.local_cluster import LocalCluster as LocalCluster
from dgxmm.fleet.local_cluster import LocalNode as LocalNode
from dgxmm.fleet.metrics import Exposition as Exposition
from dgxmm.fleet.metrics import MetricsDelta as MetricsDelta
from dgxmm.fleet.metrics import MetricsSample as MetricsSample
from dgxmm.fleet.metrics import Rollup as Rollup
from dgxmm.fleet.metrics import Series as Series
from dgxmm.fleet.metrics import SleepState as SleepState
from dgxmm.fleet.metrics import delta_between as delta_between
from dgxmm.fleet.metrics import parse_exposition as parse_exposition
from dgxmm.fleet.metrics import sample_from_text as sample_from_text
from dgxmm.fleet.metrics.metrics import Metrics as Metrics
from dgxmm.fleet.recorder import ActionResult as ActionResult
from dgxmm.fleet.server_log import LogChunk as LogChunk
from dgxmm.fleet.server_log import read_log as read_log
from dgxmm.fleet.service import METRICS_PURGE as METRICS_PURGE
from dgxmm.fleet.service import METRICS_ROLLUP as METRICS_ROLLUP
from dgxmm.fleet.service import Fleet as Fleet
from dgxmm.fleet.service import RemovalHook as RemovalHook

__all__ = [
    "METRICS_PURGE",
    "METRICS_ROLLUP",
    "ActionResult",
    "Audit",
    "AuditAction",
    "AuditEntry",
    "AuditSubject",
    "Backend",
    "BackendKind",
    "ClusterInventory",
    "Demo",
    "Deployer",
    "Deployment",
    "DeploymentRepo",
    "DeploymentState",
    "Door",
    "Entry",
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
    "InsightKind",
    "Insights",
    "InventorySource",
    "LocalCluster",
    "LocalNode",
    "LogChunk",
    "Metrics",
    "MetricsDelta",
    "MetricsSample",
    "NvmlReader",
    "NvmlReading",
    "Placement",
    "Plan",
    "ProcessBackend",
    "ProcessSpec",
    "RayBackend",
    "RayCluster",
    "RayNode",
    "RemovalHook",
    "RequestActivity",
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
    "read_log",
    "read_nvml",
    "sample_from_text",
    "wait_until_healthy",
]
