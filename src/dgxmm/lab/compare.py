"""Policies side by side: one trace, one fleet, every policy's ledger beside the oracle's.

``compare`` replays each deployment of a fleet under each policy and counts it in the
ledger's words (``ledger.py``); ``Comparison`` sums the deployments per policy and gives each
policy's share of the oracle's freed GiB-hours.

- ``always-on``: never rests; what every other policy frees is counted against it;
- the anchors (``anchors.py``): Ollama's 5-minute stop, llama-swap's ttl with a level-1 sleep,
  Knative's scale to zero (each deployment alone: no fit, no schedules);
- dgxmm's, through the decider's own functions (``replay/fleet.py``), the fleet as one machine:
  ``schedules`` (the fleet file's), ``proposals`` (the product's proposer on the learning
  weeks, ``replay/proposed.py``: the schedules as given until ``learned_until_us``, with the
  accepted proposals after), ``idle-ladder`` (the schedules and the ladder),
  ``ladder-wake-ahead`` (and the measured wake lead), ``histogram`` (the schedules, the
  histogram policy over the ladder, the measured lead), ``priced`` (the schedules and the
  priced policy's break-even rungs at the comparison's price, ``decider/idle/priced.py``);
- ``oracle``: the limit, knowing every request (``oracle.py``). It **ignores schedules and the
  fit between deployments**.
- ``lazy-oracle``: the fair limit at the comparison's price of waiting: it knows every request
  but wakes only when one arrives (``oracle.py``); it ignores schedules and the fit too.

Each policy's cost at the price (``Ledger.cost``) is given against both oracles'.
``repriced`` finds the lazy oracle at another price without replaying the rest; ``priced``
decides at the price too, so ``repriced`` replays it again at the new one.

Where the issue is silent: the anchors' servers draw each step from its distribution as
dgxmm's replays do (``durations.py``; the oracle alone takes medians, knowing the future); a
deployment with sleep level 2 sleeps at level 2 under llama-swap's ttl too.
"""

from __future__ import annotations

import multiprocessing
import zlib
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

import numpy as np

from dgxmm.decider.schedules.lead import parse_wake_lead
from dgxmm.lab.anchors import KNATIVE, LLAMA_SWAP_SLEEP, OLLAMA, IdleTimeout, replay_idle_timeout
from dgxmm.lab.fleetfile import LabDeployment, LabFleet
from dgxmm.lab.ledger import DEFAULT_PRICE, Ledger, Phase, Timeline, check_price, share_of_oracle
from dgxmm.lab.oracle import lazy_oracle, oracle_timeline
from dgxmm.lab.replay.fleet import Rules, ScheduleReplay, replay_fleet
from dgxmm.lab.replay.proposed import learned_schedules, learning_end_us
from dgxmm.lab.traces.trace import Ints, Trace

__all__ = ["Comparison", "Policy", "compare", "cost_ratio"]


class Policy(StrEnum):
    """A policy the lab compares."""

    ALWAYS_ON = "always-on"
    OLLAMA = "ollama-keep-alive-5m"
    LLAMA_SWAP = "llama-swap-ttl-sleep-5m"
    KNATIVE = "knative-scale-to-zero"
    SCHEDULES = "schedules"
    PROPOSALS = "proposals"
    LADDER = "idle-ladder"
    LADDER_LEAD = "ladder-wake-ahead"
    HISTOGRAM = "histogram"
    PRICED = "priced"
    ORACLE = "oracle"
    LAZY_ORACLE = "lazy-oracle"


MEASURED = parse_wake_lead("measured")
_DGXMM: Mapping[Policy, Rules] = {
    Policy.SCHEDULES: Rules(),
    Policy.LADDER: Rules(idle=True),
    Policy.LADDER_LEAD: Rules(idle=True, wake_lead=MEASURED),
    Policy.HISTOGRAM: Rules(idle=True, histogram=True, wake_lead=MEASURED),
}


def priced_rules(price: float) -> Rules:
    """Return the priced policy's rules at ``price``: it decides at the comparison's price."""
    return Rules(idle=True, priced=True, price=price)


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
    learned_until_us: int  # the proposals policy learned before this, and played after
    price: float = DEFAULT_PRICE  # W, GiB-hours a request-second: the costs' and lazy oracle's
    seed: int = 0  # the replays' (``repriced`` replays ``priced`` with it)

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

    def cost(self, policy: Policy) -> float:
        """Return a policy's cost at the comparison's price, over the whole fleet."""
        return self.total(policy).cost(self.price)

    def cost_ratio(self, policy: Policy, limit: Policy) -> float:
        """Return a policy's cost over a limit's (``Policy.ORACLE`` or ``LAZY_ORACLE``)."""
        return cost_ratio(self.total(policy), self.total(limit), self.price)

    def repriced(self, fleet: LabFleet, price: float, trace: Trace | None = None) -> Comparison:
        """Return this comparison at another price: the lazy oracle found again at it.

        Given the ``trace`` it was made of, ``priced`` is replayed again at that price too
        (without it, ``priced`` keeps its choices at the comparison's price).
        """
        start, end = self._span()
        ledgers = {**self.ledgers}
        timelines = {**self.timelines}
        ledgers[Policy.LAZY_ORACLE], timelines[Policy.LAZY_ORACLE] = _lazy_oracles(
            fleet, self.arrivals, check_price(price), start, end
        )
        if trace is not None:
            replays = _replay(
                trace, fleet, priced_rules(price), start_us=start, end_us=end, seed=self.seed
            )
            ledgers[Policy.PRICED], timelines[Policy.PRICED] = _ledgers_of(fleet, replays)
        return replace(self, price=price, ledgers=ledgers, timelines=timelines)

    def _span(self) -> tuple[int, int]:
        first = self.timelines[Policy.ALWAYS_ON][0]  # a fleet holds at least one deployment
        return first.start_us, first.end_us

    def to_json(self) -> dict[str, Any]:
        """Return every policy's totals and its deployments' figures as JSON values."""
        return {
            "oracle_note": "the oracle ignores schedules and the fit between deployments",
            "proposals_learned_until_us": self.learned_until_us,
            "price": self.price,
            "policies": [
                {
                    **self.total(policy).to_json(),
                    "share_of_oracle": self.share_of_oracle(policy),
                    **self._costs(
                        self.total(policy),
                        self.total(Policy.ORACLE),
                        self.total(Policy.LAZY_ORACLE),
                    ),
                    "deployments": [
                        {
                            **ledger.to_json(),
                            "share_of_oracle": share_of_oracle(ledger, oracle),
                            **self._costs(ledger, oracle, lazy),
                        }
                        for ledger, oracle, lazy in zip(
                            self.ledgers[policy],
                            self.ledgers[Policy.ORACLE],
                            self.ledgers[Policy.LAZY_ORACLE],
                            strict=True,
                        )
                    ],
                }
                for policy in self.ledgers
            ],
        }

    def _costs(self, ledger: Ledger, oracle: Ledger, lazy: Ledger) -> dict[str, float]:
        return {
            "cost": ledger.cost(self.price),
            "cost_over_oracle": cost_ratio(ledger, oracle, self.price),
            "cost_over_lazy_oracle": cost_ratio(ledger, lazy, self.price),
        }


def cost_ratio(ledger: Ledger, limit: Ledger, price: float) -> float:
    """Return a ledger's cost at ``price`` over a limit's; a limit of 0 gives 1 or inf."""
    cost, least = ledger.cost(price), limit.cost(price)
    if least <= 0:
        return 1.0 if cost <= 0 else float("inf")
    return cost / least


def compare(
    trace: Trace,
    fleet: LabFleet,
    *,
    start_us: int,
    end_us: int,
    seed: int,
    workers: int = 1,
    price: float = DEFAULT_PRICE,
) -> Comparison:
    """Replay ``trace`` on ``fleet`` over ``[start_us, end_us)`` under every policy.

    ``price`` (W, GiB-hours per request-second) prices the wait in each policy's cost, and
    is the one the lazy oracle picks its rests at.

    ``workers`` > 1 replays dgxmm's policies in that many processes at once: each is a
    replay of the whole fleet and shares nothing with the others, so the result is the same
    (each deployment's draws are seeded by ``seed`` and its name), only sooner.
    """
    check_price(price)
    learned_until = learning_end_us(start_us, end_us)
    span = {"start_us": start_us, "end_us": end_us, "seed": seed}
    jobs: dict[Policy, tuple[Callable[..., dict[str, ScheduleReplay]], tuple[Any, ...]]] = {
        policy: (_replay, (trace, fleet, rules)) for policy, rules in _DGXMM.items()
    }
    jobs[Policy.PRICED] = (_replay, (trace, fleet, priced_rules(price)))
    jobs[Policy.PROPOSALS] = (_proposals, (trace, fleet, learned_until))
    if workers > 1:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            running = {p: pool.submit(job, *args, **span) for p, (job, args) in jobs.items()}
            dgxmm = {policy: future.result() for policy, future in running.items()}
    else:
        dgxmm = {policy: job(*args, **span) for policy, (job, args) in jobs.items()}
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
            used = IdleTimeout(
                name=anchor.name, idle_us=anchor.idle_us, rest=_rest_of(anchor, deployment)
            )
            replayed = replay_idle_timeout(
                arrivals, used, deployment.durations, start_us=start_us, end_us=end_us,
                rng=np.random.default_rng([seed, zlib.crc32(f"{policy.value}:{name}".encode())]),
            )  # fmt: skip
            timelines[policy].append(replayed.timeline)
            ledgers[policy].append(
                Ledger.of(name, footprint, replayed.timeline, arrivals, waits_us=replayed.waits_us)
            )
        for policy, replays in dgxmm.items():
            timelines[policy].append(replays[name].timeline)
            ledgers[policy].append(replays[name].ledger(name, footprint))
        oracle = oracle_timeline(arrivals, footprint, trips, start_us=start_us, end_us=end_us)
        timelines[Policy.ORACLE].append(oracle)
        ledgers[Policy.ORACLE].append(Ledger.of(name, footprint, oracle, arrivals))
    lazy = _lazy_oracles(fleet, requests, price, start_us, end_us)
    ledgers[Policy.LAZY_ORACLE], timelines[Policy.LAZY_ORACLE] = list(lazy[0]), list(lazy[1])
    return Comparison(
        ledgers={policy: tuple(found) for policy, found in ledgers.items()},
        timelines={policy: tuple(found) for policy, found in timelines.items()},
        arrivals=requests,
        learned_until_us=learned_until,
        price=price,
        seed=seed,
    )


def _lazy_oracles(
    fleet: LabFleet, arrivals: Mapping[str, Ints], price: float, start_us: int, end_us: int
) -> tuple[tuple[Ledger, ...], tuple[Timeline, ...]]:
    """Return the lazy oracle's ledger and timeline of each deployment, in the fleet's order."""
    ledgers: list[Ledger] = []
    timelines: list[Timeline] = []
    for deployment in fleet.deployments:
        name = deployment.name
        footprint = fleet.footprint(name)
        replayed = lazy_oracle(
            arrivals[name], footprint, deployment.durations.round_trips(), price=price,
            start_us=start_us, end_us=end_us,
        )  # fmt: skip
        timelines.append(replayed.timeline)
        ledgers.append(
            Ledger.of(
                name, footprint, replayed.timeline, arrivals[name], waits_us=replayed.waits_us
            )
        )
    return tuple(ledgers), tuple(timelines)


def _ledgers_of(
    fleet: LabFleet, replays: Mapping[str, ScheduleReplay]
) -> tuple[tuple[Ledger, ...], tuple[Timeline, ...]]:
    """Return a replay's ledger and timeline of each deployment, in the fleet's order."""
    names = [deployment.name for deployment in fleet.deployments]
    return (
        tuple(replays[name].ledger(name, fleet.footprint(name)) for name in names),
        tuple(replays[name].timeline for name in names),
    )


def _replay(
    trace: Trace, fleet: LabFleet, rules: Rules, *, start_us: int, end_us: int, seed: int
) -> dict[str, ScheduleReplay]:
    return replay_fleet(trace, fleet, rules, start_us=start_us, end_us=end_us, seed=seed)


def _proposals(
    trace: Trace,
    fleet: LabFleet,
    learned_until: int,
    *,
    start_us: int,
    end_us: int,
    seed: int,
) -> dict[str, ScheduleReplay]:
    """The schedules as given while learning, then the accepted proposals on the weeks after.

    The held-out replay begins with every deployment awake, as each replay does: where the
    schedules as given had it asleep at that instant, the proposals' weeks begin with it
    woken for free (a few GiB-seconds; said in docs/savings.md).
    """
    if not start_us < learned_until < end_us:  # too short a span to learn on and play
        return replay_fleet(trace, fleet, Rules(), start_us=start_us, end_us=end_us, seed=seed)
    given = replay_fleet(trace, fleet, Rules(), start_us=start_us, end_us=learned_until, seed=seed)
    learned = learned_schedules(trace, fleet, learn_start_us=start_us, learn_end_us=learned_until)
    # A proposal proposes the measured wake lead, and accepting it sets it (a lab fleet's
    # deployments have none of their own): on the deployments that were proposed something.
    proposed = frozenset(
        mine.name
        for mine, given_one in zip(learned.deployments, fleet.deployments, strict=True)
        if len(mine.schedules) > len(given_one.schedules)
    )
    after = replay_fleet(
        trace, learned, Rules(measured_lead=proposed), start_us=learned_until, end_us=end_us,
        seed=seed,
    )  # fmt: skip
    joined: dict[str, ScheduleReplay] = {}
    for name, before in given.items():
        later = after[name]
        phases = before.timeline.phases() + later.timeline.phases()
        refused = dict(before.refused)
        for reason, count in later.refused.items():
            refused[reason] = refused.get(reason, 0) + count
        joined[name] = ScheduleReplay(
            timeline=Timeline.joined(start_us, end_us, phases),
            arrivals_us=np.concatenate([before.arrivals_us, later.arrivals_us]),
            waits_us=np.concatenate([before.waits_us, later.waits_us]),
            refused=refused,
            decisions=before.decisions + later.decisions,
            steps=later.steps,
        )
    return joined


def _rest_of(anchor: IdleTimeout, deployment: LabDeployment) -> Phase:
    if anchor.rest is Phase.STOPPED:
        return Phase.STOPPED
    return Phase.ASLEEP_2 if deployment.sleep_level == 2 else Phase.ASLEEP_1
