"""The ``feedback`` decision model: learns from the admins' accept and dismiss decisions.

Its examples are the decided proposals (``accepted`` is a yes, ``dismissed`` a no), each
with the features it was proposed with (``candidates.FEATURES``). It is a logistic
regression on standardized features, with balanced class weights so that a run of one kind
of decision does not drown the other: small, fast, and its probabilities mean something.
It is not ready until it has ``MIN_EACH`` (20) decisions of each kind.

It is trained again when the decisions changed (their count or the latest decision time),
and otherwise reused between runs.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sqlalchemy import Engine, func, select

from dgxmm.decider.proposals.candidates import FEATURES, Candidate
from dgxmm.decider.proposals.decision_models import Decision, ModelKind, Readiness
from dgxmm.decider.tables import schedule_proposals
from dgxmm.errors import CannotDecide
from dgxmm.store import reading

__all__ = ["MIN_EACH", "FeedbackModel", "feature_vector"]

MIN_EACH = 20


def feature_vector(features: Mapping[str, Any]) -> list[float]:
    """Return the features in the model's order (a missing or non-numeric one is 0)."""
    values = []
    for name in FEATURES:
        value = features.get(name, 0.0)
        is_number = isinstance(value, int | float) and not isinstance(value, bool)
        values.append(float(value) if is_number else 0.0)
    return values


class FeedbackModel:
    """A classifier of past decisions; ``ready()`` trains it when the decisions changed."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        self._trained_on: tuple[int, int, int] | None = None  # accepted, dismissed, latest
        self._classifier: Any = None

    @property
    def name(self) -> str:
        """``feedback``."""
        return ModelKind.FEEDBACK.value

    def ready(self) -> Readiness:
        """Train on the decisions when they changed; ready with 20 of each kind."""
        p = schedule_proposals.c
        with reading(self._engine) as connection:
            counts: dict[str, int] = dict(
                connection.execute(
                    select(p.status, func.count())
                    .where(p.status.in_(("accepted", "dismissed")))
                    .group_by(p.status)
                ).all()
            )
            latest = connection.execute(select(func.max(p.decided_at))).scalar()
            accepted, dismissed = int(counts.get("accepted", 0)), int(counts.get("dismissed", 0))
            if accepted < MIN_EACH or dismissed < MIN_EACH:
                return Readiness(
                    ready=False,
                    reason=f"the feedback model learns from {MIN_EACH} accepted and {MIN_EACH} "
                    f"dismissed proposals; there are {accepted} accepted and {dismissed} "
                    "dismissed so far",
                )
            state = (accepted, dismissed, int(latest or 0))
            with self._lock:
                if state != self._trained_on:
                    rows = connection.execute(
                        select(p.features, p.status).where(p.status.in_(("accepted", "dismissed")))
                    ).all()
                    self._classifier = _train(
                        [json.loads(row.features) for row in rows],
                        [row.status == "accepted" for row in rows],
                    )
                    self._trained_on = state
        return Readiness(
            ready=True,
            reason=f"trained on {accepted} accepted and {dismissed} dismissed proposals",
        )

    def decide(self, candidate: Candidate) -> Decision:
        """Propose when the chance of an accept is at least even; confidence in that verdict."""
        with self._lock:
            classifier = self._classifier
        if classifier is None:  # asked before ready(): train now, or say why it cannot
            readiness = self.ready()
            if not readiness:
                raise CannotDecide(readiness.reason)
            with self._lock:
                classifier = self._classifier
        row = np.asarray([feature_vector(candidate.features)], dtype=np.float64)
        accept = float(classifier.predict_proba(row)[0][1])
        propose = accept >= 0.5
        return Decision(
            propose=propose,
            confidence=accept if propose else 1.0 - accept,
            reason=f"admins accepted proposals like this one with a chance of {accept:.0%}",
        )


def _train(features: Sequence[Mapping[str, Any]], accepted: Sequence[bool]) -> Any:
    # Imported here, at the first training: scikit-learn and the SciPy it loads took 2 s of
    # every process that imports the decider (each `dgxmm` command that reaches the server
    # package, `dgxmm token revoke --offline` among them), most of which never trains.
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x = np.asarray([feature_vector(row) for row in features], dtype=np.float64)
    y = np.asarray(accepted, dtype=np.int64)
    classifier = make_pipeline(
        StandardScaler(), LogisticRegression(class_weight="balanced", max_iter=1000)
    )
    classifier.fit(x, y)
    return classifier
