"""Policies side by side: one trace, one fleet, every policy's ledger beside the oracle's.

``compare`` replays each deployment of a fleet under each policy and counts it in the
ledger's words (``ledger.py``); ``Comparison`` sums the deployments per policy and gives each
policy's share of the oracle's freed GiB-hours.

The policies so far (issue 24 lists more, to come with the idle ladder of issue 25 and the
proposer):

- ``always-on``: never rests; what every other policy frees is counted against it;
- the anchors (``anchors.py``): Ollama's 5-minute stop, llama-swap's ttl with a level-1 sleep,
  Knative's scale to zero;
- ``schedules``: the fleet file's schedules, through the decider's own functions
  (``replay.py``);
- ``oracle``: the limit, knowing every request (``oracle.py``). It **ignores schedules and the
  fit between deployments**.

Where the issue is silent: the anchors' servers take each step's median time (the schedules'
replay draws every step from its distribution); a deployment with sleep level 2 sleeps at
level 2 under llama-swap's ttl too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from dgxmm.lab.anchors import KNATIVE, LLAMA_SWAP_SLEEP, OLLAMA, IdleTimeout, replay_idle_timeout
from dgxmm.lab.fleetfile import LabDeployment, LabFleet
from dgxmm.lab.ledger import Ledger, Phase, Timeline, share_of_oracle
from dgxmm.lab.oracle import oracle_timeline
from dgxmm.lab.replay import replay_schedules
from dgxmm.lab.trace import Ints, Trace

__all__ = ["Comparison", "Policy", "compare"]


class Policy(StrEnum):
    """A policy the lab compares."""

    ALWAYS_ON = "always-on"
    OLLAMA = "ollama-keep-alive-5m"
    LLAMA_SWAP = "llama-swap-ttl-sleep-5m"
    KNATIVE = "knative-scale-to-zero"
    SCHEDULES = "schedules"
    ORACLE = "oracle"


_ANCHORS: Mapping[Policy, IdleTimeout] = {
    Policy.OLLAMA: OLLAMA,
    Policy.LLAMA_SWAP: LLAMA_SWAP_SLEEP,
    Policy.KNATIVE: KNATIVE,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    """Every policy's ledger per deployment, on one trace and fleet."""

    ledgers: Mapping[Policy, tuple[Ledger, ...]]  # in the fleet's order
    timelines: Mapping[Policy, tuple[Timeline, ...]]  # in the fleet's order
    arrivals: Mapping[str, Ints]  # each deployment's requests in the span, by its name

    def total(self, policy: Policy) -> Ledger:
        """Return the deployments' figures summed, as one ledger named after the policy."""
        parts = self.ledgers[policy]
        refused: dict[str, int] = {}
        for part in parts:
            for reason, count in part.refused.items():
                refused[reason] = refused.get(reason, 0) + count
        return Ledger(
            name=policy.value,
            hours=max((part.hours for part in parts), default=0.0),
            held_awake_gib_h=sum(part.held_awake_gib_h for part in parts),
            held_asleep_gib_h=sum(part.held_asleep_gib_h for part in parts),
            always_on_gib_h=sum(part.always_on_gib_h for part in parts),
            requests=sum(part.requests for part in parts),
            cold=sum(part.cold for part in parts),
            waits_s=tuple(wait for part in parts for wait in part.waits_s),
            refused=refused,
            wakes=sum(part.wakes for part in parts),
            starts=sum(part.starts for part in parts),
            sleeps=sum(part.sleeps for part in parts),
            stops=sum(part.stops for part in parts),
        )

    def share_of_oracle(self, policy: Policy) -> float:
        """Return a policy's freed GiB-hours over the oracle's, over the whole fleet."""
        return share_of_oracle(self.total(policy), self.total(Policy.ORACLE))

    def to_json(self) -> dict[str, Any]:
        """Return every policy's totals and its deployments' figures as JSON values."""
        return {
            "oracle_note": "the oracle ignores schedules and the fit between deployments",
            "policies": [
                {
                    **self.total(policy).to_json(),
                    "share_of_oracle": self.share_of_oracle(policy),
                    "deployments": [ledger.to_json() for ledger in self.ledgers[policy]],
                }
                for policy in self.ledgers
            ],
        }


def compare(trace: Trace, fleet: LabFleet, *, start_us: int, end_us: int, seed: int) -> Comparison:
    """Replay ``trace`` on ``fleet`` over ``[start_us, end_us)`` under every policy."""
    scheduled = replay_schedules(trace, fleet, start_us=start_us, end_us=end_us, seed=seed)
    ledgers: dict[Policy, list[Ledger]] = {policy: [] for policy in Policy}
    timelines: dict[Policy, list[Timeline]] = {policy: [] for policy in Policy}
    requests: dict[str, Ints] = {}
    for deployment in fleet.deployments:
        name = deployment.name
        footprint = fleet.footprint(name)
        arrivals = trace.arrivals_of(deployment.model)
        arrivals = arrivals[(arrivals >= start_us) & (arrivals < end_us)]
        requests[name] = arrivals
        trips = deployment.durations.round_trips()
        always = Timeline.always(start_us, end_us)
        timelines[Policy.ALWAYS_ON].append(always)
        ledgers[Policy.ALWAYS_ON].append(Ledger.of(name, footprint, always, arrivals))
        for policy, anchor in _ANCHORS.items():
            rest = _rest_of(anchor, deployment)
            used = IdleTimeout(name=anchor.name, idle_us=anchor.idle_us, rest=rest)
            replayed = replay_idle_timeout(
                arrivals, used, trips[rest], start_us=start_us, end_us=end_us
            )
            timelines[policy].append(replayed.timeline)
            ledgers[policy].append(
                Ledger.of(name, footprint, replayed.timeline, arrivals, waits_us=replayed.waits_us)
            )
        timelines[Policy.SCHEDULES].append(scheduled[name].timeline)
        ledgers[Policy.SCHEDULES].append(scheduled[name].ledger(name, footprint))
        oracle = oracle_timeline(arrivals, footprint, trips, start_us=start_us, end_us=end_us)
        timelines[Policy.ORACLE].append(oracle)
        ledgers[Policy.ORACLE].append(Ledger.of(name, footprint, oracle, arrivals))
    return Comparison(
        ledgers={policy: tuple(found) for policy, found in ledgers.items()},
        timelines={policy: tuple(found) for policy, found in timelines.items()},
        arrivals=requests,
    )


def _rest_of(anchor: IdleTimeout, deployment: LabDeployment) -> Phase:
    if anchor.rest is Phase.STOPPED:
        return Phase.STOPPED
    return Phase.ASLEEP_2 if deployment.sleep_level == 2 else Phase.ASLEEP_1
