"""``Fleet``: the deployments of one dgxmm, with everything that drives and watches them.

Built once per process (``dgxmm serve`` does it after opening the store); it finds the
servers of its deployments again at once (``reattach``), so a restarted dgxmm knows what
runs. Its parts are public attributes: ``deployments``, ``deployer``, ``reconciler`` (what
the metrics pass finds gone or asleep, written down), ``events``, ``audit``, ``insights``,
``metrics``, ``activity`` (requests through the proxy). ``system_jobs()``
returns ``metrics_rollup`` and ``metrics_purge`` for the host to schedule; ``close()``
releases HTTP connections and leaves the model servers running (they outlive dgxmm).
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from sqlalchemy import Connection, delete

from dgxmm.clock import Clock
from dgxmm.errors import DgxmmError, NotFound
from dgxmm.fleet.activity import RequestActivity
from dgxmm.fleet.backends.pages import Pages
from dgxmm.fleet.backends.protocol import DEFAULT_STOP_GRACE_S, BackendKind, HttpTimeouts
from dgxmm.fleet.backends.registry import Backends
from dgxmm.fleet.deployer import Deployer
from dgxmm.fleet.deployments.audit import Audit, AuditAction, AuditSubject
from dgxmm.fleet.deployments.deployment import Deployment, DeploymentState
from dgxmm.fleet.deployments.events import Events
from dgxmm.fleet.deployments.insights import InsightKind, Insights, Severity
from dgxmm.fleet.deployments.recorder import ActionRecorder, ActionResult
from dgxmm.fleet.deployments.repo import DeploymentRepo
from dgxmm.fleet.deployments.request_minutes import RETENTION_DAYS, RequestMinutes
from dgxmm.fleet.deployments.tables import audit_log, deployment_events, insights
from dgxmm.fleet.deployments.tables import deployments as deployments_table
from dgxmm.fleet.metrics.metrics import Metrics
from dgxmm.fleet.metrics.rollups import DEFAULT_RETENTION_DAYS, RETENTION_SETTING
from dgxmm.fleet.placement.cluster import RayCluster, RayNode
from dgxmm.fleet.placement.fit import Holding, gpu_holdings
from dgxmm.fleet.placement.gauges import GaugeReader, GpuMeter, read_gauges
from dgxmm.fleet.placement.inventory import Gpu, GpuInventory, InventorySource
from dgxmm.fleet.placement.nodes import node_holdings
from dgxmm.fleet.reattach import reattach
from dgxmm.fleet.reconciler import Reconciler
from dgxmm.fleet.settling import Settling, Unsettled
from dgxmm.jobs import CronSchedule, Job, JobKind, RunContext
from dgxmm.store import Store, Topic, writing
from dgxmm.telemetry import NO_TELEMETRY, Telemetry
from dgxmm.words import counted

__all__ = ["METRICS_PURGE", "METRICS_ROLLUP", "Fleet", "LateFinishHook", "RemovalHook"]

log = logging.getLogger(__name__)

METRICS_ROLLUP = "metrics_rollup"
METRICS_PURGE = "metrics_purge"

RemovalHook = Callable[[Connection, Deployment, str], None]
# Told of a reconciliation that found failed attempts finished after all (``finishes``).
LateFinishHook = Callable[[ActionResult], None]
S = DeploymentState


class Fleet:
    """The deployments, their deployer, events, audit rows, insights and metrics."""

    def __init__(
        self,
        store: Store,
        *,
        inventory: GpuInventory,
        clock: Clock | None = None,
        data_dir: Path | None = None,
        http_timeouts: HttpTimeouts | None = None,
        stop_grace_s: float = DEFAULT_STOP_GRACE_S,
        telemetry: Telemetry = NO_TELEMETRY,
        ray_clusters: Iterable[RayCluster] = (),
        gauge_reader: GaugeReader = read_gauges,
        pages: Pages | None = None,
    ) -> None:
        self.store = store
        self.telemetry = telemetry  # told what the fleet and the decider above it did
        self.inventory = inventory
        # The GPUs as measured (NVML), shown beside what the deployments declare.
        self.gauges = GpuMeter(clock or store.clock, gauge_reader)
        self.clock = clock or store.clock
        self.data_dir = data_dir or store.data_dir
        engine = store.engine
        store.versions.watch(
            {
                deployments_table.name: Topic.DEPLOYMENTS,
                deployment_events.name: Topic.DEPLOYMENTS,
                insights.name: Topic.INSIGHTS,
                audit_log.name: Topic.AUDIT,
            }
        )
        self.audit = Audit(engine, self.clock)
        self.events = Events(engine, self.clock)
        self.insights = Insights(engine, store.dialect, self.clock, self.audit)
        self.deployments = DeploymentRepo(
            engine, clock=self.clock, inventory=inventory, events=self.events, audit=self.audit
        )
        self.backends = Backends(
            data_dir=self.data_dir,
            clock=self.clock,
            timeouts=http_timeouts or HttpTimeouts(),
            stop_grace_s=stop_grace_s,
            ray_clusters=ray_clusters,
            pages=pages,
        )
        self.metrics = Metrics(
            engine,
            clock=self.clock,
            deployments=self.deployments,
            backends=self.backends,
            insights=self.insights,
            on_gone=self._gone,
            on_asleep=self._asleep,
            on_awake=self._awake,
            telemetry=telemetry,
            retention_days=lambda: store.get_setting(RETENTION_SETTING, DEFAULT_RETENTION_DAYS),
        )
        self._recorder = ActionRecorder(
            engine,
            deployments=self.deployments,
            events=self.events,
            audit=self.audit,
            insights=self.insights,
            restarted=self.metrics.forget,
            checked=self.metrics.discount,
        )
        self.activity = RequestActivity(self.clock)
        self.request_minutes = RequestMinutes(engine)  # the proxy's record, for the savings
        self.deployer = Deployer(
            engine,
            inventory=inventory,
            deployments=self.deployments,
            events=self.events,
            backends=self.backends,
            recorder=self._recorder,
            activity=self.activity,
            telemetry=telemetry,
        )
        self.reconciler = Reconciler(
            lock=self.deployer.lock,
            deployments=self.deployments,
            events=self.events,
            backends=self.backends,
            recorder=self._recorder,
            activity=self.activity,
        )
        # Insights go first, before the deployment: their table has no cascade.
        self._hooks: list[RemovalHook] = [self.insights.remove_for]
        self._late_hooks: list[LateFinishHook] = []
        self._note_inventory()
        self.settling = Settling(self._settle)
        self.reattach()

    # -- removal ------------------------------------------------------------------------------

    def add_removal_hook(self, hook: RemovalHook) -> None:
        """Run ``hook(connection, deployment, actor)`` inside every removal, before the delete."""
        self._hooks.append(hook)

    def remove(self, deployment_id: int, *, actor: str) -> None:
        """Remove a deployment: stop the process dgxmm owns, audit, run the hooks, delete.

        The audit row comes first in the removal's transaction, then the hooks (the fleet's
        own deletes the deployment's insights; the schedules audit theirs), then the row, whose
        events, rollups, schedules, profile and proposals go by ON DELETE CASCADE. A hook that
        raises undoes all of it but the stop.
        """
        with self.deployer.lock(deployment_id):
            deployment = self.deployments.get(deployment_id)
            owned = deployment.backend in (BackendKind.PROCESS, BackendKind.RAY)
            if owned and deployment.state is not DeploymentState.STOPPED:
                self.deployer.stop(deployment_id, actor=actor)
                deployment = self.deployments.get(deployment_id)
            with writing(self.store.engine) as connection:
                self.audit.record(
                    actor=actor,
                    action=AuditAction.DEPLOYMENT_REMOVE,
                    subject=AuditSubject.DEPLOYMENT,
                    subject_id=deployment_id,
                    detail={"before": deployment.to_json()},
                    connection=connection,
                )
                for hook in list(self._hooks):
                    hook(connection, deployment, actor)
                connection.execute(
                    delete(deployments_table).where(deployments_table.c.id == deployment_id)
                )
            self.backends.forget(deployment_id)
            self.metrics.forget(deployment_id)
            self.activity.forget(deployment_id)
            # Ids may be used again: a new deployment must not find this one's log.
            shutil.rmtree(self.backends.run_dir(deployment_id), ignore_errors=True)

    def add_late_finish_hook(self, hook: LateFinishHook) -> None:
        """Run ``hook(result)`` when a reconciliation finds failed attempts finished after all.

        The metrics pass calls it after ``mark_asleep`` wrote the deployment asleep: the
        schedule runner lifts the pause a timed-out scheduled sleep caused.
        """
        self._late_hooks.append(hook)

    # -- restarts, jobs, life -----------------------------------------------------------------

    def reattach(self) -> list[ActionResult]:
        """Find every deployment's server again (done once when the fleet is built).

        Those found up are asked again until they settle (``settling.py``): one may have
        been mid-action when dgxmm stopped.
        """
        found = []
        for deployment in self.deployments.list():
            try:
                result = reattach(
                    deployment.id,
                    deployer=self.deployer,
                    deployments=self.deployments,
                    backends=self.backends,
                    recorder=self._recorder,
                )
            except DgxmmError as error:  # one server in trouble must not keep dgxmm down
                log.warning("reattaching deployment %s: %s", deployment.name, error)
                continue
            if result is not None:
                found.append(result)
        up = [r.deployment for r in found if r.deployment.state in (S.RUNNING, S.SLEEPING)]
        self.settling.watch(
            [
                Unsettled(deployment_id=d.id, window_s=max(d.startup_timeout_s, d.sleep_timeout_s))
                for d in up
            ]
        )
        return found

    def system_jobs(self) -> list[Job]:
        """Return ``metrics_rollup`` (every minute) and ``metrics_purge`` (daily)."""
        return [
            Job(
                METRICS_ROLLUP,
                JobKind.SYSTEM,
                CronSchedule.parse("* * * * *"),
                self._rollup,
                description="samples each running deployment's /metrics into its per-minute "
                "rollup; marks deployments whose server is gone as failed",
            ),
            Job(
                METRICS_PURGE,
                JobKind.SYSTEM,
                CronSchedule.parse("30 3 * * *"),
                self._purge,
                description="deletes metric rollups older than the retention "
                f"({RETENTION_SETTING}, {DEFAULT_RETENTION_DAYS} days by default) and the "
                f"proxy's request minutes older than {RETENTION_DAYS} days",
            ),
        ]

    def gpus(self, everyone: Sequence[Deployment] | None = None) -> list[tuple[Gpu, list[Holding]]]:
        """Return each GPU of the inventory with what each deployment holds on it now.

        ``everyone``: the deployments the caller read already (a page with 1,000 of them
        would otherwise read them once per view).
        """
        held = gpu_holdings(
            self.inventory, self.deployments.list() if everyone is None else everyone
        )
        return [(gpu, held.get(gpu.index, [])) for gpu in self.inventory.gpus]

    def ray_nodes(
        self, everyone: Sequence[Deployment] | None = None
    ) -> list[tuple[RayNode, list[tuple[Gpu, list[Holding]]]]]:
        """Return the nodes of the Ray clusters the deployments use, each GPU with its holders.

        A cluster that cannot be reached is left out (its deployments' health says why).
        ``everyone``: the deployments the caller read already.
        """
        if everyone is None:
            everyone = self.deployments.list()
        addresses = sorted({d.ray_address for d in everyone if d.ray_address is not None})
        found = []
        for address in addresses:
            try:
                cluster = self.backends.cluster(address).inventory()
            except DgxmmError as error:
                log.warning("Ray cluster at %s: %s", address, error)
                continue
            held = node_holdings(cluster, everyone)
            for node in cluster.nodes:
                on_node = held.get(node.node_id, {})
                found.append((node, [(gpu, on_node.get(gpu.index, [])) for gpu in node.gpus]))
        return found

    def close(self) -> None:
        """Close the HTTP clients; the model servers keep running."""
        self.settling.close()
        self.metrics.close()
        self.backends.close()

    def _gone(self, deployment: Deployment, why: str) -> None:
        # wait=False: the metrics job never queues behind an action; an action holding the
        # lock meets the gone server itself. A caller holding the lock re-enters it.
        self.reconciler.mark_failed(deployment.id, why, wait=False)

    def _asleep(self, deployment: Deployment, why: str) -> ActionResult | None:
        found = self.reconciler.mark_asleep(deployment.id, why)
        if found is None or not found.finishes:
            return found
        for hook in list(self._late_hooks):
            try:
                hook(found)
            except DgxmmError as error:  # the pass goes on; the pause stays until someone looks
                log.warning("after finding %s asleep: %s", deployment.name, error)
        return found

    def _awake(self, deployment: Deployment, why: str) -> None:
        self.reconciler.mark_awake(deployment.id, why)

    def _settle(self, deployment_id: int) -> bool:
        """Compare ``/is_sleeping`` with the record once; True when nothing is left to ask."""
        try:
            deployment = self.deployments.get(deployment_id)
        except NotFound:
            return True  # removed since
        why = "asked again after a dgxmm restart"
        if deployment.state is S.SLEEPING:
            return self.reconciler.mark_awake(deployment_id, why) is not None
        if deployment.state is S.RUNNING:
            return self._asleep(deployment, why) is not None
        return True  # an action moved it on: it knows the state

    def _rollup(self, ctx: RunContext) -> str:
        written = self.request_minutes.add(self.activity.take_minutes())
        said = self.metrics.rollup_all(ctx)
        return (
            f"{said}; {counted(written, 'minute')} of proxy requests written" if written else said
        )

    def _purge(self, ctx: RunContext) -> str:
        requests = self.request_minutes.purge(ctx.started_at)
        rollups = self.metrics.purge(ctx.started_at)
        return (
            f"{counted(rollups, 'rollup')} and {counted(requests, 'minute')} "
            "of proxy requests deleted"
        )

    def _note_inventory(self) -> None:
        inventory = self.inventory
        if not inventory.gpus:
            self.insights.raise_insight(
                InsightKind.INVENTORY,
                deployment_id=None,
                severity=Severity.WARNING,
                message="No GPU is known: NVML found none and config.json lists none "
                f"({inventory.note}). Deployments that declare GPUs cannot be created.",
                key="inventory:empty",
            )
        elif inventory.source is InventorySource.NVML and inventory.note:
            self.insights.raise_insight(
                InsightKind.INVENTORY,
                deployment_id=None,
                severity=Severity.INFO,
                message=f"GPU inventory: {inventory.note}.",
                key="inventory:differs",
            )
