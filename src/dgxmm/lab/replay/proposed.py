"""Proposals learned on the first weeks of a trace, accepted, and played on the weeks after.

``learned_schedules`` gives each deployment of a fleet the schedules the product's proposer
would have proposed from the trace's learning weeks, as if an admin had accepted every one,
after the fleet file's own: a fleet for ``replay_schedules`` on the held-out weeks. It runs
the product's own steps on the trace, in the product's order, with nothing of its own:

1. **The rollups.** A deployment's requests in the learning weeks become the minutes
   ``metric_rollups`` would hold (``decider/traffic.py``): one minute per minute of the span,
   each with its arrivals as the requests completed in it and nothing in flight (the lab
   serves a request in a microsecond), read on the deployment's wall clock
   (``local_seconds``) and counted by Little's law (``requests_per_minute``, which gives the
   count itself when nothing is in flight).
2. **The profile**, as ``traffic_profiles`` rebuilds it at the end of the learning weeks
   (``build_hours``), over the product's window: the last 30 days before the run
   (``WINDOW_DAYS``), so learning weeks beyond those are not seen, as in the product.
3. **The run**, at the end of the learning weeks: ``traffic_of`` and ``decide``, the very
   functions ``Proposer.run`` calls, then ``is_covered``: a candidate whose schedules the
   fleet file gives already is blocked, as the product blocks one whose schedules exist.
   Nobody has dismissed anything, so no dismissal blocks one.
4. **The accept**, as ``ProposalService.accept`` does it: a sleep schedule with the
   proposal's sleep days and time, then a wake schedule with its wake days and time, both
   in the deployment's zone, enabled, after the schedules that existed (the product's ids
   grow, and of two slots at one instant the later schedule acts last).

Decided here, where the issue is silent:

- **The split** (``learning_end_us``): the first half of the span in whole days, but at
  least three weeks while that leaves a week held out. Three weeks is the product's minimum
  for the rules: a window is proposed by them only when idle in each of at least three
  observed weeks (``STRONG_WEEKS``), so on two weeks they propose nothing. A 4-week trace
  learns on 3 and plays 1; an 8-week one learns on 4 and plays 4; a 2-week one learns on
  one, too little to propose anything (the product needs 7 local days of data, ``MIN_DAYS``).
- **The decision model**: the rules, as the product decides on a fresh install. Its default
  model (``feedback``) learns from 20 accepted and 20 dismissed proposals, and a lab has no
  decisions, so it is not ready and the rules decide. A caller may pass any model
  (``model``), which is asked as the product asks a ready one.
- **Proposing nothing** leaves a deployment with the fleet file's schedules, unchanged.
- **The learning weeks are observed in full**, every minute: the deployment ran throughout,
  as one does before anyone gives it a schedule. Rollups exist only while a server runs, so
  a deployment the fleet file's schedules put to sleep would have left its sleeping minutes
  unobserved in the product; the lab does not model that.
- **One run**: the product proposes daily; the lab proposes once, at the end of the learning
  weeks, and what is accepted then holds for all the held-out weeks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from dgxmm.decider.profiles import WINDOW_DAYS, TrafficProfile, build_hours
from dgxmm.decider.proposals.candidates import STRONG_WEEKS, DeploymentFacts
from dgxmm.decider.proposals.decision_models import DEFAULT_THRESHOLD, DecisionModel
from dgxmm.decider.proposals.proposer import Decided, Verdict, decide, is_covered, traffic_of
from dgxmm.decider.schedules.rows import ScheduleAction
from dgxmm.decider.traffic import MinuteSeries, local_seconds, requests_per_minute
from dgxmm.jobs import resolve_zone
from dgxmm.lab.fleetfile import LabDeployment, LabFleet, LabSchedule
from dgxmm.lab.traces.trace import Ints, Trace
from dgxmm.time_units import DAY_US, MINUTE_US, SECOND_US

__all__ = [
    "HELD_OUT_DAYS_AT_LEAST",
    "LEARN_DAYS_AT_LEAST",
    "Learned",
    "learn_proposals",
    "learned_schedules",
    "learning_end_us",
    "minute_series",
]

LEARN_DAYS_AT_LEAST = 7 * STRONG_WEEKS  # the rules propose nothing on fewer observed weeks
HELD_OUT_DAYS_AT_LEAST = 7  # a week to play the proposals on, before learning takes more


@dataclass(frozen=True, slots=True, kw_only=True)
class Learned:
    """One deployment's run on its learning weeks, and the schedules accepting it made."""

    decided: Decided  # the product's verdicts and what it turned down, with its reasons
    accepted: tuple[LabSchedule, ...]  # a sleep and a wake per proposal made
    blocked: tuple[Verdict, ...] = ()  # verdicts whose schedules the fleet file gives already


def learning_end_us(start_us: int, end_us: int) -> int:
    """Return where learning ends by default: half the span, three weeks if a week is left."""
    if end_us < start_us:
        raise ValueError(f"end_us: {end_us} is before start_us {start_us}")
    days = (end_us - start_us) // DAY_US
    learn = max(days // 2, min(LEARN_DAYS_AT_LEAST, days - HELD_OUT_DAYS_AT_LEAST))
    return start_us + learn * DAY_US


def learned_schedules(
    trace: Trace,
    fleet: LabFleet,
    *,
    learn_start_us: int,
    learn_end_us: int,
    model: DecisionModel | None = None,
    threshold: float = DEFAULT_THRESHOLD,
) -> LabFleet:
    """Return ``fleet`` with each deployment's accepted proposals after its own schedules."""
    learned = learn_proposals(
        trace,
        fleet,
        learn_start_us=learn_start_us,
        learn_end_us=learn_end_us,
        model=model,
        threshold=threshold,
    )
    return replace(
        fleet,
        deployments=tuple(
            replace(d, schedules=(*d.schedules, *learned[d.name].accepted))
            for d in fleet.deployments
        ),
    )


def learn_proposals(
    trace: Trace,
    fleet: LabFleet,
    *,
    learn_start_us: int,
    learn_end_us: int,
    model: DecisionModel | None = None,
    threshold: float = DEFAULT_THRESHOLD,
) -> dict[str, Learned]:
    """Run the product's proposer on each deployment's learning weeks; accept what it makes.

    The run is at ``learn_end_us``; it sees the trace's requests in
    ``[learn_start_us, learn_end_us)``, of those the last 30 days (the product's window).
    ``model`` None: the rules decide, as on a fresh install (see the module).
    """
    if learn_end_us < learn_start_us:
        raise ValueError(f"learn_end_us: {learn_end_us} is before learn_start_us {learn_start_us}")
    since_us = max(learn_start_us, learn_end_us - WINDOW_DAYS * DAY_US)
    found: dict[str, Learned] = {}
    for number, deployment in enumerate(fleet.deployments, start=1):
        series = minute_series(
            trace.arrivals_of(deployment.model),
            deployment.time_zone,
            since_us=since_us,
            until_us=learn_end_us,
        )
        facts = _facts(number, deployment)
        profile = TrafficProfile(
            deployment_id=facts.id,
            time_zone=facts.time_zone,
            built_at=learn_end_us,
            hours=tuple(build_hours(series)),
        )
        decided = decide(facts, traffic_of(profile, series), model, threshold)
        accepted: list[LabSchedule] = []
        blocked: list[Verdict] = []
        for verdict in decided.verdicts:
            # The run sees the schedules that exist, not those its own proposals would make.
            if is_covered(verdict.candidate, deployment.schedules):
                blocked.append(verdict)
            else:
                accepted += _accepted(verdict)
        found[deployment.name] = Learned(
            decided=decided, accepted=tuple(accepted), blocked=tuple(blocked)
        )
    return found


def minute_series(
    arrivals_us: Ints, time_zone: str, *, since_us: int, until_us: int
) -> MinuteSeries:
    """Return the rollups' minutes of a server running over ``[since_us, until_us)``.

    Every minute whose start is in the span is observed; its requests are the arrivals in it
    (those at or after ``until_us`` are not counted, even in the span's last minute).
    """
    first = -(-since_us // MINUTE_US)  # the first whole minute's number, rounded up
    last = -(-until_us // MINUTE_US)  # past the last minute that starts before until_us
    count = max(0, last - first)
    minute_us: Ints = (np.arange(first, first + count, dtype=np.int64)) * MINUTE_US
    chosen = arrivals_us[(arrivals_us >= first * MINUTE_US) & (arrivals_us < until_us)]
    requests: Ints = np.bincount(chosen // MINUTE_US - first, minlength=count).astype(np.int64)
    idle = np.zeros(count, dtype=np.float64)
    zone = resolve_zone(time_zone, field="time_zone")
    return MinuteSeries(
        minute_us=minute_us,
        wall_s=local_seconds(minute_us // SECOND_US, zone),
        requests=requests,
        in_flight=idle,  # nothing in flight: the lab serves a request in a microsecond
        rpm=requests_per_minute(requests, idle, idle),
    )


def _facts(number: int, deployment: LabDeployment) -> DeploymentFacts:
    """Return what the proposer knows of a deployment (numbered as the product's ids are)."""
    return DeploymentFacts(
        id=number,
        name=deployment.name,
        priority=deployment.priority,
        time_zone=deployment.time_zone,
        gpus=len(deployment.gpus),
        memory_gib_awake=deployment.memory_gib_awake,
        memory_gib_asleep=deployment.memory_gib_asleep,
    )


def _accepted(verdict: Verdict) -> tuple[LabSchedule, LabSchedule]:
    """Return the sleep and the wake schedule that accepting the proposal creates."""
    candidate = verdict.candidate
    zone = candidate.deployment.time_zone  # the proposal's zone: its deployment's
    return (
        LabSchedule(
            action=ScheduleAction.SLEEP,
            days=candidate.sleep_days,
            time=candidate.sleep_time,
            time_zone=zone,
        ),
        LabSchedule(
            action=ScheduleAction.WAKE,
            days=candidate.wake_days,
            time=candidate.wake_time,
            time_zone=zone,
        ),
    )
