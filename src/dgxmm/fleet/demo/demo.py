"""``dgxmm serve --demo``: three stand-in deployments and a little traffic, within a minute.

- Where NVML finds no GPU and ``config.json`` lists none, two pretend GPUs are written into
  ``config.json`` (and said so), so that the fit check has something to count.
- Three process deployments (``models.py``) run the stand-in (``python -m dgxmm.standin``) on free
  local ports, with different priorities, memory and latency; they are created once and
  found by name on later runs (a stopped one gets a free port again).
- Before they start, four weeks of synthetic rollups are written for them (a weekday
  office-hours pattern; minutes that have a measured rollup keep it), and an insight per
  deployment says so, which its pages show as "synthetic": the heat map is full and the
  ``after_history`` hook (``serve`` rebuilds the profiles and proposes, each proposal with its
  backtest) leaves proposals waiting at once. The same weeks' sleeps, wakes and proxy
  requests are written too (``history.py``: asleep by its idle ladder after the day's last
  request, the first request of a working morning held while it wakes), so the savings page
  (``/savings``) has four weeks to show, told only with the deployment's own settings.
- They are started on a thread of their own (the server answers meanwhile), and a thread per
  busy deployment sends chat completions to it, at a rate that rises and falls over ten
  minutes, so the rollups, charts and request activity fill in. With a proxy (``serve
  --proxy-port``) they go through it, as a client's would: the Proxy page counts them, and
  ``demo-code``, whose traffic comes in bursts, is put to sleep by its idle ladder between
  two and woken by the next one's first request. ``demo-batch`` gets
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
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import update

from dgxmm.errors import DgxmmError, NotFound
from dgxmm.fleet.activity import Minute
from dgxmm.fleet.backends.protocol import BackendKind
from dgxmm.fleet.demo.history import synthetic_rollups, synthetic_story
from dgxmm.fleet.demo.local_cluster import LocalNode
from dgxmm.fleet.demo.models import DEMO_GPUS, DEMO_MODELS, DEMO_RAY_NODES, DemoModel
from dgxmm.fleet.deployments.deployment import Deployment, DeploymentState
from dgxmm.fleet.deployments.events import EventAction, EventOutcome
from dgxmm.fleet.deployments.insights import InsightKind, Severity
from dgxmm.fleet.deployments.tables import deployments as deployments_table
from dgxmm.fleet.metrics import Rollup
from dgxmm.fleet.placement.config import configured_gpus, write_gpus
from dgxmm.fleet.placement.inventory import NvmlReader, read_nvml
from dgxmm.fleet.service import Fleet
from dgxmm.store import writing
from dgxmm.time_units import DAY_US, MINUTE_US, SECOND_US
from dgxmm.words import counted

__all__ = ["Demo", "prepare_demo_gpus", "synthetic_note"]

ACTOR = "system"
_WAVE_S = 600.0  # the traffic rises and falls over ten minutes
_YIELD_S = 0.05  # between two days of synthetic request minutes: the others' turn to write
HISTORY_DAYS = 28
HISTORY_KEY = "demo-history"  # the insight of a deployment whose history is synthetic


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
        proxy_url: str | None = None,
    ) -> None:
        self._fleet = fleet
        # Where the proxy listens (serve's --proxy-port): the traffic goes through it, as a
        # client's would, so the proxy counts it and wakes a sleeping deployment for it.
        self._proxy_url = proxy_url
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
            f"goes through. {self._traffic_words()} They are not models, {self._where()}, "
            "and the four weeks of traffic before now are synthetic; stop dgxmm to end the "
            "demo.",
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

    def _traffic_words(self) -> str:
        code = next(m for m in DEMO_MODELS if m.burst_s is not None)
        if self._proxy_url is None:
            return (
                f"{code.name}'s traffic comes in bursts and its idle ladder puts it to sleep "
                f"after {code.idle_sleep_after_s:g} s without one; with no proxy here "
                "(serve --proxy-port) nothing wakes it but a person or a schedule."
            )
        return (
            f"The traffic goes through the proxy at {self._proxy_url}/v1. {code.name}'s comes "
            f"in bursts: its idle ladder puts it to sleep after {code.idle_sleep_after_s:g} s "
            "without a request, and the next burst's first request wakes it."
        )

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
            return self._idle_as_given(found, model)
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
            idle_sleep_after_s=model.idle_sleep_after_s,
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
            return self._idle_as_given(found, model)
        return self._fleet.deployments.create(
            actor=ACTOR,
            name=model.name,
            model=model.model,
            **run,
            memory_gib_awake=round(model.awake_share * node.gpu_memory_gib, 1),
            memory_gib_asleep=round(model.asleep_share * node.gpu_memory_gib, 1),
            priority=model.priority,
            startup_timeout_s=120.0,  # Ray starts a worker for the actor first
            idle_sleep_after_s=model.idle_sleep_after_s,
        )

    def _idle_as_given(self, found: Deployment, model: DemoModel) -> Deployment:
        """Give a demo deployment found from an earlier run this run's idle ladder."""
        wanted = round(model.idle_sleep_after_s * SECOND_US)
        if found.idle.sleep_after_us == wanted:
            return found
        return self._fleet.deployments.update(
            found.id, ACTOR, idle_sleep_after_s=model.idle_sleep_after_s
        )

    def write_history(self, now_us: int) -> int:
        """Write the synthetic weeks before ``now_us`` for each demo deployment; return rows."""
        written = 0
        since = now_us - now_us % MINUTE_US - HISTORY_DAYS * DAY_US
        for model, deployment in zip(DEMO_MODELS, self.deployments, strict=True):
            rows = synthetic_rollups(model, deployment, since, now_us - MINUTE_US)
            written += self._fleet.metrics.write_history(rows)
            self._write_savings(model, deployment, rows, since)
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

    def _write_savings(
        self, model: DemoModel, deployment: Deployment, rows: list[Rollup], since: int
    ) -> None:
        """Write the synthetic weeks' sleeps, wakes and proxy requests, once per deployment.

        The story the savings page tells (``/savings``), in ``history.synthetic_story``: its
        idle ladder puts it to sleep after its last request of a day, and the next working
        morning's first request wakes it through the proxy. Its requests are the synthetic
        rollups' own. The deployment is dated back to the weeks' start, so the report counts
        them; a second run finds its history written and writes nothing.
        """
        fleet = self._fleet
        # Any state change at all: an earlier run wrote the history, then started it. (Asking
        # for the last one before time 0 found none, so every restart wrote the weeks again:
        # each evening's sleep twice, and a transaction long enough to make the host's first
        # tick give up on the lock.)
        if fleet.events.state_changes(deployment.id, 0, fleet.clock.now_us() + 1)[1]:
            return
        events, minutes = synthetic_story(
            rows, sleep_after_us=round(model.idle_sleep_after_s * SECOND_US)
        )
        note = " (synthetic demo history)"
        start = EventAction.START
        with writing(fleet.store.engine) as connection:  # a few hundred rows: one transaction
            connection.execute(
                update(deployments_table)
                .where(deployments_table.c.id == deployment.id)
                .values(created_at=min(deployment.created_at, since))
            )
            fleet.events.record(
                deployment.id, start, actor=ACTOR, outcome=EventOutcome.DONE,
                detail=f"{start.value}{note}", state=DeploymentState.RUNNING.value, at_us=since,
                connection=connection,
            )  # fmt: skip
            for event in events:
                took = None if event.ready_us is None else (event.ready_us, 1)
                fleet.events.record(
                    deployment.id, event.action, actor=event.actor, outcome=EventOutcome.DONE,
                    detail=f"{event.action.value}{note}", state=event.state.value,
                    at_us=event.at_us, took=took, connection=connection,
                )  # fmt: skip
        # A day at a time, with a pause between two: four weeks in one transaction held the
        # write lock for seconds, and back-to-back ones starved the host's tick of it (SQLite
        # lets no waiter in line): its writes waited past BUSY_TIMEOUT_MS.
        days: dict[int, dict[tuple[int, int], Minute]] = {}
        for at, minute in minutes.items():
            days.setdefault(at // DAY_US, {})[(deployment.id, at)] = minute
        for day in days.values():
            fleet.request_minutes.add(day)
            if self._stopping.wait(_YIELD_S):
                return

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
                elapsed = time.monotonic() - began
                pause = _pause_left(model, elapsed)
                if pause > 0:
                    if self._stopping.wait(pause):
                        return
                    continue
                phase = math.sin(2 * math.pi * elapsed / _WAVE_S)
                rate = model.requests_per_s * (0.55 + 0.45 * phase)
                if self._stopping.wait(pick.expovariate(max(rate, 0.01))):
                    return
                try:
                    deployment = self._fleet.deployments.get(deployment_id)
                except DgxmmError:
                    return  # removed
                url = self._completions_url(deployment)
                if url is None:
                    continue
                try:
                    client.post(url, json=body)
                except httpx.HTTPError:
                    continue  # stopped or asleep meanwhile: the next one will tell

    def _completions_url(self, deployment: Deployment) -> str | None:
        """Return where a request for ``deployment`` goes now (None: nowhere, skip it).

        Through the proxy while it runs or sleeps (the proxy wakes it); not while stopped or
        failed, which a request does not undo. Without a proxy, to its server while it runs.
        """
        if self._proxy_url is not None:
            if deployment.state in (DeploymentState.STOPPED, DeploymentState.FAILED):
                return None
            return f"{self._proxy_url}/v1/chat/completions"
        if deployment.state is not DeploymentState.RUNNING:
            return None
        return f"{deployment.url}/v1/chat/completions"


def _pause_left(model: DemoModel, elapsed_s: float) -> float:
    """Return the seconds left of a pause between two bursts (0: within a burst)."""
    if model.burst_s is None:
        return 0.0
    cycle = model.burst_s + model.pause_s
    into = elapsed_s % cycle
    return 0.0 if into < model.burst_s else cycle - into


def synthetic_note(fleet: Fleet, deployment_id: int) -> str | None:
    """Return what the demo said of a deployment's synthetic history (None: it has none)."""
    key = f"{HISTORY_KEY}-{deployment_id}"
    found = fleet.insights.list(True, deployment_id=deployment_id)
    return next((i.message for i in found if i.key == key), None)
