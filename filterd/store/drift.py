"""Drift monitoring: every feedback record is scored before it is learned (prequential
evaluation, as in TREC's immediate-feedback protocol), and the last `window` of these scores
tell how the filter does on today's traffic.

`record_scores` keeps one row per message id (a relabel corrects the row's label) and drops
rows beyond the newest `keep`. `drift_report` gives, over the newest `window` rows for a
target class t: AUC, and recall and specificity at the threshold τ in force
(decide t iff s ≥ τ, docs/methods.md), with the counts they rest on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import Engine, delete, select

from filterd.evaluation import ranking
from filterd.service.decide import DEFAULT_TAU
from filterd.store.bulk import insert_rows
from filterd.store.learning import find_model_id
from filterd.store.schema import Prequential
from filterd.store.thresholds import latest_threshold


@dataclass(frozen=True)
class Scored:
    """A feedback record's score before it was learned."""

    message_id: str
    label: str
    score: float
    model_version: int


@dataclass(frozen=True)
class DriftReport:
    target_class: str
    n: int
    n_pos: int
    n_neg: int
    auc: float | None  # None without both classes
    tau: float
    threshold_version: int | None
    target_recall: float | None
    recall: float | None  # at τ, over the positives
    specificity: float | None  # at τ, over the negatives
    first: datetime | None
    last: datetime | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def record_scores(engine: Engine, model: str, target_class: str, scored: Sequence[Scored], keep: int,
                  now: datetime | None = None, trim: bool = True) -> None:  # fmt: skip
    """Store the scores of a batch of feedback (the last record of an id wins) and, with `trim`,
    drop all but the newest `keep` (trimming now and then is enough: it only bounds the table)."""
    if not scored:
        return
    now = now or datetime.now(UTC)
    latest = {s.message_id: s for s in scored}
    with engine.begin() as conn:
        model_id = find_model_id(conn, model)
        rows = [{"model_id": model_id, "message_id": s.message_id, "label": s.label, "score": s.score,
                     "target_class": target_class, "model_version": s.model_version,
                     "scored_at": now + timedelta(microseconds=i)}  # a total order
                for i, s in enumerate(latest.values())]  # fmt: skip
        insert_rows(conn, Prequential.__table__, rows, conflict=("model_id", "message_id"),
                    update=("label", "score", "target_class", "model_version", "scored_at"))  # fmt: skip
        if not trim:
            return
        cutoff = conn.execute(select(Prequential.scored_at).where(Prequential.model_id == model_id)
                              .order_by(Prequential.scored_at.desc()).offset(keep).limit(1)).scalar()  # fmt: skip
        if cutoff is not None:
            conn.execute(
                delete(Prequential).where(
                    Prequential.model_id == model_id, Prequential.scored_at <= cutoff
                )
            )


def drift_report(engine: Engine, model: str, target_class: str, window: int = 5000) -> DriftReport:
    """The rolling figures over the newest `window` scored feedback records."""
    with engine.connect() as conn:
        model_id = find_model_id(conn, model)
        rows = conn.execute(select(Prequential.label, Prequential.score, Prequential.scored_at)
                            .where(Prequential.model_id == model_id, Prequential.target_class == target_class)
                            .order_by(Prequential.scored_at.desc()).limit(window)).all()  # fmt: skip
    threshold = latest_threshold(engine, model, target_class)
    tau = threshold.tau if threshold is not None else DEFAULT_TAU
    scores = np.array([r.score for r in rows], dtype=np.float64)
    positive = np.array([r.label == target_class for r in rows], dtype=bool)
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    decided = scores >= tau
    times = [r.scored_at for r in rows]
    return DriftReport(
        target_class=target_class, n=len(rows), n_pos=n_pos, n_neg=n_neg,
        auc=ranking.auc(scores, positive) if n_pos and n_neg else None,
        tau=tau, threshold_version=threshold.version if threshold else None,
        target_recall=threshold.target_recall if threshold else None,
        recall=float(decided[positive].mean()) if n_pos else None,
        specificity=float((~decided[~positive]).mean()) if n_neg else None,
        first=min(times) if times else None, last=max(times) if times else None,
    )  # fmt: skip
