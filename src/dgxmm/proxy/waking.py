"""Bringing a deployment up for the requests held for it: one wake for any number of them.

``Waker.bring_up`` returns the deployment's one wake under way, or starts it: a thread that
takes the deployment's lock (so it waits for an action under way, such as a scheduled sleep
and its quiet check), reads the state again and, when the deployment still needs it, asks
the deployer's normal path with actor ``request`` and ``plans=False``: the fit check, the
start-up gate and the post-wake check, and never an eviction (a request must not put
another model to sleep). It ends with the deployment running, or ``ProxyRefused`` naming
why not.

What a request may bring up (``refusal_for``): a sleeping deployment, or one a schedule
stopped, unless it opted out (``wake_on_request``). A deployment stopped by a person stays
stopped; a failed one is a person's to look at.

A refusal's message names the deployment and the reason, never the error's own text: a
model server's error quotes its log lines, its command line (an ``--api-key``) or its base
URL (a ``user:password@``), and the proxy's port is unauthenticated. That text goes to
dgxmm's log, and the deployment's events and ``last_error`` keep it for its people.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from dgxmm.errors import Conflict, DgxmmError, DoesNotFit, NotFound
from dgxmm.fleet import REQUEST_ACTOR, Deployment, DeploymentState, Fleet, is_policy
from dgxmm.proxy.replies import ProxyRefused, Refusal
from dgxmm.proxy.stats import ProxyStats

__all__ = ["REQUEST_ACTOR", "Waker", "refusal_for"]

S = DeploymentState

log = logging.getLogger(__name__)


def refusal_for(deployment: Deployment, stopped_by: str | None) -> ProxyRefused | None:
    """Say why a request must not bring this deployment up, or None when it may."""
    name = deployment.name
    if deployment.state is S.RUNNING:
        return None
    if deployment.state is S.FAILED:
        return ProxyRefused(
            Refusal.FAILED,
            f"deployment {name!r} has failed (its events and last_error say why); "
            "a request does not restart it",
        )
    if deployment.state is S.STOPPED and not is_policy(stopped_by):
        who = stopped_by or "someone unknown"
        return ProxyRefused(
            Refusal.STOPPED,
            f"deployment {name!r} was stopped by {who}, not by a schedule or its idle policy; "
            "a request does not start it",
        )
    if not deployment.wake_on_request and deployment.state in (S.SLEEPING, S.STOPPED):
        return ProxyRefused(
            Refusal.WAKE_OFF,
            f"deployment {name!r} is {deployment.state.value} and its wake_on_request is off",
        )
    return None


class Waker:
    """One bring-up under way per deployment, on threads of its own; see the module."""

    def __init__(self, fleet: Fleet, stats: ProxyStats, *, workers: int = 16) -> None:
        self._fleet = fleet
        self._stats = stats
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="proxy-wake")
        self._lock = threading.Lock()
        self._under_way: dict[int, Future[bool]] = {}

    def bring_up(self, deployment_id: int) -> Future[bool]:
        """Return the deployment's bring-up under way, or start one; True once it woke it."""
        with self._lock:
            found = self._under_way.get(deployment_id)
            if found is None:
                found = self._pool.submit(self._bring_up, deployment_id)
                self._under_way[deployment_id] = found
                found.add_done_callback(lambda done: self._forget(deployment_id, done))
            return found

    def close(self) -> None:
        """Take no more bring-ups; those under way finish on their threads."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _forget(self, deployment_id: int, done: Future[bool]) -> None:
        with self._lock:
            if self._under_way.get(deployment_id) is done:
                del self._under_way[deployment_id]

    def _bring_up(self, deployment_id: int) -> bool:
        fleet = self._fleet
        name = str(deployment_id)
        try:
            with fleet.deployer.lock(deployment_id):
                deployment = fleet.deployments.get(deployment_id)
                name = repr(deployment.name)
                stopped_by = (
                    fleet.events.stopped_by(deployment_id)
                    if deployment.state is S.STOPPED
                    else None
                )
                refused = refusal_for(deployment, stopped_by)
                if refused is not None:
                    raise refused
                if deployment.state is S.RUNNING:
                    return False  # woken by someone else meanwhile, or a sleep deferred
                if deployment.state in (S.STARTING, S.STOPPING):  # under the lock: left over
                    raise ProxyRefused(
                        Refusal.WAKE_FAILED,
                        f"deployment {deployment.name!r} is {deployment.state.value}",
                    )
                if deployment.state is S.SLEEPING:
                    fleet.deployer.wake(deployment_id, actor=REQUEST_ACTOR, plans=False)
                else:
                    fleet.deployer.start(deployment_id, actor=REQUEST_ACTOR, plans=False)
                self._stats.woke(deployment.name)
                return True
        except ProxyRefused:
            raise
        except DoesNotFit as error:  # dgxmm's own arithmetic of the GPUs' memory
            raise ProxyRefused(Refusal.DOES_NOT_FIT, str(error)) from error
        except NotFound as error:
            raise ProxyRefused(Refusal.FAILED, f"deployment {name} was removed") from error
        except Conflict as error:  # the deployer found a state that rules it out
            log.warning("proxy: deployment %s was not brought up: %s", name, error)
            raise ProxyRefused(
                Refusal.WAKE_FAILED, f"deployment {name} could not be brought up now"
            ) from error
        except DgxmmError as error:
            log.warning("proxy: deployment %s was not brought up: %s", name, error)
            raise ProxyRefused(
                Refusal.WAKE_FAILED,
                f"deployment {name} did not come up (its events say why)",
            ) from error
