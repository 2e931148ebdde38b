"""``dgxmm serve --demo``: three stand-in deployments and a little traffic, within a minute.

- Where NVML finds no GPU and ``config.json`` lists none, two pretend GPUs are written into
  ``config.json`` (and said so), so that the fit check has something to count.
- Three process deployments run the stand-in (``python -m dgxmm.standin``) on free
  local ports, with different priorities, memory and latency; they are created once and
  found by name on later runs (a stopped one gets a free port again).
- Before they start, four weeks of synthetic rollups are written for them (a weekday
  office-hours pattern; minutes that have a measured rollup keep it), and an insight per
  deployment says so, which its pages show as "synthetic": the heat map is full and the
  ``after_history`` hook (``serve`` rebuilds the profiles and proposes, each proposal with its
  backtest) leaves proposals waiting at once. The same weeks' sleeps, wakes and proxy
  requests are written too (evenings asleep, the first request of a working morning held
  while it wakes), so the savings page (``/savings``) has four weeks to show.
- They are started on a thread of their own (the server answers meanwhile), and a thread per
  busy deployment sends chat completions to it while it runs, at a rate that rises and falls
  over ten minutes, so the rollups, charts and request activity fill in. ``demo-batch`` gets
  none: once it runs, the ``quiet`` hook (``serve``: a sleep schedule a few minutes on, and
  a wake after it) shows a scheduled sleep going through.
- With ``--ray`` they are ray deployments instead, on a local Ray cluster of two nodes with
  pretend GPUs that ``serve`` starts first (``DEMO_RAY_NODES``): demo-chat and demo-code on
  the first node, demo-batch on the second.
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
from sqlalchemy import update

from dgxmm.clock import from_us
from dgxmm.errors import DgxmmError, NotFound
from dgxmm.fleet.activity import Minute
from dgxmm.fleet.backends.protocol import BackendKind
from dgxmm.fleet.demo.local_cluster import LocalNode
from dgxmm.fleet.deployments.deployment import Deployment, DeploymentState
from dgxmm.fleet.deployments.events import EventAction, EventOutcome
from dgxmm.fleet.deployments.insights import InsightKind, Severity
from dgxmm.fleet.deployments.tables import deployments as deployments_table
from dgxmm.fleet.metrics import Rollup
from dgxmm.fleet.placement.config import configured_gpus, write_gpus
from dgxmm.fleet.placement.inventory import Gpu, NvmlReader, read_nvml
from dgxmm.fleet.service import Fleet
from dgxmm.store import writing
from dgxmm.time_units import DAY_US, MINUTE_US
from dgxmm.words import counted

__all__ = [
    "DEMO_GPUS",
    "DEMO_MODELS",
    "DEMO_RAY_NODES",
    "Demo",
    "DemoModel",
    "prepare_demo_gpus",
    "synthetic_note",
    "synthetic_rollups",
]

ACTOR = "system"
DEMO_GPUS = (
    Gpu(index=0, name="demo GPU (pretend)", memory_gib=80.0),
    Gpu(index=1, name="demo GPU (pretend)", memory_gib=48.0),
)
_WAVE_S = 600.0  # the traffic rises and falls over ten minutes
HISTORY_DAYS = 28
HISTORY_KEY = "demo-history"  # the insight of a deployment whose history is synthetic


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
    requests_per_s: float  # at the top of the wave; 0: quiet (no demo traffic at all)


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
        requests_per_s=0.0,
    ),
)


# The local Ray cluster of ``dgxmm serve --demo --ray``: demo-chat and demo-code on the
# first node, demo-batch on the second.
DEMO_RAY_NODES = (
    LocalNode(name="demo-node-a", num_gpus=2, gpu_memory_gib=80.0),
    LocalNode(name="demo-node-b", num_gpus=2, gpu_memory_gib=48.0),
)


def _command(model: DemoModel, *, host: str = "127.0.0.1") -> list[str]:
    return [
        sys.executable,
        "-m",
        "dgxmm.standin",
        "--host",
        host,
        "--port",
        "{port}",
        "--model",
        model.model,
        "--latency",
        str(model.latency_ms),
    ]


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

    def __init__(
        self,
        fleet: Fleet,
        *,
        say: Callable[[str], None] = print,
        after_history: Callable[[], None] | None = None,
        quiet: Callable[[Deployment], None] | None = None,
        ray_address: str | None = None,
        ray_nodes: Sequence[LocalNode] = DEMO_RAY_NODES,
    ) -> None:
        self._fleet = fleet
        self._ray_address = ray_address  # None: process deployments on this machine
        self._ray_nodes = tuple(ray_nodes)
        self._say = say
        self._after_history = after_history
        self._quiet = quiet
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self.deployments: list[Deployment] = []

    def start(self) -> None:
        """Create (or find) the demo deployments, start them and the traffic, in threads."""
        self.create()
        starter = threading.Thread(target=self._start_all, name="dgxmm-demo-start", daemon=True)
        self._threads.append(starter)
        starter.start()
        for model, deployment in zip(DEMO_MODELS, self.deployments, strict=True):
            if not model.requests_per_s:
                continue
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
            message="Demo: three stand-in deployments (demo-chat, demo-code, demo-batch); "
            "the first two get a little traffic, demo-batch none, so its scheduled sleep "
            f"goes through. They are not models, {self._where()}, and "
            "the four weeks of traffic before now are synthetic; stop dgxmm to end the demo.",
            key="demo",
        )

    def create(self) -> list[Deployment]:
        """Create the demo deployments, or find them and make them what this run asks for."""
        self.deployments = [self._ensure(model) for model in DEMO_MODELS]
        return self.deployments

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

    def _where(self) -> str:
        if self._ray_address is None:
            return "the GPUs in config.json are pretend"
        names = ", ".join(node.name for node in self._ray_nodes)
        return f"they run on a local Ray cluster ({names}) whose GPUs are pretend"

    def _ensure(self, model: DemoModel) -> Deployment:
        if self._ray_address is not None:
            return self._ensure_on_ray(model, self._ray_address)
        inventory = self._fleet.inventory
        gpu = inventory.gpus[min(model.gpu, len(inventory.gpus) - 1)] if inventory.gpus else None
        try:
            found = self._fleet.deployments.by_name(model.name)
        except NotFound:
            found = None
        if found is not None:
            at_rest = found.state in (DeploymentState.STOPPED, DeploymentState.FAILED)
            if at_rest and found.backend is not BackendKind.PROCESS:  # a --ray run's, before
                found = self._fleet.deployments.update(
                    found.id,
                    ACTOR,
                    backend="process",
                    command=_command(model),
                    port=_free_port(),
                    gpus=[gpu.index] if gpu else [],
                )
            if at_rest and found.port is not None and not _is_free(found.port):
                found = self._fleet.deployments.update(found.id, ACTOR, port=_free_port())
            return found
        return self._fleet.deployments.create(
            actor=ACTOR,
            name=model.name,
            model=model.model,
            backend="process",
            command=_command(model),
            port=_free_port(),
            gpus=[gpu.index] if gpu else [],
            memory_gib_awake=round(model.awake_share * gpu.memory_gib, 1) if gpu else 0.0,
            memory_gib_asleep=round(model.asleep_share * gpu.memory_gib, 1) if gpu else 0.0,
            priority=model.priority,
            startup_timeout_s=60.0,
        )

    def _ensure_on_ray(self, model: DemoModel, address: str) -> Deployment:
        """Find or create a demo deployment as a ray one, on its node of the local cluster."""
        node = self._ray_nodes[min(model.gpu, len(self._ray_nodes) - 1)]
        run: dict[str, Any] = {
            "backend": "ray",
            "command": _command(model, host="{host}"),
            "port": None,
            "ray_address": address,  # a new local cluster each run: a new port
            "ray_node": node.name,
            "num_gpus": 1,
        }
        try:
            found = self._fleet.deployments.by_name(model.name)
        except NotFound:
            found = None
        if found is not None:
            if found.state in (DeploymentState.STOPPED, DeploymentState.FAILED):
                found = self._fleet.deployments.update(found.id, ACTOR, gpus=[], **run)
            return found
        return self._fleet.deployments.create(
            actor=ACTOR,
            name=model.name,
            model=model.model,
            **run,
            memory_gib_awake=round(model.awake_share * node.gpu_memory_gib, 1),
            memory_gib_asleep=round(model.asleep_share * node.gpu_memory_gib, 1),
            priority=model.priority,
            startup_timeout_s=120.0,  # Ray starts a worker for the actor first
        )

    def write_history(self, now_us: int) -> int:
        """Write the synthetic weeks before ``now_us`` for each demo deployment; return rows."""
        written = 0
        since = now_us - now_us % MINUTE_US - HISTORY_DAYS * DAY_US
        for model, deployment in zip(DEMO_MODELS, self.deployments, strict=True):
            rows = synthetic_rollups(model, deployment, since, now_us - MINUTE_US)
            written += self._fleet.metrics.write_history(rows)
            self._write_savings(deployment, rows, since)
            self._fleet.insights.raise_insight(
                InsightKind.DEMO,
                deployment_id=deployment.id,
                severity=Severity.INFO,
                message=f"Demo: {deployment.name}'s traffic of the {HISTORY_DAYS} days before "
                "the demo started is synthetic (weekday office hours), written so that its "
                "heat map is full and proposals have weeks to read.",
                key=f"{HISTORY_KEY}-{deployment.id}",
            )
        return written

    def _write_savings(self, deployment: Deployment, rows: list[Rollup], since: int) -> None:
        """Write the synthetic weeks' sleeps, wakes and proxy requests, once per deployment.

        The story the savings page tells (``/savings``): each weekday evening at 19:30 the
        idle ladder puts it to sleep, and the first request of the next working morning wakes
        it through the proxy, held about 2 s; weekends asleep. Its requests are the synthetic
        rollups' own. The deployment is dated back to the weeks' start, so the report counts
        them; a second run finds its history written and writes nothing.
        """
        fleet = self._fleet
        if fleet.events.state_changes(deployment.id, 0, since)[0] is not None:
            return  # written by an earlier run
        zone = ZoneInfo(deployment.time_zone)
        with writing(fleet.store.engine) as connection:
            connection.execute(
                update(deployments_table)
                .where(deployments_table.c.id == deployment.id)
                .values(created_at=min(deployment.created_at, since))
            )
        note = " (synthetic demo history)"

        def event(at: int, action: EventAction, actor: str, state: DeploymentState) -> None:
            fleet.events.record(
                deployment.id, action, actor=actor, outcome=EventOutcome.DONE,
                detail=f"{action.value}{note}", state=state.value, at_us=at,
            )  # fmt: skip

        event(since, EventAction.START, ACTOR, DeploymentState.RUNNING)
        asleep = False
        minutes: dict[tuple[int, int], Minute] = {}
        for rollup in rows:
            local = from_us(rollup.minute_us, zone)
            if rollup.requests and asleep:
                event(rollup.minute_us + 2_000_000, EventAction.WAKE, "request",
                      DeploymentState.RUNNING)  # fmt: skip
                asleep = False
                minutes[(deployment.id, rollup.minute_us)] = Minute(
                    requests=rollup.requests, held=1, waits_ms=[2000]
                )
            elif rollup.requests:
                minutes[(deployment.id, rollup.minute_us)] = Minute(requests=rollup.requests)
            if not asleep and local.hour == 19 and local.minute == 30:
                event(rollup.minute_us, EventAction.SLEEP, "idle", DeploymentState.SLEEPING)
                asleep = True
        fleet.request_minutes.add(minutes)

    def _start_all(self) -> None:
        try:
            written = self.write_history(self._fleet.clock.now_us())
            self._say(
                f"dgxmm demo: wrote {counted(written, 'synthetic minute')} of traffic history"
            )
            if self._after_history is not None:
                self._after_history()
        except DgxmmError as error:
            self._say(f"dgxmm demo: the synthetic history: {error}")
        for model, deployment in zip(DEMO_MODELS, self.deployments, strict=True):
            if self._stopping.is_set():
                return
            try:
                result = self._fleet.deployer.start(deployment.id, actor=ACTOR, plans=False)
                self._say(f"dgxmm demo: {deployment.name}: {result.deployment.state.value}")
                # A first sample now: the first minute's rollup then counts its requests.
                self._fleet.metrics.sample_now(deployment.id)
                if not model.requests_per_s and self._quiet is not None:
                    self._quiet(result.deployment)
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


def synthetic_rollups(
    model: DemoModel, deployment: Deployment, since_us: int, until_us: int
) -> list[Rollup]:
    """Return a minute's rollup for each minute of the span: weekday office hours are busy.

    Busy is Monday to Friday 08:00 to 18:59 in the deployment's zone, a little on Saturday
    mornings for the chat; the rest of the week is idle, which is what proposals look for.
    The numbers are seeded by the deployment's name, so a second run writes the same ones.
    """
    zone = ZoneInfo(deployment.time_zone)
    pick = random.Random(model.name)
    peak = max(model.requests_per_s, 0.2) * 60  # requests a minute at the top of the day
    latency = model.latency_ms / 1000
    rows = []
    at = since_us - since_us % MINUTE_US
    while at < until_us:
        local = from_us(at, zone)
        office = local.weekday() < 5 and 8 <= local.hour < 19
        saturday = model.name == "demo-chat" and local.weekday() == 5 and 9 <= local.hour < 12
        if office or saturday:
            shape = math.sin(math.pi * (local.hour + local.minute / 60 - 8) / 11)
            requests = max(1, round(peak * (0.3 + 0.7 * max(shape, 0.0)) * pick.uniform(0.6, 1.2)))
            seconds = latency * pick.uniform(0.8, 1.4)
            running = requests * seconds / 60
        else:
            requests, seconds, running = 0, None, 0.0
        rows.append(
            Rollup(
                deployment_id=deployment.id,
                minute_us=at,
                requests=requests,
                mean_running=running,
                mean_waiting=0.0,
                mean_latency_s=seconds,
                samples=4,
            )
        )
        at += MINUTE_US
    return rows


def synthetic_note(fleet: Fleet, deployment_id: int) -> str | None:
    """Return what the demo said of a deployment's synthetic history (None: it has none)."""
    key = f"{HISTORY_KEY}-{deployment_id}"
    found = fleet.insights.list(True, deployment_id=deployment_id)
    return next((i.message for i in found if i.key == key), None)
