"""A deployment's trade picture: freed GiB-hours against mean added wait, on its own weeks.

What the Savings page draws per deployment (issue 42, point 5): its recorded requests of the
last four weeks (its rollups' minutes, as the backtests read them: ``recorded_arrivals``),
replayed through the lab with the deployment alone on its own GPUs (``deployment_alone``),
under policies in named series (``SWEEPS``). Each point is one replay's freed GiB-hours
against always-on, its mean added wait over every request, and its cost at the price:

- ``anchors``: Ollama's 5-minute stop, llama-swap's 5-minute sleep, Knative's 90 s (each
  deployment alone, no schedules, as ``compare`` replays them);
- ``ladder``: dgxmm's idle ladder with the deployment's schedules, at a sweep of first steps
  (``LADDER_STEPS_S``), each ladder the default's shape (level 2 after 3x the first step, a
  stop after 12x, as 300 / 900 / 3,600 s);
- ``priced``: the priced policy with the deployment's schedules, deciding at a sweep of prices
  (``PRICED_PRICES``: the three standard prices and two between);
- ``budget``: the priced policy at the price the deployment's wait budget found
  (``decider/idle/budget.py``), when it has one;
- ``oracles``: the oracle (wakes ahead, never a wait) and the lazy oracle at the price.

A series is a name and a function from the replay's inputs to its points, so another policy
is one more entry in ``SWEEPS``. The seed is fixed: the same weeks give the same picture.

The wait budget's search replays the same weeks the same way (``budget_traffic``: the span,
its recorded requests and a replay of ``priced`` at any price), so the budget's point is a
point the search saw.
"""

from __future__ import annotations

import json
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta

import numpy as np

from dgxmm.decider.idle.budget import Traffic, Trial
from dgxmm.decider.schedules import ScheduleService
from dgxmm.decider.schedules.slots import local_today, slot_on
from dgxmm.fleet import Deployment, Fleet, IdleLadder
from dgxmm.jobs import resolve_zone
from dgxmm.lab.anchors import KNATIVE, LLAMA_SWAP_SLEEP, OLLAMA, IdleTimeout, replay_idle_timeout
from dgxmm.lab.backtest import deployment_alone, recorded_arrivals
from dgxmm.lab.compare import priced_rules
from dgxmm.lab.fleetfile import LabDeployment, LabFleet
from dgxmm.lab.ledger import DEFAULT_PRICE, Ledger, Phase, Timeline, check_price
from dgxmm.lab.oracle import lazy_oracle, oracle_timeline
from dgxmm.lab.replay.fleet import Rules, replay_fleet
from dgxmm.lab.traces.trace import Ints, Trace
from dgxmm.time_units import MINUTE_US, SECOND_US

__all__ = [
    "BUDGET_MAX_REQUESTS",
    "LADDER_STEPS_S",
    "MAX_REQUESTS",
    "PRICED_PRICES",
    "SWEEPS",
    "TRADE_DAYS",
    "Sweep",
    "TradeInput",
    "TradePicture",
    "TradePictures",
    "TradePoint",
    "budget_traffic",
    "trade_points",
]

LADDER_STEPS_S = (30, 60, 120, 300, 900, 1800)  # the ladder's first steps swept
PRICED_PRICES = (0.01, 0.03, 0.1, 0.3, 1.0)  # the standard prices, and one between each two
SEED = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class TradeInput:
    """What every series replays: one deployment alone, its requests, the span, the price."""

    deployment: LabDeployment
    fleet: LabFleet  # the deployment alone on its own GPUs
    arrivals_us: Ints
    start_us: int
    end_us: int
    price: float
    budget_price: float | None = None  # the price the wait budget found, when it has one

    @property
    def trace(self) -> Trace:
        """Return the arrivals as a trace of the deployment's model."""
        count = len(self.arrivals_us)
        return Trace(
            models=(self.deployment.model,),
            at_us=self.arrivals_us,
            model=np.zeros(count, dtype=np.int64),
            input_tokens=np.full(count, -1, dtype=np.int64),
            output_tokens=np.full(count, -1, dtype=np.int64),
        )

    def ledger(self, timeline: Timeline, waits_us: Ints | None = None) -> Ledger:
        """Return a replay's ledger over the span (``waits_us``: per request, or none)."""
        return Ledger.of(
            self.deployment.name,
            self.deployment.footprint,
            timeline,
            self.arrivals_us,
            waits_us=waits_us,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TradePoint:
    """One replay on the picture."""

    series: str
    label: str
    freed_gib_h: float
    wait_mean_s: float
    wait_p99_all_s: float
    cost: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Sweep:
    """A named series: its points, each a label and a replay's ledger."""

    name: str
    points: Callable[[TradeInput], list[tuple[str, Ledger]]]


def _anchors(given: TradeInput) -> list[tuple[str, Ledger]]:
    found = []
    for anchor in (OLLAMA, LLAMA_SWAP_SLEEP, KNATIVE):
        rest = anchor.rest
        if rest is not Phase.STOPPED and given.deployment.sleep_level == 2:
            rest = Phase.ASLEEP_2  # a level-2 sleeper sleeps at level 2 under a ttl too
        replayed = replay_idle_timeout(
            given.arrivals_us,
            IdleTimeout(name=anchor.name, idle_us=anchor.idle_us, rest=rest),
            given.deployment.durations,
            start_us=given.start_us,
            end_us=given.end_us,
            rng=np.random.default_rng([SEED, zlib.crc32(anchor.name.encode())]),
        )
        found.append((anchor.name, given.ledger(replayed.timeline, replayed.waits_us)))
    return found


def _ladder(given: TradeInput) -> list[tuple[str, Ledger]]:
    found = []
    trace = given.trace
    for first in LADDER_STEPS_S:
        ladder = IdleLadder(
            sleep_after_us=first * SECOND_US,
            deepen_after_us=3 * first * SECOND_US,
            stop_after_us=12 * first * SECOND_US,
        )
        fleet = replace(given.fleet, deployments=(replace(given.deployment, idle=ladder),))
        replayed = replay_fleet(
            trace, fleet, Rules(idle=True), start_us=given.start_us, end_us=given.end_us,
            seed=SEED,
        )[given.deployment.name]  # fmt: skip
        found.append((f"first step {first} s", given.ledger(replayed.timeline, replayed.waits_us)))
    return found


def priced_ledger(given: TradeInput, price: float) -> Ledger:
    """Return the ledger of the priced policy deciding at ``price``, with its schedules."""
    fleet = replace(given.fleet, deployments=(given.deployment,))
    replayed = replay_fleet(
        given.trace, fleet, priced_rules(price), start_us=given.start_us, end_us=given.end_us,
        seed=SEED,
    )[given.deployment.name]  # fmt: skip
    return given.ledger(replayed.timeline, replayed.waits_us)


def _priced(given: TradeInput) -> list[tuple[str, Ledger]]:
    return [(f"at {price:g}", priced_ledger(given, price)) for price in PRICED_PRICES]


def _budget(given: TradeInput) -> list[tuple[str, Ledger]]:
    if given.budget_price is None:
        return []
    return [(f"budget at {given.budget_price:g}", priced_ledger(given, given.budget_price))]


def _oracles(given: TradeInput) -> list[tuple[str, Ledger]]:
    trips = given.deployment.durations.round_trips()
    footprint, start, end = given.deployment.footprint, given.start_us, given.end_us
    best = oracle_timeline(given.arrivals_us, footprint, trips, start_us=start, end_us=end)
    lazy = lazy_oracle(
        given.arrivals_us, footprint, trips, price=given.price, start_us=start, end_us=end
    )
    return [
        ("oracle", given.ledger(best)),
        (f"lazy oracle at {given.price:g}", given.ledger(lazy.timeline, lazy.waits_us)),
    ]


# The picture's series, in the order they are drawn (and listed in its legend).
SWEEPS: tuple[Sweep, ...] = (
    Sweep(name="anchors", points=_anchors),
    Sweep(name="ladder", points=_ladder),
    Sweep(name="priced", points=_priced),
    Sweep(name="budget", points=_budget),
    Sweep(name="oracles", points=_oracles),
)


def trade_points(given: TradeInput, sweeps: tuple[Sweep, ...] = SWEEPS) -> list[TradePoint]:
    """Replay every series' points and return them, series by series."""
    price = check_price(given.price)
    return [
        TradePoint(
            series=sweep.name,
            label=label,
            freed_gib_h=ledger.freed_gib_h,
            wait_mean_s=ledger.wait_mean_s,
            wait_p99_all_s=ledger.wait_all_s(0.99),
            cost=ledger.cost(price),
        )
        for sweep in sweeps
        for label, ledger in sweep.points(given)
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class TradePicture:
    """A deployment's points over its span, or why there are none."""

    start_us: int
    end_us: int
    requests: int
    capped: bool  # the span shortened to the latest ``MAX_REQUESTS``
    points: tuple[TradePoint, ...]


class TradePictures:
    """Each deployment's trade picture, replayed once a local day and price, kept here.

    The key is everything the replay reads: the deployment as the lab has it (memory, GPUs,
    sleep level, schedules), the span (the last ``TRADE_DAYS`` local days up to today's
    midnight, from its creation at the earliest) and the price; the newest ``KEPT`` are kept.
    A picture replays at most ``MAX_REQUESTS`` (a busy deployment's latest). Thread-safe: a
    page's routes run on worker threads.
    """

    KEPT = 64

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, TradePicture] = OrderedDict()

    def cached(
        self, schedules: ScheduleService, deployment: Deployment, *, now_us: int, price: float,
        budget_price: float | None = None,
    ) -> TradePicture | None:  # fmt: skip
        """Return the picture when it is kept already (None: it would be replayed)."""
        key = self._key(schedules, deployment, now_us, price, budget_price)
        with self._lock:
            return self._kept.get(key)

    def picture(self, fleet: Fleet, schedules: ScheduleService, deployment: Deployment,
                *, now_us: int, price: float,
                budget_price: float | None = None) -> TradePicture:  # fmt: skip
        """Return the deployment's picture, replaying it unless kept (``budget_price``: the
        price its wait budget found, drawn as the budget's point)."""
        key = self._key(schedules, deployment, now_us, price, budget_price)
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
                return found
        start, end, arrivals, capped = recorded_span(fleet, deployment, now_us, MAX_REQUESTS)
        points: tuple[TradePoint, ...] = ()
        if len(arrivals):
            lab, alone = deployment_alone(deployment, schedules)
            given = TradeInput(deployment=lab, fleet=alone, arrivals_us=arrivals, start_us=start,
                               end_us=end, price=price, budget_price=budget_price)  # fmt: skip
            points = tuple(trade_points(given))
        made = TradePicture(
            start_us=start,
            end_us=end,
            requests=len(arrivals),
            capped=capped,
            points=points,
        )
        with self._lock:
            self._kept[key] = made
            while len(self._kept) > self.KEPT:
                self._kept.popitem(last=False)
        return made

    @staticmethod
    def _key(schedules: ScheduleService, deployment: Deployment, now_us: int, price: float,
             budget_price: float | None) -> str:  # fmt: skip
        lab, _ = deployment_alone(deployment, schedules)
        return json.dumps(
            [deployment.id, _span(deployment, now_us), price, budget_price, lab.to_json()],
            sort_keys=True,
        )


TRADE_DAYS = 28
# The most requests one picture replays: its 11 replays took 1.3 s for 11,076 requests here
# and 3.4 s for 20,330 on the shared 2 cores (lazy oracle 2.1 s of them); a busier
# deployment's picture covers its latest this many requests, and says over how long.
MAX_REQUESTS = 10_000
# The most requests the wait budget's daily search replays (its latest, as above): a daily
# job, not a page view, but its up to 10 replays share the host's cores with the API.
BUDGET_MAX_REQUESTS = 100_000


def recorded_span(
    fleet: Fleet, deployment: Deployment, now_us: int, most: int
) -> tuple[int, int, Ints, bool]:
    """Return the span of its last ``TRADE_DAYS``, its requests on record in it and whether
    they were capped to the latest ``most`` (the span then begins at the first one's minute)."""
    start, end = _span(deployment, now_us)
    if end <= start:
        return start, end, np.zeros(0, dtype=np.int64), False
    arrivals = recorded_arrivals(fleet, deployment, start, end)
    capped = len(arrivals) > most
    if capped:
        first = int(arrivals[-most])
        start = first - first % MINUTE_US
        arrivals = arrivals[arrivals >= start]
    return start, end, arrivals, capped


def budget_traffic(
    fleet: Fleet, schedules: ScheduleService, deployment: Deployment, now_us: int
) -> Traffic:
    """Return what the wait budget's search replays: the deployment's last four weeks (as the
    trade picture replays them) and a replay of ``priced`` there at any price."""
    start, end, arrivals, capped = recorded_span(fleet, deployment, now_us, BUDGET_MAX_REQUESTS)
    if not len(arrivals):
        return Traffic(start_us=start, end_us=end, requests=0, capped=False, replay=None)
    lab, alone = deployment_alone(deployment, schedules)
    given = TradeInput(deployment=lab, fleet=alone, arrivals_us=arrivals, start_us=start,
                       end_us=end, price=DEFAULT_PRICE)  # fmt: skip

    def replay(price: float) -> Trial:
        ledger = priced_ledger(given, price)
        return Trial(
            price=price,
            freed_gib_h=ledger.freed_gib_h,
            wait_mean_s=ledger.wait_mean_s,
            wait_p99_all_s=ledger.wait_all_s(0.99),
        )

    return Traffic(start_us=start, end_us=end, requests=len(arrivals), capped=capped, replay=replay)


def _span(deployment: Deployment, now_us: int) -> tuple[int, int]:
    """Return the last ``TRADE_DAYS`` whole local days before today, from its creation on."""
    zone = resolve_zone(deployment.time_zone)
    today = local_today(now_us, zone)
    end = slot_on(today, (0, 0), zone).at_us
    start = slot_on(today - timedelta(days=TRADE_DAYS), (0, 0), zone).at_us
    return max(start, deployment.created_at), end
