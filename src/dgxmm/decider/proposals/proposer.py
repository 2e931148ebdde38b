"""One run of the proposer for one deployment: windows, decisions, and the rows they make.

``ProposalService.propose`` (``service.py``) asks the decision model once per run and hands
each deployment to ``Proposer.run``, which reads the profile, decides each candidate (the
model, or the rules when it cannot be asked) and records the result in one transaction.

The deciding is apart from the doing, so that the savings lab (``dgxmm.lab.replay.proposed``) runs
the very same rules on a replayed trace: ``traffic_of`` turns a deployment's minutes into
what a run reads, ``decide`` turns that into verdicts (pure: no store, no clock), and
``is_covered`` says whether existing schedules block a candidate. ``Proposer`` only reads
the rollups and writes the rows around them.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from zoneinfo import ZoneInfo

import numpy as np
from sqlalchemy import Engine, delete, select

from dgxmm.decider.profiles import WINDOW_DAYS, TrafficProfile, read_profile
from dgxmm.decider.proposals.candidates import (
    RULES_PRIORITY_BELOW,
    STRONG_WEEKS,
    Candidate,
    DeploymentFacts,
    Window,
    idle_windows,
    is_idle_hour,
    is_strong,
    make_candidates,
    skip_reason,
)
from dgxmm.decider.proposals.decision_models import DecisionModel
from dgxmm.decider.proposals.report import Considered, DeploymentRun, Outcome
from dgxmm.decider.proposals.rows import (
    Proposal,
    ProposalSource,
    ProposalStatus,
    change_proposal,
    insert_proposal,
    read_proposal,
)
from dgxmm.decider.schedules import ScheduleAction, ScheduleService
from dgxmm.decider.tables import schedule_proposals
from dgxmm.decider.traffic import WEEK_HOURS, MinuteSeries, days_of_data, read_minutes
from dgxmm.errors import CannotDecide
from dgxmm.fleet import DeploymentRepo, LeadKind
from dgxmm.jobs import resolve_zone
from dgxmm.store import reading, writing
from dgxmm.time_units import DAY_US

__all__ = [
    "DISMISSAL_BLOCKS_US",
    "MIN_DAYS",
    "Decided",
    "Proposer",
    "ScheduleTimes",
    "Traffic",
    "Verdict",
    "decide",
    "deployment_facts",
    "is_covered",
    "traffic_of",
]

MIN_DAYS = 7
DISMISSAL_BLOCKS_US = 7 * DAY_US


@dataclass(frozen=True, slots=True, kw_only=True)
class Traffic:
    """What a run needs of a deployment's traffic: its profile and two facts of its rollups."""

    profile: TrafficProfile
    days: int = 0  # local days with at least 12 observed hours
    requests_by_hour: tuple[int, ...] = (0,) * WEEK_HOURS  # completed, per hour of the week


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """A candidate decided for: who decided it, how sure, and why."""

    candidate: Candidate
    source: str  # the model's name, or ``rules``
    confidence: float
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Decided:
    """What ``decide`` made of one deployment's traffic, before anything is recorded."""

    note: str | None  # why nothing was looked at, when that is so
    verdicts: tuple[Verdict, ...]  # the candidates to propose, earliest first
    considered: tuple[Considered, ...]  # every window and candidate turned down, and why


class ScheduleTimes(Protocol):
    """What ``is_covered`` reads of a schedule: a stored one, or one of the lab's."""

    @property
    def action(self) -> ScheduleAction: ...

    @property
    def days(self) -> int: ...

    @property
    def time(self) -> str: ...

    @property
    def time_zone(self) -> str: ...


@dataclass(slots=True)
class _Notes:
    considered: list[Considered] = field(default_factory=list)

    def add(self, what: str, outcome: Outcome, reason: str) -> None:
        self.considered.append(Considered(what=what, outcome=outcome, reason=reason))


class Proposer:
    """Makes one deployment's proposals from its stored profile."""

    def __init__(
        self, engine: Engine, deployments: DeploymentRepo, schedules: ScheduleService
    ) -> None:
        self._engine = engine
        self._deployments = deployments
        self._schedules = schedules

    def traffic(self, deployments: Sequence[DeploymentFacts]) -> dict[int, Traffic]:
        """Read each deployment's profile, and from the rollups it was built from its days of
        data and completed requests per hour of the week.

        Profiles built together share their window, so their rollups are read in one pass.
        """
        with reading(self._engine) as connection:
            profiles = {f.id: read_profile(connection, f.id, f.time_zone) for f in deployments}
            windows: dict[int, dict[int, ZoneInfo]] = {}
            for facts in deployments:
                built = profiles[facts.id].built_at
                if built is not None:
                    zone = resolve_zone(facts.time_zone, field="time_zone")
                    windows.setdefault(built, {})[facts.id] = zone
            found = {d: Traffic(profile=profile) for d, profile in profiles.items()}
            for built, zones in windows.items():
                since = built - WINDOW_DAYS * DAY_US
                for deployment_id, series in read_minutes(connection, zones, since, built):
                    found[deployment_id] = traffic_of(profiles[deployment_id], series)
        return found

    def run(
        self,
        facts: DeploymentFacts,
        traffic: Traffic,
        model: DecisionModel | None,
        threshold: float,
        now: int,
    ) -> DeploymentRun:
        """Decide the deployment's candidates and record its proposals."""
        decided = decide(facts, traffic, model, threshold)
        notes = _Notes(list(decided.considered))
        open_now = self._record(facts, decided.verdicts, notes, now)
        return DeploymentRun(
            deployment_id=facts.id,
            note=decided.note,
            considered=tuple(notes.considered),
            open=tuple(open_now),
        )

    def _record(
        self, facts: DeploymentFacts, verdicts: Sequence[Verdict], notes: _Notes, now: int
    ) -> list[Proposal]:
        """Write the run's proposals and withdraw the open ones it did not make again."""
        p = schedule_proposals.c
        with writing(self._engine) as connection:
            if not self._deployments.exists(facts.id, connection=connection):
                return []
            schedules = self._schedules.list(facts.id, connection=connection)
            mine = [
                Proposal.from_row(row)
                for row in connection.execute(
                    select(schedule_proposals).where(p.deployment_id == facts.id)
                )
            ]
            kept: set[int] = set()
            for verdict in verdicts:
                candidate = verdict.candidate
                if is_covered(candidate, schedules):
                    notes.add(candidate.description, Outcome.BLOCKED, "its schedules exist")
                    continue
                dismissed = [
                    x.decided_at
                    for x in mine
                    if x.status is ProposalStatus.DISMISSED
                    and x.key == candidate.key
                    and x.decided_at is not None
                    and now - x.decided_at < DISMISSAL_BLOCKS_US
                ]
                if dismissed:
                    notes.add(
                        candidate.description,
                        Outcome.BLOCKED,
                        f"it was dismissed less than {DISMISSAL_BLOCKS_US // DAY_US} days ago",
                    )
                    continue
                values = _values(verdict)
                same = [
                    x for x in mine if x.status is ProposalStatus.OPEN and x.key == candidate.key
                ]
                if same:
                    change_proposal(connection, same[0].id, values)
                    kept.add(same[0].id)
                else:
                    kept.add(
                        insert_proposal(
                            connection,
                            {
                                **values,
                                "deployment_id": facts.id,
                                "status": "open",
                                "created_at": now,
                            },
                        )
                    )
                notes.add(
                    candidate.description,
                    Outcome.PROPOSED,
                    f"{verdict.source}, confidence {verdict.confidence:.2f}",
                )
            stale = [x.id for x in mine if x.status is ProposalStatus.OPEN and x.id not in kept]
            if stale:
                connection.execute(delete(schedule_proposals).where(p.id.in_(stale)))
            return [read_proposal(connection, proposal_id) for proposal_id in sorted(kept)]


def traffic_of(profile: TrafficProfile, series: MinuteSeries) -> Traffic:
    """Return what a run reads of a deployment: its profile and the minutes it was built from."""
    requests = np.bincount(series.hour_of_week, weights=series.requests, minlength=WEEK_HOURS)
    return Traffic(
        profile=profile,
        days=days_of_data(series),
        requests_by_hour=tuple(int(count) for count in requests),
    )


def decide(
    facts: DeploymentFacts, traffic: Traffic, model: DecisionModel | None, threshold: float
) -> Decided:
    """Decide a deployment's candidates: the model when given, else the rules (pure)."""
    notes = _Notes()
    verdicts: list[Verdict] = []
    profile, days = traffic.profile, traffic.days
    note = None
    if profile.built_at is None:
        note = "it has no traffic profile yet"
    elif days < MIN_DAYS:
        note = f"proposals need {MIN_DAYS} local days of data; it has {days}"
    elif all(is_idle_hour(hour) for hour in profile.hours):
        note = "it was idle in every hour of the week: there is no hour to wake it for"
    else:
        windows = idle_windows(profile.hours)
        for window in windows:
            skipped = skip_reason(window)
            if skipped is not None:
                notes.add(_window_text(window), Outcome.SKIPPED, skipped.value)

        def candidates(chosen: list[Window]) -> list[Candidate]:
            return make_candidates(
                chosen,
                deployment=facts,
                hours=profile.hours,
                requests_by_hour=traffic.requests_by_hour,
            )

        for candidate in candidates([w for w in windows if skip_reason(w) is None]):
            verdicts += _decide(candidate, model, threshold, candidates, notes)
    return Decided(note=note, verdicts=tuple(verdicts), considered=tuple(notes.considered))


def _decide(
    candidate: Candidate,
    model: DecisionModel | None,
    threshold: float,
    regroup: Callable[[list[Window]], list[Candidate]],
    notes: _Notes,
) -> list[Verdict]:
    why_rules = "the decision model is switched off or not ready"
    if model is not None:
        try:
            decision = model.decide(candidate)
        except CannotDecide as error:
            why_rules = f"the {model.name} model could not decide ({error})"
        else:
            if decision.propose and decision.confidence >= threshold:
                verdict = Verdict(
                    candidate=candidate,
                    source=model.name,
                    confidence=decision.confidence,
                    reason=decision.reason,
                )
                return [verdict]
            said = "propose" if decision.propose else "skip"
            notes.add(
                candidate.description,
                Outcome.NOT_PROPOSED,
                f"the {model.name} model says {said} with confidence "
                f"{decision.confidence:.2f} (threshold {threshold:.2f}): {decision.reason}",
            )
            return []
    facts = candidate.deployment
    if facts.priority >= RULES_PRIORITY_BELOW:
        notes.add(
            candidate.description,
            Outcome.NOT_PROPOSED,
            f"{why_rules}, and the rules alone never propose for priority "
            f"{RULES_PRIORITY_BELOW} or above (it has {facts.priority})",
        )
        return []
    strong = [window for window in candidate.windows if is_strong(window)]
    for window in candidate.windows:
        if not is_strong(window):
            notes.add(
                _window_text(window),
                Outcome.NOT_PROPOSED,
                f"{why_rules}, and the rules alone propose only windows idle in every "
                f"one of at least {STRONG_WEEKS} observed weeks",
            )
    return [
        Verdict(
            candidate=chosen,
            source=ProposalSource.RULES.value,
            confidence=1.0,
            reason=f"{why_rules}; by the rules: idle in every one of "
            f"{chosen.evidence['weeks_observed']} observed weeks, priority {facts.priority}",
        )
        for chosen in (regroup(strong) if strong else [])
    ]


def deployment_facts(
    repo: DeploymentRepo, deployment_id: int | None = None
) -> builtins.list[DeploymentFacts]:
    """Return the facts of one deployment (or all, by id); ``NotFound`` for an unknown one."""
    found = (
        [repo.get(deployment_id)]
        if deployment_id is not None
        else sorted(repo.list(), key=lambda d: d.id)
    )
    return [
        DeploymentFacts(
            id=d.id,
            name=d.name,
            priority=d.priority,
            time_zone=d.time_zone,
            gpus=len(d.gpus),
            memory_gib_awake=d.memory_gib_awake,
            memory_gib_asleep=d.memory_gib_asleep,
            wake_lead_off=d.wake_lead.kind is LeadKind.OFF,
        )
        for d in found
    ]


def _values(verdict: Verdict) -> dict[str, Any]:
    candidate = verdict.candidate
    evidence = {
        **candidate.evidence,
        "description": candidate.description,
        "source": verdict.source,
        "confidence": verdict.confidence,
        "reason": verdict.reason,
    }
    return {
        "sleep_days": candidate.sleep_days,
        "sleep_time": candidate.sleep_time,
        "wake_days": candidate.wake_days,
        "wake_time": candidate.wake_time,
        "time_zone": candidate.deployment.time_zone,
        "source": verdict.source,
        "confidence": verdict.confidence,
        "evidence": json.dumps(evidence),
        "features": json.dumps(candidate.features),
        "wake_lead": LeadKind.MEASURED.value if candidate.deployment.wake_lead_off else None,
    }


def is_covered(candidate: Candidate, schedules: Sequence[ScheduleTimes]) -> bool:
    """Tell whether schedules with the candidate's days, times and zone exist already."""

    def has(action: ScheduleAction, days: int, at: str) -> bool:
        return any(
            schedule.action is action
            and schedule.time == at
            and schedule.time_zone == candidate.deployment.time_zone
            and schedule.days & days == days
            for schedule in schedules
        )

    return has(ScheduleAction.SLEEP, candidate.sleep_days, candidate.sleep_time) and has(
        ScheduleAction.WAKE, candidate.wake_days, candidate.wake_time
    )


def _window_text(window: Window) -> str:
    text = window.to_json()
    return f"{text['start']} to {text['first_active']} ({window.hours} h)"
