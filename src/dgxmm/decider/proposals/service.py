"""Schedule proposals: sleep / wake schedules suggested from a deployment's traffic profile.

A run (the daily system job ``schedule_proposals``, after ``traffic_profiles``, or
``propose()``) looks at each deployment's stored profile and the rollups it was built from:

1. it needs 7 local days of data (days with at least 12 observed hours) in the profile's 30
   days; otherwise nothing is proposed;
2. idle windows become candidates (``candidates.py``: at least 2 h, idle in at least 90 %
   of their observed weeks; skipped when shorter than 4 h or seen in one week only);
3. the decision model, when it is switched on and ready, decides each candidate: proposed
   when it says propose with a confidence at or above the threshold. When it is off or not
   ready (or cannot decide one candidate), the rules decide: a window idle in every one of
   at least three observed weeks, of a deployment with priority below 90, is proposed with
   source ``rules`` and confidence 1.0; nothing else is;
4. a proposal is not made while schedules with its days and times exist, nor within 7 days
   of the dismissal of the same proposal. An open proposal made again keeps its id and gets
   the new evidence; open proposals the run does not make again are withdrawn (deleted:
   nobody decided on them, so nothing is lost).

Accepting a proposal (admins) creates its sleep and wake schedules, with the admin as their
creator, and marks it accepted, audited, in one transaction; dismissing marks it dismissed,
audited. Both decisions are what the ``feedback`` model learns from.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection, select, update

from dgxmm.clock import Clock
from dgxmm.decider.profiles import ProfileService
from dgxmm.decider.proposals.chat_model import ChatModel
from dgxmm.decider.proposals.decision_models import (
    MODEL_SETTING,
    DecisionModel,
    ModelKind,
    ModelSettings,
    Readiness,
    parse_settings,
)
from dgxmm.decider.proposals.feedback_model import FeedbackModel
from dgxmm.decider.proposals.proposer import Proposer, deployment_facts
from dgxmm.decider.proposals.realized import RealizedWeek, realized_weeks
from dgxmm.decider.proposals.report import DeploymentRun, ProposalRun
from dgxmm.decider.proposals.rows import (
    Proposal,
    ProposalStatus,
    change_proposal,
    read_proposal,
)
from dgxmm.decider.schedules.rows import Schedule, ScheduleAction
from dgxmm.decider.schedules.service import ScheduleService
from dgxmm.decider.tables import schedule_proposals, traffic_profiles
from dgxmm.errors import Conflict, NotFound
from dgxmm.fleet import (
    AuditAction,
    AuditSubject,
    EventAction,
    EventOutcome,
    Fleet,
    InsightKind,
    LeadKind,
    Severity,
)
from dgxmm.jobs import CronSchedule, Job, JobKind, RunContext
from dgxmm.store import Store, Topic, reading, writing
from dgxmm.words import counted

# A proposal's backtest as JSON values (``dgxmm.lab.backtest``), or None when none can be made.
Backtester = Callable[[Proposal], Mapping[str, Any] | None]

__all__ = ["SCHEDULE_PROPOSALS", "Backtester", "ProposalService"]

SCHEDULE_PROPOSALS = "schedule_proposals"


class ProposalService:
    """Makes proposals from traffic profiles, lists them, and records the admins' decisions."""

    def __init__(
        self,
        store: Store,
        fleet: Fleet,
        schedules: ScheduleService,
        *,
        profiles: ProfileService | None = None,
        clock: Clock | None = None,
        backtest: Backtester | None = None,
    ) -> None:
        self._store = store
        self._fleet = fleet
        self._schedules = schedules
        self._clock = clock or store.clock
        # The traffic page updates in place when a profile is rebuilt or a proposal changes.
        store.versions.watch(
            {table.name: Topic.TRAFFIC for table in (traffic_profiles, schedule_proposals)}
        )
        self.profiles = profiles or ProfileService(store, fleet.deployments, clock=self._clock)
        self._feedback = FeedbackModel(store.engine)
        self._proposer = Proposer(store.engine, fleet.deployments, schedules)
        # The lab sits above the decider: ``dgxmm serve`` hands its backtest in.
        self._backtest = backtest

    # -- the decision model's settings --------------------------------------------------------

    def settings(self) -> ModelSettings:
        """Return the decision model's settings (the defaults until an admin sets them)."""
        return parse_settings(self._store.get_setting(MODEL_SETTING))

    def set_settings(self, value: object, *, actor: str) -> ModelSettings:
        """Check and store the settings (``InvalidInput`` naming the field); audited."""
        settings = parse_settings(value)
        self._store.set_setting(MODEL_SETTING, settings.to_json(), actor=actor)
        self._fleet.audit.record(
            actor=actor,
            action=AuditAction.PROPOSALS_MODEL,
            subject=AuditSubject.SETTING,
            subject_id=MODEL_SETTING,
            detail=settings.to_json(),
        )
        return settings

    def model_status(self) -> Readiness:
        """Tell whether the configured model can be asked now, and why (not)."""
        model, readiness = self._ask()
        if isinstance(model, ChatModel):
            model.close()
        return readiness

    # -- runs ---------------------------------------------------------------------------------

    def system_jobs(self) -> builtins.list[Job]:
        """Return ``traffic_profiles`` (daily at 00:20) and ``schedule_proposals`` (00:40)."""
        return [
            *self.profiles.system_jobs(),
            Job(
                SCHEDULE_PROPOSALS,
                JobKind.SYSTEM,
                CronSchedule.parse("40 0 * * *"),
                self._run_job,
                description="proposes sleep and wake schedules from the traffic profiles",
            ),
        ]

    def _run_job(self, context: RunContext) -> str:
        raised = self.check_realized(context.started_at)
        run = self.propose(now_us=context.started_at, context=context)
        made = sum(len(d.open) for d in run.deployments)
        asked = run.model or f"the rules ({run.model_reason})"
        return (
            f"{counted(made, 'open proposal')} for "
            f"{counted(len(run.deployments), 'deployment')}; decided by "
            f"{asked}; {counted(raised, 'accepted proposal')} colder than predicted"
        )

    def realized(
        self, proposal: Proposal, now_us: int | None = None
    ) -> builtins.list[RealizedWeek]:
        """Return an accepted proposal's weeks since, beside its backtest's prediction."""
        now = self._clock.now_us() if now_us is None else now_us
        return realized_weeks(self._fleet, proposal, now)

    def check_realized(self, now_us: int) -> int:
        """Raise an insight for each accepted proposal whose whole week was colder than its
        backtest predicted, by the margin (``realized.py``); return how many."""
        p = schedule_proposals.c
        with reading(self._store.engine) as connection:
            rows = connection.execute(
                select(schedule_proposals).where(p.status == ProposalStatus.ACCEPTED.value)
            ).all()
        raised = 0
        for proposal in (Proposal.from_row(row) for row in rows):
            try:
                weeks = realized_weeks(self._fleet, proposal, now_us)
            except NotFound:
                continue  # its deployment is gone
            colder = [w for w in weeks if w.days == 7 and w.colder_than_predicted]
            if not colder:
                continue
            week = colder[-1]
            made = self._fleet.insights.raise_insight(
                InsightKind.PROPOSAL_COLDER,
                deployment_id=proposal.deployment_id,
                severity=Severity.WARNING,
                message=(
                    f"Proposal {proposal.id} ({proposal.description}): the week from "
                    f"{week.first_day} met {counted(week.cold, 'cold request')}, against "
                    f"{week.predicted_cold:.1f} its backtest predicted for a week."
                ),
                key=f"proposal-colder:{proposal.id}",
            )
            raised += made is not None
        return raised

    def propose(
        self,
        deployment_id: int | None = None,
        *,
        now_us: int | None = None,
        context: RunContext | None = None,
    ) -> ProposalRun:
        """Make the proposals of one deployment (or all) from their stored profiles."""
        now = self._clock.now_us() if now_us is None else now_us
        settings = self.settings()
        model, readiness = self._ask(settings)
        asked = model if readiness else None
        runs = []
        forecast = self._schedules.forecast_only()
        known = self._proposal_ids() if forecast else set()
        try:
            targets = deployment_facts(self._fleet.deployments, deployment_id)
            traffic = self._proposer.traffic(targets)
            for facts in targets:
                if context is not None:
                    context.check()
                runs.append(
                    self._proposer.run(facts, traffic[facts.id], asked, settings.threshold, now)
                )
        finally:
            if isinstance(model, ChatModel):
                model.close()
        if forecast:
            self._record_forecasts(runs, known)
        if self._backtest is not None:
            runs = [self._backtested(run) for run in runs]
        return ProposalRun(
            model=asked.name if asked is not None else None,
            model_reason=readiness.reason,
            deployments=tuple(runs),
        )

    def _backtested(self, run: DeploymentRun) -> DeploymentRun:
        """Backtest each open proposal of a run on its held-out weeks, and keep it."""
        assert self._backtest is not None
        found = []
        for proposal in run.open:
            tested = self._backtest(proposal)
            with writing(self._store.engine) as connection:
                change_proposal(
                    connection,
                    proposal.id,
                    {"backtest": None if tested is None else json.dumps(tested)},
                )
                found.append(read_proposal(connection, proposal.id))
        return replace(run, open=tuple(found))

    def _proposal_ids(self) -> set[int]:
        with reading(self._store.engine) as connection:
            return set(connection.execute(select(schedule_proposals.c.id)).scalars())

    def _record_forecasts(self, runs: builtins.list[DeploymentRun], known: set[int]) -> None:
        """Record each proposal the run made as a ``forecast`` event (forecast-only mode)."""
        events = self._fleet.events
        for run in runs:
            for proposal in run.open:
                if proposal.id in known:
                    continue  # made by an earlier run, and recorded then
                events.record(
                    proposal.deployment_id, EventAction.PROPOSE, actor="system",
                    outcome=EventOutcome.FORECAST,
                    detail=f"proposal {proposal.id}: {proposal.description} "
                    "(forecast only: proposed, not acted on)",
                )  # fmt: skip

    def _ask(self, settings: ModelSettings | None = None) -> tuple[DecisionModel | None, Readiness]:
        settings = settings or self.settings()
        if not settings.enabled:
            return None, Readiness(ready=False, reason="the decision model is switched off")
        model = self._model_for(settings)
        return model, model.ready()

    def _model_for(self, settings: ModelSettings) -> DecisionModel:
        if settings.model is ModelKind.OPENAI and settings.endpoint is not None:
            return ChatModel(settings.endpoint, deployments=self._fleet.deployments)
        return self._feedback

    def list(
        self, deployment_id: int, *, status: ProposalStatus | None = None
    ) -> builtins.list[Proposal]:
        """Return a deployment's proposals, newest first (``NotFound`` for no deployment)."""
        p = schedule_proposals.c
        query = select(schedule_proposals).where(p.deployment_id == deployment_id)
        if status is not None:
            query = query.where(p.status == status.value)
        with reading(self._store.engine) as connection:
            if not self._fleet.deployments.exists(deployment_id, connection=connection):
                raise NotFound("deployment", deployment_id)
            rows = connection.execute(query.order_by(p.id.desc())).all()
        return [Proposal.from_row(row) for row in rows]

    def get(self, proposal_id: int) -> Proposal:
        """Return one proposal (``NotFound``)."""
        with reading(self._store.engine) as connection:
            return read_proposal(connection, proposal_id)

    def accept(self, proposal_id: int, *, actor: str) -> tuple[Proposal, builtins.list[Schedule]]:
        """Create the proposal's sleep and wake schedules and mark it accepted; audited.

        A proposal that proposes the measured wake lead sets it on the deployment too, unless
        a wake lead is set there already.

        All in one transaction: the schedules exist exactly when the proposal is accepted.
        ``Conflict`` when it is not open (decided already, maybe by another admin just now).
        """
        with writing(self._store.engine) as connection:
            proposal = self._decide_row(connection, proposal_id, ProposalStatus.ACCEPTED, actor)
            made = [
                self._schedules.create(
                    proposal.deployment_id,
                    action=action,
                    days=days,
                    time=at,
                    time_zone=proposal.time_zone,
                    actor=actor,
                    connection=connection,
                )
                for action, days, at in (
                    (ScheduleAction.SLEEP, proposal.sleep_days, proposal.sleep_time),
                    (ScheduleAction.WAKE, proposal.wake_days, proposal.wake_time),
                )
            ]
            change_proposal(
                connection,
                proposal_id,
                {"sleep_schedule_id": made[0].id, "wake_schedule_id": made[1].id},
            )
            deployments = self._fleet.deployments
            if (
                proposal.wake_lead is not None
                and deployments.get(proposal.deployment_id, connection=connection).wake_lead.kind
                is LeadKind.OFF
            ):
                # Its wakes begin early by the measured wake time: one a person set stays.
                deployments.update(
                    proposal.deployment_id,
                    actor,
                    connection=connection,
                    wake_lead=proposal.wake_lead,
                )
            self._audit(
                connection,
                actor,
                AuditAction.PROPOSAL_ACCEPT,
                proposal,
                {"schedules": [schedule.id for schedule in made]},
            )
            return read_proposal(connection, proposal_id), made

    def dismiss(self, proposal_id: int, *, actor: str) -> Proposal:
        """Mark the proposal dismissed (not made again for 7 days); audited."""
        with writing(self._store.engine) as connection:
            proposal = self._decide_row(connection, proposal_id, ProposalStatus.DISMISSED, actor)
            self._audit(connection, actor, AuditAction.PROPOSAL_DISMISS, proposal, None)
            return read_proposal(connection, proposal_id)

    def _decide_row(
        self, connection: Connection, proposal_id: int, status: ProposalStatus, actor: str
    ) -> Proposal:
        proposal = read_proposal(connection, proposal_id)
        p = schedule_proposals.c
        # A conditional update: of two admins deciding at once, exactly one changes the row.
        changed = connection.execute(
            update(schedule_proposals)
            .where(p.id == proposal_id, p.status == ProposalStatus.OPEN.value)
            .values(status=status.value, decided_at=self._clock.now_us(), decided_by=actor)
        ).rowcount
        if changed != 1:
            now = read_proposal(connection, proposal_id)
            raise Conflict(f"proposal {proposal_id} is {now.status.value}, not open")
        return proposal

    def _audit(
        self,
        connection: Connection,
        actor: str,
        action: AuditAction,
        proposal: Proposal,
        more: Any,
    ) -> None:
        detail = {"deployment": proposal.deployment_id, "proposal": proposal.description}
        if more:
            detail.update(more)
        self._fleet.audit.record(
            actor=actor,
            action=action,
            subject=AuditSubject.PROPOSAL,
            subject_id=proposal.id,
            detail=detail,
            connection=connection,
        )
