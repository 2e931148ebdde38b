"""After a dgxmm restart: find each deployment's server again and bring its row up to date.

Model servers outlive dgxmm on purpose. For a process deployment the backend reads its pid
file (pid, start time, boot id) and probes ``/health``; a ray deployment's backend finds its
actor by name (and writes down where it runs); an external one gets a health check.
What was found, by the state the row was left in:

- ``running`` / ``sleeping``: healthy, it becomes what ``/is_sleeping`` says; alive but not
  healthy, it is kept (the metrics job decides); gone, it is ``failed``.
- ``starting``: the start-up was cut short, so it is ``failed`` (its process stopped).
- ``stopping``: the stop is finished (a process still there is stopped): ``stopped``.
- ``stopped`` / ``failed`` with a process of ours still running: that process is stopped.

An unreachable external server in a ``running`` or ``sleeping`` row is left as it is: the
metrics job marks it failed when its port refuses. What ``/is_sleeping`` says now may not
last: an action dgxmm began before it stopped may still run on the server (its record is
written when it ends), so the fleet asks those found up again until they settle
(``settling.py``).
"""

from __future__ import annotations

from dgxmm.errors import BackendError
from dgxmm.fleet.backends.protocol import BackendKind, Health
from dgxmm.fleet.backends.ray import RayBackend
from dgxmm.fleet.backends.registry import Backends
from dgxmm.fleet.deployer import Deployer
from dgxmm.fleet.deployments.deployment import Deployment, DeploymentState
from dgxmm.fleet.deployments.events import EventAction, EventOutcome
from dgxmm.fleet.deployments.recorder import ActionRecorder, ActionResult
from dgxmm.fleet.deployments.repo import DeploymentRepo
from dgxmm.store import writing

__all__ = ["reattach"]

S = DeploymentState
ACTOR = "system"


def reattach(
    deployment_id: int,
    *,
    deployer: Deployer,
    deployments: DeploymentRepo,
    backends: Backends,
    recorder: ActionRecorder,
) -> ActionResult | None:
    """Find one deployment's server again; return what was recorded, or None."""
    with deployer.lock(deployment_id):
        deployment = deployments.get(deployment_id)
        backend = backends.of(deployment)
        if deployment.backend is BackendKind.EXTERNAL and deployment.state in (S.STOPPED, S.FAILED):
            return None
        check = backend.reattach()
        rec = recorder
        if check.health is Health.GONE:
            if deployment.state is S.STOPPING:
                return rec.record(
                    deployment=deployment,
                    action=EventAction.REATTACH,
                    outcome=EventOutcome.DONE,
                    actor=ACTOR,
                    detail="its stop had finished",
                    state=S.STOPPED,
                    error=None,
                )
            if deployment.state in (S.RUNNING, S.SLEEPING, S.STARTING):
                return rec.fail(
                    deployment,
                    EventAction.REATTACH,
                    ACTOR,
                    f"not found after a dgxmm restart: {check.detail}",
                    backend,
                )
            return None
        if deployment.state is S.STARTING:
            return rec.fail(
                deployment,
                EventAction.REATTACH,
                ACTOR,
                "its start-up was cut short by a dgxmm restart",
                backend,
            )
        if deployment.state in (S.STOPPING, S.STOPPED, S.FAILED):
            if deployment.backend is BackendKind.EXTERNAL:
                return rec.record(
                    deployment=deployment,
                    action=EventAction.REATTACH,
                    outcome=EventOutcome.DONE,
                    actor=ACTOR,
                    detail="its stop had finished",
                    state=S.STOPPED,
                )
            outcome = backend.stop()
            rec.restarted(deployment_id)
            why = (
                "finished the stop under way when dgxmm stopped"
                if deployment.state is S.STOPPING
                else f"its process ran though it was {deployment.state.value}: stopped it"
            )
            state = S.STOPPED if deployment.state is S.STOPPING else None
            return rec.record(
                deployment=deployment,
                action=EventAction.REATTACH,
                outcome=EventOutcome.DONE,
                actor=ACTOR,
                detail=f"{why} ({outcome.value})",
                state=state,
            )
        if not check.is_healthy:
            return None
        if isinstance(backend, RayBackend):
            _note_placement(deployment, backend, deployments)
        try:
            found = S.SLEEPING if backend.is_sleeping() else S.RUNNING
        except BackendError:
            return None
        detail = f"found {found.value} at {backend.base_url}" + (
            f" (it was recorded {deployment.state.value})" if found is not deployment.state else ""
        )
        return rec.record(
            deployment=deployment,
            action=EventAction.REATTACH,
            outcome=EventOutcome.DONE,
            actor=ACTOR,
            detail=detail,
            state=found if found is not deployment.state else None,
        )


def _note_placement(
    deployment: Deployment, backend: RayBackend, deployments: DeploymentRepo
) -> None:
    found = backend.placement()
    if found is None or (found[0] == deployment.placement and found[1] == deployment.gpus):
        return
    with writing(deployments.engine) as connection:
        deployments.set_placement(connection, deployment.id, *found)
