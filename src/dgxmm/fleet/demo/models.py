"""The demo's deployments: what each pretends to serve, how busy it is, when it sleeps.

One table read by the demo's deployments (``demo.py``), its live traffic and its synthetic
history (``history.py``), so that the settings a deployment shows are the ones its history
and its traffic came from.
"""

from __future__ import annotations

from dataclasses import dataclass

from dgxmm.fleet.demo.local_cluster import LocalNode
from dgxmm.fleet.placement.inventory import Gpu

__all__ = ["DEMO_GPUS", "DEMO_MODELS", "DEMO_RAY_NODES", "DemoModel"]

DEMO_GPUS = (
    Gpu(index=0, name="demo GPU (pretend)", memory_gib=80.0),
    Gpu(index=1, name="demo GPU (pretend)", memory_gib=48.0),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class DemoModel:
    """One demo deployment: what it pretends to serve, how busy it is, when it sleeps."""

    name: str
    model: str
    gpu: int  # the position in the inventory (the last GPU when there are fewer)
    awake_share: float  # of its GPU's memory
    asleep_share: float
    priority: int
    latency_ms: int
    requests_per_s: float  # at the top of the wave; 0: quiet (no demo traffic at all)
    # Its idle ladder's one step: asleep at level 1 after this long without a request. The
    # synthetic history's sleeps are this step's, and the live demo's too.
    idle_sleep_after_s: float
    # Live traffic in bursts of burst_s with pause_s of silence between them (None: a
    # steady wave): a pause longer than idle_sleep_after_s lets the idle ladder put it to
    # sleep, and the next burst's first request wakes it through the proxy.
    burst_s: float | None = None
    pause_s: float = 0.0


DEMO_MODELS = (
    DemoModel(
        name="demo-chat",
        model="demo/chat-8b",
        gpu=0,
        awake_share=0.5,
        asleep_share=0.05,
        priority=80,
        latency_ms=400,
        requests_per_s=2.0,
        idle_sleep_after_s=1800.0,
    ),
    DemoModel(
        name="demo-code",
        model="demo/code-7b",
        gpu=0,
        awake_share=0.35,
        asleep_share=0.04,
        priority=50,
        latency_ms=250,
        requests_per_s=1.0,
        idle_sleep_after_s=20.0,
        burst_s=40.0,
        pause_s=60.0,
    ),
    DemoModel(
        name="demo-batch",
        model="demo/batch-13b",
        gpu=1,
        awake_share=0.6,
        asleep_share=0.05,
        priority=20,
        latency_ms=900,
        requests_per_s=0.0,
        idle_sleep_after_s=1800.0,
    ),
)

# The local Ray cluster of ``dgxmm serve --demo --ray``: demo-chat and demo-code on the
# first node, demo-batch on the second.
DEMO_RAY_NODES = (
    LocalNode(name="demo-node-a", num_gpus=2, gpu_memory_gib=80.0),
    LocalNode(name="demo-node-b", num_gpus=2, gpu_memory_gib=48.0),
)
