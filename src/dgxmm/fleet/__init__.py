"""Deployments and the model servers behind them: backends, metrics, GPU placement.

- ``service``: ``Fleet``, the facade: deployments, deployer, events, audit, insights,
  metrics, removal hooks, system jobs.
- ``deployer`` / ``reconciler`` / ``reattach`` / ``activity``: actions under per-deployment
  locks, rows brought up to date with a server found gone or asleep, finding servers again
  after a restart, the requests the proxy counts and the door a take-down shuts.
- ``deployments/``: the typed row, its definition checks, the repository, events, audit,
  insights, the recorder of actions, the server log, the tables.
- ``placement/``: this machine's GPUs (NVML or ``config.json``), the one fit model and the
  eviction plans, and a Ray cluster's nodes with the same fit asked per node.
- ``backends/``: the ``Backend`` protocol, the registry, the process, external and ray backends,
  the HTTP client of vLLM's surface, pid files.
- ``metrics/``: ``/metrics`` read into a ``MetricsSample``, the Prometheus text format,
  per-minute rollups, and ``Metrics``, the service that samples and rolls up.
- ``demo/``: ``dgxmm serve --demo`` and a loopback Ray cluster with pretend GPUs.

The stand-in model server is its own package, ``dgxmm.standin``.
"""

from dgxmm.fleet.activity import Door as Door
from dgxmm.fleet.activity import Entry as Entry
from dgxmm.fleet.activity import RequestActivity as RequestActivity
from dgxmm.fleet.backends import DEFAULT_STOP_GRACE_S as DEFAULT_STOP_GRACE_S
from dgxmm.fleet.backends import LOG_TAIL_MARK as LOG_TAIL_MARK
from dgxmm.fleet.backends import MAX_CONTROL_BYTES as MAX_CONTROL_BYTES
from dgxmm.fleet.backends import Answer as Answer
from dgxmm.fleet.backends import Backend as Backend
from dgxmm.fleet.backends import BackendKind as BackendKind
from dgxmm.fleet.backends import ExternalBackend as ExternalBackend
from dgxmm.fleet.backends import Health as Health
from dgxmm.fleet.backends import HealthCheck as HealthCheck
from dgxmm.fleet.backends import HttpTimeouts as HttpTimeouts
from dgxmm.fleet.backends import PageProcess as PageProcess
from dgxmm.fleet.backends import ProcessBackend as ProcessBackend
from dgxmm.fleet.backends import ProcessSpec as ProcessSpec
from dgxmm.fleet.backends import RayBackend as RayBackend
from dgxmm.fleet.backends import StopOutcome as StopOutcome
from dgxmm.fleet.backends import read_answer as read_answer
from dgxmm.fleet.backends import wait_until_healthy as wait_until_healthy
from dgxmm.fleet.backends.process import LOG_NAME as LOG_NAME
from dgxmm.fleet.demo.demo import Demo as Demo
from dgxmm.fleet.demo.demo import prepare_demo_gpus as prepare_demo_gpus
from dgxmm.fleet.demo.demo import synthetic_note as synthetic_note
from dgxmm.fleet.demo.local_cluster import LocalCluster as LocalCluster
from dgxmm.fleet.demo.local_cluster import LocalNode as LocalNode
from dgxmm.fleet.demo.models import DEMO_RAY_NODES as DEMO_RAY_NODES
from dgxmm.fleet.deployer import Deployer as Deployer
from dgxmm.fleet.deployments.audit import Audit as Audit
from dgxmm.fleet.deployments.audit import AuditAction as AuditAction
from dgxmm.fleet.deployments.audit import AuditEntry as AuditEntry
from dgxmm.fleet.deployments.audit import AuditSubject as AuditSubject
from dgxmm.fleet.deployments.definition import DEFAULT_PRIORITY as DEFAULT_PRIORITY
from dgxmm.fleet.deployments.definition import DEFAULT_SLEEP_LEVEL as DEFAULT_SLEEP_LEVEL
from dgxmm.fleet.deployments.definition import DEFAULT_SLEEP_TIMEOUT_S as DEFAULT_SLEEP_TIMEOUT_S
from dgxmm.fleet.deployments.definition import (
    DEFAULT_STARTUP_TIMEOUT_S as DEFAULT_STARTUP_TIMEOUT_S,
)
from dgxmm.fleet.deployments.definition import check_definition as check_definition
from dgxmm.fleet.deployments.definition import current_keys as current_keys
from dgxmm.fleet.deployments.deployment import Deployment as Deployment
from dgxmm.fleet.deployments.deployment import DeploymentState as DeploymentState
from dgxmm.fleet.deployments.deployment import Placement as Placement
from dgxmm.fleet.deployments.events import IDLE_ACTOR as IDLE_ACTOR
from dgxmm.fleet.deployments.events import REQUEST_ACTOR as REQUEST_ACTOR
from dgxmm.fleet.deployments.events import Event as Event
from dgxmm.fleet.deployments.events import EventAction as EventAction
from dgxmm.fleet.deployments.events import EventOutcome as EventOutcome
from dgxmm.fleet.deployments.events import Events as Events
from dgxmm.fleet.deployments.events import is_policy as is_policy
from dgxmm.fleet.deployments.events import is_schedule as is_schedule
from dgxmm.fleet.deployments.idle import LEAD_OFF as LEAD_OFF
from dgxmm.fleet.deployments.idle import MAX_BUDGET_MEAN_MS as MAX_BUDGET_MEAN_MS
from dgxmm.fleet.deployments.idle import MAX_BUDGET_P99_S as MAX_BUDGET_P99_S
from dgxmm.fleet.deployments.idle import MAX_LEAD_US as MAX_LEAD_US
from dgxmm.fleet.deployments.idle import IdleLadder as IdleLadder
from dgxmm.fleet.deployments.idle import IdlePolicy as IdlePolicy
from dgxmm.fleet.deployments.idle import LeadKind as LeadKind
from dgxmm.fleet.deployments.idle import WaitBudget as WaitBudget
from dgxmm.fleet.deployments.idle import WakeLead as WakeLead
from dgxmm.fleet.deployments.idle import parse_idle_policy as parse_idle_policy
from dgxmm.fleet.deployments.idle import parse_wait_budget as parse_wait_budget
from dgxmm.fleet.deployments.idle import parse_wake_lead as parse_wake_lead
from dgxmm.fleet.deployments.insights import Insight as Insight
from dgxmm.fleet.deployments.insights import InsightKind as InsightKind
from dgxmm.fleet.deployments.insights import Insights as Insights
from dgxmm.fleet.deployments.insights import Severity as Severity
from dgxmm.fleet.deployments.recorder import ActionResult as ActionResult
from dgxmm.fleet.deployments.repo import DeploymentRepo as DeploymentRepo
from dgxmm.fleet.deployments.request_minutes import RequestMinute as RequestMinute
from dgxmm.fleet.deployments.server_log import DEFAULT_TAIL as DEFAULT_TAIL
from dgxmm.fleet.deployments.server_log import MAX_CHUNK as MAX_CHUNK
from dgxmm.fleet.deployments.server_log import LogChunk as LogChunk
from dgxmm.fleet.deployments.server_log import read_log as read_log
from dgxmm.fleet.metrics import Exposition as Exposition
from dgxmm.fleet.metrics import MetricsDelta as MetricsDelta
from dgxmm.fleet.metrics import MetricsSample as MetricsSample
from dgxmm.fleet.metrics import Rollup as Rollup
from dgxmm.fleet.metrics import RollupColumns as RollupColumns
from dgxmm.fleet.metrics import Series as Series
from dgxmm.fleet.metrics import SleepState as SleepState
from dgxmm.fleet.metrics import delta_between as delta_between
from dgxmm.fleet.metrics import parse_exposition as parse_exposition
from dgxmm.fleet.metrics import read_rollup_columns as read_rollup_columns
from dgxmm.fleet.metrics import sample_from_text as sample_from_text
from dgxmm.fleet.metrics.metrics import Metrics as Metrics
from dgxmm.fleet.placement.cluster import ClusterInventory as ClusterInventory
from dgxmm.fleet.placement.cluster import RayCluster as RayCluster
from dgxmm.fleet.placement.cluster import RayNode as RayNode
from dgxmm.fleet.placement.cluster import ray_missing as ray_missing
from dgxmm.fleet.placement.config import configured_gpus as configured_gpus
from dgxmm.fleet.placement.config import discover_inventory as discover_inventory
from dgxmm.fleet.placement.fit import Eviction as Eviction
from dgxmm.fleet.placement.fit import EvictionAction as EvictionAction
from dgxmm.fleet.placement.fit import Fit as Fit
from dgxmm.fleet.placement.fit import GpuFit as GpuFit
from dgxmm.fleet.placement.fit import Holding as Holding
from dgxmm.fleet.placement.fit import Plan as Plan
from dgxmm.fleet.placement.fit import check_fit as check_fit
from dgxmm.fleet.placement.gauges import GaugeReader as GaugeReader
from dgxmm.fleet.placement.gauges import GpuGauge as GpuGauge
from dgxmm.fleet.placement.gauges import GpuGauges as GpuGauges
from dgxmm.fleet.placement.gauges import GpuMeter as GpuMeter
from dgxmm.fleet.placement.gauges import read_gauges as read_gauges
from dgxmm.fleet.placement.inventory import Gpu as Gpu
from dgxmm.fleet.placement.inventory import GpuInventory as GpuInventory
from dgxmm.fleet.placement.inventory import InventorySource as InventorySource
from dgxmm.fleet.placement.inventory import NvmlReader as NvmlReader
from dgxmm.fleet.placement.inventory import NvmlReading as NvmlReading
from dgxmm.fleet.placement.inventory import parse_gpu_config as parse_gpu_config
from dgxmm.fleet.placement.inventory import read_nvml as read_nvml
from dgxmm.fleet.service import METRICS_PURGE as METRICS_PURGE
from dgxmm.fleet.service import METRICS_ROLLUP as METRICS_ROLLUP
from dgxmm.fleet.service import Fleet as Fleet
from dgxmm.fleet.service import LateFinishHook as LateFinishHook
from dgxmm.fleet.service import RemovalHook as RemovalHook

__all__ = [
    "DEFAULT_PRIORITY",
    "DEFAULT_SLEEP_LEVEL",
    "DEFAULT_SLEEP_TIMEOUT_S",
    "DEFAULT_STARTUP_TIMEOUT_S",
    "DEFAULT_STOP_GRACE_S",
    "DEFAULT_TAIL",
    "DEMO_RAY_NODES",
    "IDLE_ACTOR",
    "LEAD_OFF",
    "LOG_NAME",
    "LOG_TAIL_MARK",
    "MAX_BUDGET_MEAN_MS",
    "MAX_BUDGET_P99_S",
    "MAX_CHUNK",
    "MAX_CONTROL_BYTES",
    "MAX_LEAD_US",
    "METRICS_PURGE",
    "METRICS_ROLLUP",
    "REQUEST_ACTOR",
    "ActionResult",
    "Answer",
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
    "GaugeReader",
    "Gpu",
    "GpuFit",
    "GpuGauge",
    "GpuGauges",
    "GpuInventory",
    "GpuMeter",
    "Health",
    "HealthCheck",
    "Holding",
    "HttpTimeouts",
    "IdleLadder",
    "IdlePolicy",
    "Insight",
    "InsightKind",
    "Insights",
    "InventorySource",
    "LateFinishHook",
    "LeadKind",
    "LocalCluster",
    "LocalNode",
    "LogChunk",
    "Metrics",
    "MetricsDelta",
    "MetricsSample",
    "NvmlReader",
    "NvmlReading",
    "PageProcess",
    "Placement",
    "Plan",
    "ProcessBackend",
    "ProcessSpec",
    "RayBackend",
    "RayCluster",
    "RayNode",
    "RemovalHook",
    "RequestActivity",
    "RequestMinute",
    "Rollup",
    "RollupColumns",
    "Series",
    "Severity",
    "SleepState",
    "StopOutcome",
    "WaitBudget",
    "WakeLead",
    "check_definition",
    "check_fit",
    "configured_gpus",
    "current_keys",
    "delta_between",
    "discover_inventory",
    "is_policy",
    "is_schedule",
    "parse_exposition",
    "parse_gpu_config",
    "parse_idle_policy",
    "parse_wait_budget",
    "parse_wake_lead",
    "prepare_demo_gpus",
    "ray_missing",
    "read_answer",
    "read_gauges",
    "read_log",
    "read_nvml",
    "read_rollup_columns",
    "sample_from_text",
    "synthetic_note",
    "wait_until_healthy",
]
