"""The simulated model server of one deployment in a replay: its phases and the actions between.

What is the lab's own in a replay is the server (``deployment.py`` takes every decision with
the product's functions): how long each step takes, drawn from ``ServerTimes``, and what it
holds meanwhile (``ledger.Phase``). ``SimulatedServer`` holds the phase it rests in, the one
action under way (a way down or up, and whose it is), every phase it went through for the
ledger, and the times its ways up took, which a measured wake lead reads.

Where the product's server has choices:

- A sleep or stop cannot be called back: the action under way ends when it was drawn to,
  or when the product ends it (``ProductBounds``), whichever is first.
- A deepening (level 1 to level 2) keeps the level-1 memory until it ends (vLLM drops the
  CPU copy of the weights; the GPU holds the same), and takes the level-2 sleep's time.
- A stop of a sleeping server keeps its asleep phase until it ends.

How the product ends an action past its bound (issue 42, point 6: a sleep drawn from the
lognormal's tail took 3,397 s, and a request waited behind it for 56 minutes):

- a sleep from awake, after ``sleep_timeout_s``: the deployer records it failed and the
  deployment running ("the server is there but did not sleep"), so it is awake from then
  (``Outcome.TIMED_OUT``). A later finish, which the product's metrics pass would find, is
  not replayed;
- a deepening, or a start or wake, after its timeout: the deployer fails the deployment,
  which then holds no memory (phase ``STOPPED``) and refuses requests (``Outcome.FAILED``);
- a stop, after the grace period: SIGKILL, and it is stopped.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

import numpy as np

from dgxmm.fleet import (
    DEFAULT_SLEEP_TIMEOUT_S,
    DEFAULT_STARTUP_TIMEOUT_S,
    DEFAULT_STOP_GRACE_S,
    BackendKind,
    Deployment,
    DeploymentState,
)
from dgxmm.lab.durations import Duration, ServerTimes
from dgxmm.lab.fleetfile import LabDeployment
from dgxmm.lab.ledger import Phase
from dgxmm.proxy.bounds import DEFAULT_BOUNDS
from dgxmm.time_units import SECOND_US

__all__ = ["PRODUCT_BOUNDS", "Action", "Outcome", "Owner", "ProductBounds", "SimulatedServer"]

_STATE = {
    Phase.AWAKE: DeploymentState.RUNNING,
    Phase.ASLEEP_1: DeploymentState.SLEEPING,
    Phase.ASLEEP_2: DeploymentState.SLEEPING,
    Phase.STOPPED: DeploymentState.STOPPED,
}
_LEVEL = {Phase.ASLEEP_1: 1, Phase.ASLEEP_2: 2, Phase.STOPPED: 0}  # lead_for's level of a way up


@dataclass(frozen=True, slots=True, kw_only=True)
class ProductBounds:
    """How long the product lets an action run, and a request be held; its defaults.

    A lab deployment has no timeouts of its own: each is the product's default for a
    deployment that gives none (``definition.py``), the backends' stop grace, and the proxy's
    ``max_hold_s`` (``proxy/bounds.py``).
    """

    sleep_timeout_us: int = round(DEFAULT_SLEEP_TIMEOUT_S * SECOND_US)  # a sleep, a deepening
    startup_timeout_us: int = round(DEFAULT_STARTUP_TIMEOUT_S * SECOND_US)  # a start, a wake
    stop_grace_us: int = round(DEFAULT_STOP_GRACE_S * SECOND_US)  # SIGKILL then: the stop is over
    max_hold_us: int = round(DEFAULT_BOUNDS.max_hold_s * SECOND_US)  # then 503 hold_timeout


PRODUCT_BOUNDS = ProductBounds()


class Owner(Enum):
    """Who holds the deployment while its action is under way (the product's lock)."""

    RUNNER = "runner"  # the runner's worker (a schedule or an idle step)
    REQUEST = "request"  # the proxy's waker: the runner finds the lock taken and skips


class Outcome(Enum):
    """How an action ends: done, or as the product ends one past its bound."""

    DONE = "done"
    TIMED_OUT = "timed out"  # a sleep given up: the deployment is recorded running
    FAILED = "failed"  # a way up or a deepening given up: the deployment is failed


@dataclass(slots=True)
class Action:
    """An action under way: until when, into which phase, whose, and how it ends."""

    until: int
    to: Phase
    owner: Owner
    began: int
    up_from: int | None = None  # a way up: lead_for's level it comes from (0: a start)
    outcome: Outcome = Outcome.DONE

    @property
    def up(self) -> bool:
        return self.up_from is not None


class SimulatedServer:
    """One deployment's server: the phase it rests in, its action under way, its phases."""

    def __init__(
        self,
        deployment: LabDeployment,
        *,
        index: int,
        rng: np.random.Generator,
        start_us: int,
        bounds: ProductBounds,
    ) -> None:
        self.times: ServerTimes = deployment.durations
        self.bounds = bounds
        self.failed = False  # a way up or deepening timed out: a person's to look at
        self.rng = rng
        self.start_us = start_us
        self.rest = Phase.AWAKE
        self.action: Action | None = None
        self.active_since = start_us  # when it last came up: idle counts from then at least
        self.ready_us: dict[int, list[int]] = {0: [], 1: [], 2: []}  # times to ready by level
        self.phases: list[tuple[int, Phase]] = [(start_us, Phase.AWAKE)]
        template = Deployment(
            id=index, name=deployment.name, model=deployment.model,
            backend=BackendKind.EXTERNAL, command=None, port=None, environment={},
            base_url="http://lab.invalid", gpus=deployment.gpus,
            memory_gib_awake=deployment.memory_gib_awake,
            memory_gib_asleep=deployment.memory_gib_asleep, priority=deployment.priority,
            time_zone=deployment.time_zone, startup_timeout_s=0.0,
            state=DeploymentState.RUNNING, state_since=start_us, last_error=None,
            last_request_at=None, created_at=start_us, updated_at=start_us,
            wake_on_request=True, sleep_level=deployment.sleep_level,
        )  # fmt: skip
        # The product's row in each phase, made once: a fit check reads every deployment's.
        self.rows_by_phase = {phase: replace(template, state=_STATE[phase]) for phase in _STATE}
        self.rows_by_phase[Phase.STARTING] = replace(template, state=DeploymentState.STARTING)
        self.rows_by_phase[Phase.ASLEEP_2] = replace(
            template, state=DeploymentState.SLEEPING,
            memory_gib_asleep=deployment.memory_gib_asleep_2,
        )  # fmt: skip
        self.failed_row = replace(template, state=DeploymentState.FAILED)

    def row(self) -> Deployment:
        """Return the product's row of the phase it rests in (failed, once it failed)."""
        return self.failed_row if self.failed else self.rows_by_phase[self.rest]

    @property
    def state(self) -> DeploymentState:
        """Return the product's state of the phase it rests in (failed, once it failed)."""
        return DeploymentState.FAILED if self.failed else _STATE[self.rest]

    @property
    def up_level(self) -> int:
        """Return lead_for's level of a way up from where it rests (1 while awake)."""
        return _LEVEL.get(self.rest, 1)

    def as_product(self, at: int) -> Deployment:
        """Return the product's row of it at ``at``, as the fit check reads it."""
        phase = self.rest  # also during a stop or deepening of a sleeper: it holds what it held
        action = self.action
        if action is not None and action.until > at and (action.up or phase is Phase.AWAKE):
            return self.rows_by_phase[Phase.STARTING]  # a way up or down holds awake memory
        return self.row()

    def action_began(self) -> int:
        """Return when the action under way began (its start of the span when none is)."""
        return self.start_us if self.action is None else self.action.began

    def go_down(self, now: int, to: Phase, lasting: int) -> None:
        """Begin a sleep, deepening or stop into ``to`` drawn to last ``lasting``.

        It ends by the product's bound: a stop is killed after the grace period; a sleep
        past ``sleep_timeout_s`` leaves the deployment running, a deepening failed.
        """
        outcome = Outcome.DONE
        if to is Phase.STOPPED:
            lasting = min(lasting, self.bounds.stop_grace_us)  # SIGKILL: stopped all the same
        elif lasting > self.bounds.sleep_timeout_us:
            lasting = self.bounds.sleep_timeout_us
            if self.rest is Phase.AWAKE:
                to, outcome = Phase.AWAKE, Outcome.TIMED_OUT
            else:
                to, outcome = Phase.STOPPED, Outcome.FAILED
        if self.rest is Phase.AWAKE:
            self.phases.append((now, Phase.GOING_DOWN))
        self.action = Action(
            until=now + lasting, to=to, owner=Owner.RUNNER, began=now, outcome=outcome
        )
        self.phases.append((now + lasting, to))

    def bring_up(self, begin: int, owner: Owner) -> None:
        """Begin a start or a wake for ``owner``, its time drawn from where it rests."""
        if self.rest is Phase.STOPPED:
            lasting, phase = self.draw(self.times.start), Phase.STARTING
        else:
            wake = self.times.wake_2 if self.rest is Phase.ASLEEP_2 else self.times.wake_1
            lasting, phase = self.draw(wake), Phase.WAKING
        to, outcome = Phase.AWAKE, Outcome.DONE
        if lasting > self.bounds.startup_timeout_us:  # the start-up gate fails the deployment
            lasting, to, outcome = self.bounds.startup_timeout_us, Phase.STOPPED, Outcome.FAILED
        self.action = Action(
            until=begin + lasting, to=to, owner=owner, began=begin,
            up_from=_LEVEL[self.rest], outcome=outcome,
        )  # fmt: skip
        self.phases.append((begin, phase))
        self.phases.append((begin + lasting, to))

    def end(self, at: int) -> Action:
        """End the action under way at ``at`` and return it; a way up records its time."""
        action = self.action
        assert action is not None
        self.action = None
        self.rest = action.to
        if action.outcome is Outcome.FAILED:
            self.failed = True  # it holds nothing (the product stops what is left of it)
        elif action.up_from is not None and action.outcome is Outcome.DONE:
            self.ready_us[action.up_from].append(at - action.began)  # what its events record
            self.active_since = at
            self.failed = False  # a start of a failed deployment brings it back
        return action

    def sleep_time(self, resting: Phase) -> int:
        """Draw how long a sleep into ``resting`` (level 1 or 2) takes."""
        return self.draw(self.times.sleep_2 if resting is Phase.ASLEEP_2 else self.times.sleep_1)

    def draw(self, duration: Duration) -> int:
        """Draw one time from ``duration`` with the deployment's own generator."""
        return int(duration.draw(self.rng, 1)[0])
