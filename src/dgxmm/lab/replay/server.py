"""The simulated model server of one deployment in a replay: its phases and the actions between.

What is the lab's own in a replay is the server (``deployment.py`` takes every decision with
the product's functions): how long each step takes, drawn from ``ServerTimes``, and what it
holds meanwhile (``ledger.Phase``). ``SimulatedServer`` holds the phase it rests in, the one
action under way (a way down or up, and whose it is), every phase it went through for the
ledger, and the times its ways up took, which a measured wake lead reads.

Where the product's server has choices:

- A sleep or stop cannot be called back: the action under way ends when it was drawn to.
- A deepening (level 1 to level 2) keeps the level-1 memory until it ends (vLLM drops the
  CPU copy of the weights; the GPU holds the same), and takes the level-2 sleep's time.
- A stop of a sleeping server keeps its asleep phase until it ends.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

import numpy as np

from dgxmm.fleet import BackendKind, Deployment, DeploymentState
from dgxmm.lab.durations import Duration, ServerTimes
from dgxmm.lab.fleetfile import LabDeployment
from dgxmm.lab.ledger import Phase

__all__ = ["Action", "Owner", "SimulatedServer"]

_STATE = {
    Phase.AWAKE: DeploymentState.RUNNING,
    Phase.ASLEEP_1: DeploymentState.SLEEPING,
    Phase.ASLEEP_2: DeploymentState.SLEEPING,
    Phase.STOPPED: DeploymentState.STOPPED,
}
_LEVEL = {Phase.ASLEEP_1: 1, Phase.ASLEEP_2: 2, Phase.STOPPED: 0}  # lead_for's level of a way up


class Owner(Enum):
    """Who holds the deployment while its action is under way (the product's lock)."""

    RUNNER = "runner"  # the runner's worker (a schedule or an idle step)
    REQUEST = "request"  # the proxy's waker: the runner finds the lock taken and skips


@dataclass(slots=True)
class Action:
    """An action under way: until when, into which phase, whose."""

    until: int
    to: Phase
    owner: Owner
    began: int
    up_from: int | None = None  # a way up: lead_for's level it comes from (0: a start)

    @property
    def up(self) -> bool:
        return self.up_from is not None


class SimulatedServer:
    """One deployment's server: the phase it rests in, its action under way, its phases."""

    def __init__(
        self, deployment: LabDeployment, *, index: int, rng: np.random.Generator, start_us: int
    ) -> None:
        self.times: ServerTimes = deployment.durations
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

    @property
    def state(self) -> DeploymentState:
        """Return the product's state of the phase it rests in."""
        return _STATE[self.rest]

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
        return self.rows_by_phase[phase]

    def action_began(self) -> int:
        """Return when the action under way began (its start of the span when none is)."""
        return self.start_us if self.action is None else self.action.began

    def go_down(self, now: int, to: Phase, lasting: int) -> None:
        """Begin a sleep, deepening or stop into ``to`` that lasts ``lasting``."""
        if self.rest is Phase.AWAKE:
            self.phases.append((now, Phase.GOING_DOWN))
        self.action = Action(until=now + lasting, to=to, owner=Owner.RUNNER, began=now)
        self.phases.append((now + lasting, to))

    def bring_up(self, begin: int, owner: Owner) -> None:
        """Begin a start or a wake for ``owner``, its time drawn from where it rests."""
        if self.rest is Phase.STOPPED:
            lasting, phase = self.draw(self.times.start), Phase.STARTING
        else:
            wake = self.times.wake_2 if self.rest is Phase.ASLEEP_2 else self.times.wake_1
            lasting, phase = self.draw(wake), Phase.WAKING
        self.action = Action(
            until=begin + lasting, to=Phase.AWAKE, owner=owner, began=begin,
            up_from=_LEVEL[self.rest],
        )  # fmt: skip
        self.phases.append((begin, phase))
        self.phases.append((begin + lasting, Phase.AWAKE))

    def end(self, at: int) -> Action:
        """End the action under way at ``at`` and return it; a way up records its time."""
        action = self.action
        assert action is not None
        self.action = None
        self.rest = action.to
        if action.up_from is not None:
            self.ready_us[action.up_from].append(at - action.began)  # what its events record
            self.active_since = at
        return action

    def sleep_time(self, resting: Phase) -> int:
        """Draw how long a sleep into ``resting`` (level 1 or 2) takes."""
        return self.draw(self.times.sleep_2 if resting is Phase.ASLEEP_2 else self.times.sleep_1)

    def draw(self, duration: Duration) -> int:
        """Draw one time from ``duration`` with the deployment's own generator."""
        return int(duration.draw(self.rng, 1)[0])
