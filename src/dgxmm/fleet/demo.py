"""``dgxmm serve --demo``: three stand-in deployments and a little traffic, within a minute.

- Where NVML finds no GPU and ``config.json`` lists none, two pretend GPUs are written into
  ``config.json`` (and said so), so that the fit check has something to count.
- Three process deployments run the stand-in (``python -m dgxmm.standin``) on free
  local ports, with different priorities, memory and latency; they are created once and
  found by name on later runs (a stopped one gets a free port again).
- They are started on a thread of their own (the server answers meanwhile), and a thread per
  deployment sends chat completions to it while it runs, at a rate that rises and falls over
  ten minutes, so the rollups, charts and request activity fill in.
- When dgxmm stops, the demo stops its deployments: they are throwaway stand-ins, unlike
  real model servers, which outlive dgxmm.
"""

from __future__ import annotations

import math
import random
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from dgxmm.errors import DgxmmError, NotFound
from dgxmm.fleet.config import configured_gpus, write_gpus
from dgxmm.fleet.deployment import Deployment, DeploymentState
from dgxmm.fleet.insights import InsightKind, Severity
from dgxmm.fleet.inventory import Gpu, NvmlReader, read_nvml
from dgxmm.fleet.service import Fleet

__all__ = ["DEMO_GPUS", "DEMO_MODELS", "Demo", "DemoModel", "prepare_demo_gpus"]

ACTOR = "system"
DEMO_GPUS = (
    Gpu(index=0, name="demo GPU (pretend)", memory_gib=80.0),
    Gpu(index=1, name="demo GPU (pretend)", memory_gib=48.0),
)
_WAVE_S = 600.0  # the traffic rises and falls over ten minutes


@dataclass(frozen=True, slots=True, kw_only=True)
class DemoModel:
    """One demo deployment: what it pretends to serve and how busy it is."""

    name: str
    model: str
    gpu: int  # the position in the inventory (the last GPU when there are fewer)
    awake_share: float  # of its GPU's memory
    asleep_share: float
    priority: int
    latency_ms: int
    requests_per_s: float  # at the top of the wave


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
    ),
    DemoModel(
        name="demo-batch",
        model="demo/batch-13b",
        gpu=1,
        awake_share=0.6,
        asleep_share=0.05,
        priority=20,
        latency_ms=900,
        requests_per_s=0.3,
    ),
)


def prepare_demo_gpus(data_dir: Path, *, nvml: NvmlReader = read_nvml) -> bool:
    """Write the pretend GPUs into config.json when neither NVML nor it has any."""
    if configured_gpus(data_dir) or nvml().gpus:
        return False
    write_gpus(data_dir, DEMO_GPUS)
    return True


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class Demo:
    """The demo's deployments and traffic; ``start`` returns at once, ``stop`` ends both."""

    def __init__(self, fleet: Fleet, *, say: Callable[[str], None] = print) -> None:
        self._fleet = fleet
        self._say = say
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self.deployments: list[Deployment] = []

    def start(self) -> None:
        """Create (or find) the demo deployments, start them and the traffic, in threads."""
        self.deployments = [self._ensure(model) for model in DEMO_MODELS]
        starter = threading.Thread(target=self._start_all, name="dgxmm-demo-start", daemon=True)
        self._threads.append(starter)
        starter.start()
        for model, deployment in zip(DEMO_MODELS, self.deployments, strict=True):
            thread = threading.Thread(
                target=self._traffic,
                args=(model, deployment.id),
                name=f"dgxmm-demo-traffic-{model.name}",
                daemon=True,
            )
            self._threads.append(thread)
            thread.start()
        self._fleet.insights.raise_insight(
            InsightKind.DEMO,
            deployment_id=None,
            severity=Severity.INFO,
            message="Demo: three stand-in deployments (demo-chat, demo-code, demo-batch) "
            "get a little traffic. They are not models, and the GPUs in config.json are "
            "pretend; stop dgxmm to end the demo.",
            key="demo",
        )

    def stop(self) -> None:
        """Stop the traffic and the demo's deployments."""
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout=30)
        for deployment in self.deployments:
            try:
                self._fleet.deployer.stop(deployment.id, actor=ACTOR)
            except DgxmmError as error:
                self._say(f"dgxmm demo: stopping {deployment.name}: {error}")

    def _ensure(self, model: DemoModel) -> Deployment:
        inventory = self._fleet.inventory
        gpu = inventory.gpus[min(model.gpu, len(inventory.gpus) - 1)] if inventory.gpus else None
        try:
            found = self._fleet.deployments.by_name(model.name)
        except NotFound:
            found = None
        if found is not None:
            at_rest = found.state in (DeploymentState.STOPPED, DeploymentState.FAILED)
            if at_rest and found.port is not None and not _is_free(found.port):
                found = self._fleet.deployments.update(found.id, ACTOR, port=_free_port())
            return found
        return self._fleet.deployments.create(
            actor=ACTOR,
            name=model.name,
            model=model.model,
            backend="process",
            command=[
                sys.executable,
                "-m",
                "dgxmm.standin",
                "--port",
                "{port}",
                "--model",
                model.model,
                "--latency",
                str(model.latency_ms),
            ],
            port=_free_port(),
            gpus=[gpu.index] if gpu else [],
            memory_gib_awake=round(model.awake_share * gpu.memory_gib, 1) if gpu else 0.0,
            memory_gib_asleep=round(model.asleep_share * gpu.memory_gib, 1) if gpu else 0.0,
            priority=model.priority,
            startup_timeout_s=60.0,
        )

    def _start_all(self) -> None:
        for deployment in self.deployments:
            if self._stopping.is_set():
                return
            try:
                result = self._fleet.deployer.start(deployment.id, actor=ACTOR, plans=False)
                self._say(f"dgxmm demo: {deployment.name}: {result.deployment.state.value}")
                # A first sample now: the first minute's rollup then counts its requests.
                self._fleet.metrics.sample_now(deployment.id)
            except DgxmmError as error:
                self._say(f"dgxmm demo: {deployment.name} did not start: {error}")

    def _traffic(self, model: DemoModel, deployment_id: int) -> None:
        pick = random.Random(model.name)
        body = {"model": model.model, "messages": [{"role": "user", "content": "Hello!"}]}
        began = time.monotonic()
        with httpx.Client(timeout=30.0, trust_env=False) as client:
            while not self._stopping.is_set():
                phase = math.sin(2 * math.pi * (time.monotonic() - began) / _WAVE_S)
                rate = model.requests_per_s * (0.55 + 0.45 * phase)
                if self._stopping.wait(pick.expovariate(max(rate, 0.01))):
                    return
                try:
                    deployment = self._fleet.deployments.get(deployment_id)
                except DgxmmError:
                    return  # removed
                if deployment.state is not DeploymentState.RUNNING:
                    continue
                try:
                    client.post(f"{deployment.url}/v1/chat/completions", json=body)
                except httpx.HTTPError:
                    continue  # stopped or asleep meanwhile: the next one will tell
