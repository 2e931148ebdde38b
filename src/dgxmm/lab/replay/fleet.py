"""dgxmm's own policies, replayed: the schedules, the idle policies and the fit, fleet-wide.

``replay_fleet`` plays every deployment of a fleet file through dgxmm's own decisions, on a
simulated clock with no wall-clock wait, and returns each one's phases and each request's
added wait (``ScheduleReplay``). ``Rules`` says which of dgxmm's policies are in force
beside the schedules: the idle ladder, the histogram policy, the wake lead.
``replay_schedules`` is the schedules alone.

The deployments share the machine: the loop steps them one event at a time in the order of
time (``deployment.Rank`` at one instant, then the fleet-file order, the order of the product's
schedule ids), and a wake or start, by a request, a schedule or a pre-wake, asks the
product's ``check_fit`` with every other deployment as it is at that instant (one going down
still holds its awake memory; one coming up holds it already). Nothing is evicted: a request
that does not fit is refused (``does_not_fit``), a slot is skipped, a pre-wake is not made.

- **The runner's pass**, every simulated minute: ``due_slot`` per enabled schedule (with a
  wake lead, ``due_early`` for a wake or start), its ``last_run_day`` and ``deferred_since``
  kept as the product's rows keep them; of one deployment's due slots the latest acts
  (``slot_order``) and the others are superseded; a sleep or stop goes through
  ``down_verdict`` and ``quiet_verdict``; a wake or start through ``up_verdict`` and the fit.
  A deployment whose scheduled action is under way is left out (its slot stays due); one a
  request is bringing up is ``skipped: an action on it is under way``.
- **The proxy's hold**: a request that finds its deployment awake is served at once (it holds
  its server for a microsecond); one that finds it resting asks ``refusal_for`` and the fit,
  then brings it up and waits; one that finds it going down waits behind the shut door, and
  the way up begins when the way down ends; every request meanwhile joins that one way up.
- **The idle policy**, in the same pass after the schedules: ``idle_step`` with the
  deployment's ladder (or the rules' default when it gives none) inside the schedules'
  ``awake_window`` bounds; with the histogram policy, its windows replace the ladder's first
  step while they are representative, and a pre-wake is made ahead of the next request;
  with the priced policy (``Rules.priced``), its rungs at the rules' price replace the
  ladder and it wakes ahead of a regular start (``priced.py``).

- **The product's bounds** (``Rules.bounds``, the product's defaults): an action drawn past
  its timeout ends as the product ends it (a sleep timed out leaves the deployment running
  and pauses what asked for it; a wake or start timed out fails the deployment; a stop is
  killed after the grace period), and a request held past ``max_hold_s`` is refused
  ``hold_timeout`` (``deployment.py``, ``server.py``). A duration's tail once held a
  request for 56 minutes behind one sleep (issue 42, point 6).

What is left out, and said wherever the figures are shown: a server fails only by a timeout
(no error answers, no crash), a sleep that timed out never finishes later (the product's
metrics pass would find it asleep), and one start-up at a time is not kept (the product's
gate serialises starts).
Every deployment is awake at ``start_us``, as always-on is, even where they do not all fit
together: the fit is asked of a way up only.

Schedules are numbered 1, 2, ... in fleet-file order across the whole fleet (the product's
ids). Each deployment draws its durations from its ``ServerTimes`` with its own generator,
seeded by ``seed`` and its name, so a replay is the same run after run and one deployment's
draws do not change when another is added.
"""

from __future__ import annotations

import heapq
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from dgxmm.decider.idle import IdleLadder
from dgxmm.decider.schedules.lead import LEAD_OFF, LeadKind, WakeLead
from dgxmm.fleet import DeploymentState, Fit, IdlePolicy, check_fit
from dgxmm.lab.fleetfile import LabFleet
from dgxmm.lab.ledger import DEFAULT_PRICE, Footprint, Ledger, Timeline
from dgxmm.lab.replay.deployment import SimulatedDeployment
from dgxmm.lab.replay.priced import PricedPlan
from dgxmm.lab.replay.rows import SlotDecision
from dgxmm.lab.replay.server import PRODUCT_BOUNDS, ProductBounds
from dgxmm.lab.traces.trace import Ints, Trace
from dgxmm.time_units import SECOND_US

__all__ = ["DEFAULT_LADDER", "Rules", "ScheduleReplay", "replay_fleet", "replay_schedules"]

# The ladder a deployment that gives none is replayed with under the idle policies: a
# level-1 sleep after Ollama's 5 minutes (a wake of seconds where Ollama starts for a minute),
# level 2 after 15 minutes, a stop after an hour (a sleeper's last GiB or two, held all night,
# is what a stop frees and a sleep does not). docs/savings.md compares other ladders.
DEFAULT_LADDER = IdleLadder(
    sleep_after_us=300 * SECOND_US, deepen_after_us=900 * SECOND_US, stop_after_us=3600 * SECOND_US
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Rules:
    """Which of dgxmm's policies are in force beside the schedules in a replay."""

    idle: bool = False  # the idle ladder: the deployment's own, else ``default_ladder``
    histogram: bool = False  # the histogram policy, over the ladder (implies ``idle``)
    priced: bool = False  # the priced policy at ``price`` (its rungs replace the ladder)
    price: float = DEFAULT_PRICE  # W, GiB-hours a request-second: what ``priced`` decides at
    wake_lead: WakeLead = LEAD_OFF  # every deployment's wake lead
    default_ladder: IdleLadder = DEFAULT_LADDER
    # These deployments' wake lead is measured whatever ``wake_lead`` says: accepting the
    # product's proposal sets it on a deployment whose lead was off (issue 25).
    measured_lead: frozenset[str] = frozenset()
    bounds: ProductBounds = PRODUCT_BOUNDS  # the product's timeouts and hold bound


SCHEDULES_ONLY = Rules()
_MEASURED = WakeLead(kind=LeadKind.MEASURED)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduleReplay:
    """One deployment under dgxmm's policies: its phases, its requests and what they met."""

    timeline: Timeline
    arrivals_us: Ints  # its requests in the span, in order
    waits_us: Ints  # per request: its added wait, -1 for one refused
    refused: Mapping[str, int] = field(default_factory=dict)  # by refusal reason
    decisions: tuple[SlotDecision, ...] = ()
    steps: Mapping[str, int] = field(default_factory=dict)  # idle steps, pre-wakes, early wakes

    def ledger(self, name: str, footprint: Footprint) -> Ledger:
        """Return the replay's figures in the ledger's words."""
        return Ledger.of(
            name,
            footprint,
            self.timeline,
            self.arrivals_us,
            waits_us=self.waits_us,
            refused=self.refused,
        )


def replay_schedules(
    trace: Trace, fleet: LabFleet, *, start_us: int, end_us: int, seed: int
) -> dict[str, ScheduleReplay]:
    """Replay every deployment of ``fleet`` under its schedules alone (no idle policy)."""
    return replay_fleet(trace, fleet, SCHEDULES_ONLY, start_us=start_us, end_us=end_us, seed=seed)


def replay_fleet(
    trace: Trace, fleet: LabFleet, rules: Rules, *, start_us: int, end_us: int, seed: int
) -> dict[str, ScheduleReplay]:
    """Replay every deployment of ``fleet`` under ``rules`` over ``[start_us, end_us)``.

    Each deployment is awake at ``start_us``, as always-on is; see the module for the rules.
    """
    if end_us < start_us:
        raise ValueError(f"end_us: {end_us} is before start_us {start_us}")
    inventory = fleet.inventory
    sims: list[SimulatedDeployment] = []

    def fits(index: int, target: DeploymentState, at: int) -> Fit:
        everyone = [sim.as_product(at) for sim in sims]
        return check_fit(inventory, everyone, everyone[index], target)

    number = 0
    for index, deployment in enumerate(fleet.deployments):
        numbered = tuple(enumerate(deployment.schedules, start=number + 1))
        number += len(deployment.schedules)
        arrivals = trace.arrivals_of(deployment.model)
        arrivals = arrivals[(arrivals >= start_us) & (arrivals < end_us)]
        ladder = deployment.idle if not deployment.idle.is_off else rules.default_ladder
        # Under the idle rules a deployment whose file names its idle policy plays it, as the
        # product would; the rules' histogram and priced play theirs on every deployment.
        own = deployment.idle_policy if rules.idle else IdlePolicy.LADDER
        sims.append(
            SimulatedDeployment(
                deployment,
                index=index,
                schedules=numbered,
                arrivals=arrivals,
                rng=np.random.default_rng([seed, zlib.crc32(deployment.name.encode())]),
                start_us=start_us,
                end_us=end_us,
                ladder=ladder if rules.idle or rules.histogram else IdleLadder(),
                histogram=rules.histogram or own is IdlePolicy.HISTOGRAM,
                priced=(
                    PricedPlan(
                        deployment,
                        arrivals,
                        price=rules.price,
                        start_us=start_us,
                        bounds=rules.bounds,
                    )
                    if rules.priced or own is IdlePolicy.PRICED
                    else None
                ),
                wake_lead=(
                    _MEASURED if deployment.name in rules.measured_lead else rules.wake_lead
                ),
                fits=fits,
                bounds=rules.bounds,
            )
        )
    events = []
    for sim in sims:
        first = sim.next_event()
        if first is not None:
            events.append((first[0], first[1], sim.index))
    heapq.heapify(events)
    while events:
        at, rank, index = heapq.heappop(events)
        sim = sims[index]
        sim.handle(at, rank)
        coming = sim.next_event()
        if coming is not None:
            heapq.heappush(events, (coming[0], coming[1], index))
    for sim in sims:
        sim.finish()
    return {
        sim.deployment.name: ScheduleReplay(
            timeline=Timeline.joined(start_us, end_us, sim.phases_until_end()),
            arrivals_us=np.asarray(sim.arrivals, dtype=np.int64),
            waits_us=sim.waits,
            refused=dict(sim.refused),
            decisions=tuple(sim.decisions),
            steps=dict(sim.steps),
        )
        for sim in sims
    }
