"""A proposal's backtest: its schedules replayed on the deployment's own held-out weeks (issue 26).

Given a deployment's requests (its rollups' minutes, as the proposer learns from them), the
schedules in force and a proposal's, ``backtest``:

1. **Splits** the span as the lab's proposals policy does (``learning_end_us``): the first
   weeks to learn on, the rest held out (30 days: 3 weeks learned, 9 days held out).
2. **Asks whether the proposal is held out**: the product's proposer (``learn_proposals``,
   the very functions ``Proposer.run`` calls) run on the learning weeks alone. When it makes
   the same proposal (the same days, times and zone), the held-out weeks are out of sample;
   when it does not, the figures are still given, marked in-sample (``held_out`` false):
   the proposal came from weeks the test replays.
3. **Replays the held-out weeks twice** through the lab (``replay_fleet``: the runner's
   verdicts, the proxy's hold, the fit): with the schedules in force, and with the proposal's
   added (and its measured wake lead, when it proposes one). Per week (7 days from the split;
   the last may be shorter): GiB-hours freed against the schedules in force, the requests,
   those that would have met the deployment not awake (cold), and their added waits.

The replays draw the server's durations from ``ServerTimes`` with ``seed``: the same inputs
give the same backtest, and a direct replay with them gives the same figures (the test).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dgxmm.decider.profiles import WINDOW_DAYS, read_profile
from dgxmm.decider.proposals.rows import Proposal
from dgxmm.decider.schedules import ScheduleAction, ScheduleService
from dgxmm.decider.traffic import read_minutes
from dgxmm.fleet import Deployment, Fleet, Gpu
from dgxmm.jobs import resolve_zone
from dgxmm.lab.fleetfile import LabDeployment, LabFleet, LabSchedule
from dgxmm.lab.ledger import Ledger, check_price
from dgxmm.lab.replay.fleet import Rules, ScheduleReplay, replay_fleet
from dgxmm.lab.replay.proposed import learn_proposals, learning_end_us
from dgxmm.lab.traces.trace import Ints, Trace
from dgxmm.store import reading
from dgxmm.time_units import DAY_US, MINUTE_US

__all__ = [
    "Backtest",
    "BacktestWeek",
    "arrivals_of_minutes",
    "backtest",
    "backtest_proposal",
    "deployment_alone",
    "proposal_backtester",
    "recorded_arrivals",
    "shown_backtest",
]

WEEK_US = 7 * DAY_US
ProposalKey = tuple[int, str, int, str, str]  # sleep days, time, wake days, time, zone


@dataclass(frozen=True, slots=True, kw_only=True)
class BacktestWeek:
    """One held-out week: what the proposal would have freed and cost.

    The wait figures and ``held_gib_h`` are None in a backtest stored before they were kept
    (issue 42): such a week gives no cost.
    """

    start_us: int
    end_us: int
    freed_gib_h: float  # against the schedules in force
    requests: int
    cold: int  # would have met the deployment not awake (held, or refused)
    wait_p50_s: float | None  # the cold ones' added wait (None: no cold request)
    wait_p99_s: float | None
    wait_max_s: float | None
    held_gib_h: float | None = None  # with the proposal
    wait_total_s: float | None = None  # with the proposal, in request-seconds
    wait_mean_s: float | None = None  # over every request, a warm one as 0
    wait_p99_all_s: float | None = None
    in_force_wait_total_s: float | None = None  # the schedules in force alone

    @property
    def days(self) -> float:
        """Return the week's length in days: 7, or fewer for the last one."""
        return (self.end_us - self.start_us) / DAY_US

    @property
    def is_partial(self) -> bool:
        """Tell whether the week is shorter than 7 days (the span's rest)."""
        return self.end_us - self.start_us < WEEK_US

    def cost(self, price: float) -> float | None:
        """Return ``GiB-hours held + price x request-seconds waited`` with the proposal."""
        if self.held_gib_h is None or self.wait_total_s is None:
            return None
        return self.held_gib_h + check_price(price) * self.wait_total_s

    def saves(self, price: float) -> float | None:
        """Return the cost at ``price`` with the schedules in force, less with the proposal."""
        if self.wait_total_s is None or self.in_force_wait_total_s is None:
            return None
        added = self.wait_total_s - self.in_force_wait_total_s
        return self.freed_gib_h - check_price(price) * added

    def to_json(self, price: float | None = None) -> dict[str, Any]:
        """Return the week as JSON values; with a price, its cost and saving at it too."""
        shown: dict[str, Any] = {
            "start_us": self.start_us,
            "end_us": self.end_us,
            "days": round(self.days, 6),
            "partial": self.is_partial,
            "freed_gib_h": round(self.freed_gib_h, 6),
            "requests": self.requests,
            "cold": self.cold,
            "wait_p50_s": self.wait_p50_s,
            "wait_p99_s": self.wait_p99_s,
            "wait_max_s": self.wait_max_s,
            "held_gib_h": _rounded(self.held_gib_h),
            "wait_total_s": _rounded(self.wait_total_s),
            "wait_mean_s": _rounded(self.wait_mean_s),
            "wait_p99_all_s": _rounded(self.wait_p99_all_s),
            "in_force_wait_total_s": _rounded(self.in_force_wait_total_s),
        }
        if price is not None:
            shown["price"] = price
            shown["cost"] = _rounded(self.cost(price))
            shown["saves"] = _rounded(self.saves(price))
        return shown

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BacktestWeek:
        """Read a week written by ``to_json`` (``days`` and ``partial`` are derived)."""
        return cls(
            start_us=int(data["start_us"]),
            end_us=int(data["end_us"]),
            freed_gib_h=float(data["freed_gib_h"]),
            requests=int(data["requests"]),
            cold=int(data["cold"]),
            wait_p50_s=data["wait_p50_s"],
            wait_p99_s=data["wait_p99_s"],
            wait_max_s=data["wait_max_s"],
            held_gib_h=data.get("held_gib_h"),
            wait_total_s=data.get("wait_total_s"),
            wait_mean_s=data.get("wait_mean_s"),
            wait_p99_all_s=data.get("wait_p99_all_s"),
            in_force_wait_total_s=data.get("in_force_wait_total_s"),
        )


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


@dataclass(frozen=True, slots=True, kw_only=True)
class Backtest:
    """A proposal's backtest: per held-out week, and whether the weeks were held out."""

    learned_from_us: int
    tested_from_us: int  # the learning weeks end here
    tested_until_us: int
    held_out: bool  # the learning weeks alone make the same proposal
    weeks: tuple[BacktestWeek, ...]

    @property
    def cold(self) -> int:
        """Return the requests that would have met the deployment not awake, in all weeks."""
        return sum(week.cold for week in self.weeks)

    @property
    def freed_gib_h(self) -> float:
        """Return what it would have freed against the schedules in force, in all weeks."""
        return sum(week.freed_gib_h for week in self.weeks)

    def to_json(self, price: float | None = None) -> dict[str, Any]:
        """Return the backtest as JSON values (what a proposal stores; a price: as shown)."""
        return {
            "learned_from_us": self.learned_from_us,
            "tested_from_us": self.tested_from_us,
            "tested_until_us": self.tested_until_us,
            "held_out": self.held_out,
            "freed_gib_h": round(self.freed_gib_h, 6),
            "cold": self.cold,
            "weeks": [week.to_json(price) for week in self.weeks],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Backtest:
        """Read a backtest written by ``to_json``."""
        return cls(
            learned_from_us=int(data["learned_from_us"]),
            tested_from_us=int(data["tested_from_us"]),
            tested_until_us=int(data["tested_until_us"]),
            held_out=bool(data["held_out"]),
            weeks=tuple(BacktestWeek.from_json(week) for week in data["weeks"]),
        )


def backtest(
    *,
    arrivals_us: Ints,
    deployment: LabDeployment,
    fleet: LabFleet,
    proposed: tuple[LabSchedule, ...],
    key: ProposalKey,
    measured_lead: bool,
    start_us: int,
    end_us: int,
    seed: int = 1,
) -> Backtest | None:
    """Backtest a proposal on ``[start_us, end_us)``; None when no week can be held out.

    ``fleet`` holds ``deployment`` alone, with the schedules in force; ``proposed`` are the
    proposal's sleep and wake schedules; ``key`` its days, times and zone.
    """
    split = learning_end_us(start_us, end_us)
    if not start_us < split < end_us:
        return None
    trace = Trace(
        models=(deployment.model,),
        at_us=arrivals_us,
        model=np.zeros(len(arrivals_us), dtype=np.int64),
        input_tokens=np.full(len(arrivals_us), -1, dtype=np.int64),
        output_tokens=np.full(len(arrivals_us), -1, dtype=np.int64),
    )
    learned = learn_proposals(trace, fleet, learn_start_us=start_us, learn_end_us=split)
    held_out = any(
        verdict.candidate.key == key for verdict in learned[deployment.name].decided.verdicts
    )
    with_proposal = replace(
        fleet,
        deployments=tuple(
            replace(d, schedules=(*d.schedules, *proposed)) if d.name == deployment.name else d
            for d in fleet.deployments
        ),
    )
    rules = Rules(measured_lead=frozenset({deployment.name}) if measured_lead else frozenset())
    span = {"start_us": split, "end_us": end_us, "seed": seed}
    before = replay_fleet(trace, fleet, Rules(), **span)[deployment.name]
    after = replay_fleet(trace, with_proposal, rules, **span)[deployment.name]
    weeks = []
    at = split
    while at < end_us:
        until = min(at + WEEK_US, end_us)
        weeks.append(_week(deployment, before, after, at, until))
        at = until
    return Backtest(
        learned_from_us=start_us,
        tested_from_us=split,
        tested_until_us=end_us,
        held_out=held_out,
        weeks=tuple(weeks),
    )


def _week(
    deployment: LabDeployment, before: ScheduleReplay, after: ScheduleReplay, at: int, until: int
) -> BacktestWeek:
    def ledger(replay: ScheduleReplay) -> Ledger:
        inside = (replay.arrivals_us >= at) & (replay.arrivals_us < until)
        return Ledger.of(
            deployment.name,
            deployment.footprint,
            replay.timeline.clipped(at, until),
            replay.arrivals_us[inside],
            waits_us=replay.waits_us[inside],
        )

    force, proposal = ledger(before), ledger(after)
    waits = np.asarray(proposal.waits_s)
    return BacktestWeek(
        start_us=at,
        end_us=until,
        freed_gib_h=force.held_gib_h - proposal.held_gib_h,
        requests=proposal.requests,
        cold=proposal.cold,
        wait_p50_s=_quantile(waits, 0.50),
        wait_p99_s=_quantile(waits, 0.99),
        wait_max_s=None if not len(waits) else round(float(waits.max()), 6),
        held_gib_h=proposal.held_gib_h,
        wait_total_s=proposal.wait_total_s,
        wait_mean_s=proposal.wait_mean_s,
        wait_p99_all_s=proposal.wait_all_s(0.99),
        in_force_wait_total_s=force.wait_total_s,
    )


def _quantile(waits: np.ndarray[Any, Any], share: float) -> float | None:
    if not len(waits):
        return None
    return round(float(np.quantile(waits, share, method="higher")), 6)


def arrivals_of_minutes(minute_us: Ints, requests: Ints) -> Ints:
    """Return arrivals spread evenly inside each minute: ``n`` requests at (i + 1/2) / n of it.

    The rollups say how many requests completed in a minute, not when; the proposer learns
    from those counts, and the backtest replays them so.
    """
    counts = np.maximum(np.asarray(requests, dtype=np.int64), 0)
    total = int(counts.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    starts = np.repeat(np.asarray(minute_us, dtype=np.int64), counts)
    within = np.concatenate([np.arange(n, dtype=np.int64) for n in counts.tolist() if n])
    sizes = np.repeat(counts, counts)
    found: Ints = starts + ((2 * within + 1) * MINUTE_US) // (2 * sizes)
    return found


def backtest_proposal(
    fleet: Fleet, schedules: ScheduleService, proposal: Proposal
) -> Backtest | None:
    """Backtest a proposal on the weeks its profile was built from (the product's entry).

    The deployment alone on its own GPUs (the fit between deployments is not replayed), its
    switched-on schedules in force, vLLM's published durations (``ServerTimes``), its idle
    policies left out; the traffic is its rollups' minutes of the profile's 30 days. None
    when the profile was never built or the span holds no week to hold out.
    """
    deployment = fleet.deployments.get(proposal.deployment_id)
    with reading(fleet.store.engine) as connection:
        built = read_profile(connection, deployment.id, deployment.time_zone).built_at
    if built is None:
        return None
    start = built - WINDOW_DAYS * DAY_US
    arrivals = recorded_arrivals(fleet, deployment, start, built)
    lab, machine = deployment_alone(deployment, schedules)
    proposed = (
        LabSchedule(action=ScheduleAction.SLEEP, days=proposal.sleep_days,
                    time=proposal.sleep_time, time_zone=proposal.time_zone),
        LabSchedule(action=ScheduleAction.WAKE, days=proposal.wake_days,
                    time=proposal.wake_time, time_zone=proposal.time_zone),
    )  # fmt: skip
    return backtest(
        arrivals_us=arrivals,
        deployment=lab,
        fleet=machine,
        proposed=proposed,
        key=proposal.key,
        measured_lead=proposal.wake_lead is not None,
        start_us=start,
        end_us=built,
    )


def recorded_arrivals(fleet: Fleet, deployment: Deployment, start_us: int, end_us: int) -> Ints:
    """Return a deployment's requests on record in ``[start_us, end_us)``: its rollups'
    minutes, each spread evenly inside it (``arrivals_of_minutes``)."""
    zone = resolve_zone(deployment.time_zone)
    with reading(fleet.store.engine) as connection:
        found = dict(read_minutes(connection, {deployment.id: zone}, start_us, end_us))
    series = found.get(deployment.id)
    if series is None:
        return np.zeros(0, dtype=np.int64)
    return arrivals_of_minutes(series.minute_us, series.requests)


def deployment_alone(
    deployment: Deployment, schedules: ScheduleService
) -> tuple[LabDeployment, LabFleet]:
    """Return a deployment as the lab replays it alone on its own GPUs, with its switched-on
    schedules, vLLM's published durations and no idle ladder of its own."""
    count = max(1, deployment.gpu_count)
    lab = LabDeployment(
        name=deployment.name,
        model=deployment.model,
        gpus=tuple(range(count)),
        memory_gib_awake=deployment.memory_gib_awake,
        memory_gib_asleep=deployment.memory_gib_asleep,
        memory_gib_asleep_2=deployment.memory_gib_asleep,
        sleep_level=deployment.sleep_level,
        priority=deployment.priority,
        time_zone=deployment.time_zone,
        idle_wait_budget=deployment.idle_wait_budget,
        schedules=tuple(
            LabSchedule(action=s.action, days=s.days, time=s.time, time_zone=s.time_zone)
            for s in schedules.list(deployment.id)
            if s.enabled
        ),
    )
    room = max(deployment.memory_gib_awake, 1.0)
    machine = LabFleet(
        gpus=tuple(Gpu(index=i, name="GPU", memory_gib=room) for i in range(count)),
        deployments=(lab,),
    )
    return lab, machine


def shown_backtest(stored: dict[str, Any] | None, price: float) -> dict[str, Any] | None:
    """Return a stored backtest as the API and the pages show it: each week's length, whether
    it is partial, and its cost and saving at ``price``."""
    return None if stored is None else Backtest.from_json(stored).to_json(price)


def proposal_backtester(
    fleet: Fleet, schedules: ScheduleService
) -> Callable[[Proposal], dict[str, Any] | None]:
    """Return what ``ProposalService(backtest=...)`` calls: a proposal's backtest as JSON."""

    def run(proposal: Proposal) -> dict[str, Any] | None:
        found = backtest_proposal(fleet, schedules, proposal)
        return None if found is None else found.to_json()

    return run
