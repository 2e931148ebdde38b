"""Schedule proposals: sleep / wake schedules suggested from a deployment's traffic profile.

- ``service``: ``ProposalService``, runs, listing, accept, dismiss, the model's settings.
- ``proposer``: one run for one deployment; ``report``: what a run considered, and why.
- ``candidates``: idle windows and the candidates they make (pure).
- ``decision_models``: the interface of the models that decide (``DecisionModel``) and their
  settings; ``feedback_model`` and ``chat_model`` are the two models.
- ``rows``: the ``schedule_proposals`` rows (``Proposal``, ``ProposalStatus``).
"""

from dgxmm.decider.proposals.chat_model import ChatModel as ChatModel
from dgxmm.decider.proposals.decision_models import Decision as Decision
from dgxmm.decider.proposals.decision_models import DecisionModel as DecisionModel
from dgxmm.decider.proposals.decision_models import Endpoint as Endpoint
from dgxmm.decider.proposals.decision_models import ModelKind as ModelKind
from dgxmm.decider.proposals.decision_models import ModelSettings as ModelSettings
from dgxmm.decider.proposals.decision_models import Readiness as Readiness
from dgxmm.decider.proposals.feedback_model import FeedbackModel as FeedbackModel
from dgxmm.decider.proposals.report import Outcome as Outcome
from dgxmm.decider.proposals.report import ProposalRun as ProposalRun
from dgxmm.decider.proposals.rows import Proposal as Proposal
from dgxmm.decider.proposals.rows import ProposalSource as ProposalSource
from dgxmm.decider.proposals.rows import ProposalStatus as ProposalStatus
from dgxmm.decider.proposals.service import SCHEDULE_PROPOSALS as SCHEDULE_PROPOSALS
from dgxmm.decider.proposals.service import ProposalService as ProposalService

__all__ = [
    "SCHEDULE_PROPOSALS",
    "ChatModel",
    "Decision",
    "DecisionModel",
    "Endpoint",
    "FeedbackModel",
    "ModelKind",
    "ModelSettings",
    "Outcome",
    "Proposal",
    "ProposalRun",
    "ProposalService",
    "ProposalSource",
    "ProposalStatus",
    "Readiness",
]
