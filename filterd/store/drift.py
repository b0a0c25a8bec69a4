"""Drift monitoring: every feedback record is scored before it is learned (prequential
evaluation, as in TREC's immediate-feedback protocol), and the last `window` of these scores
tell how the filter does on today's traffic.

`record_scores` keeps one row per message id (a relabel corrects the row's label) and drops
rows beyond the newest `keep`. `drift_report` gives, over the newest `window` rows for a
target class t: AUC, and recall and specificity at the threshold τ in force
(decide t iff s ≥ τ, docs/methods.md), with the counts they rest on; and what the thresholds
delivered (`Delivered`): each row judged at the τ that was in force when it was scored, over the
window (`delivered`) and since the τ in force was written (`in_force`, `delivered_since`).
`drift_series` cuts the same rows into consecutive groups, for a chart of the figures over time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import Connection, Engine, Row, delete, select

from filterd.bayes.arrays import BoolArray, FloatArray
from filterd.evaluation import ranking
from filterd.service.decide import DEFAULT_TAU
from filterd.store.bulk import insert_rows
from filterd.store.schema import Prequential
from filterd.store.schema import Threshold as ThresholdRow
from filterd.store.sql import as_utc
from filterd.store.thresholds import latest_threshold


@dataclass(frozen=True)
class Scored:
    """A feedback record's score before it was learned."""

    message_id: str
    label: str
    score: float
    model_version: int
    components: tuple[float, ...] | None = None  # a fusion model's component scores


@dataclass(frozen=True)
class Delivered:
    """Decisions the thresholds in force made on the feedback scored meanwhile: of `n_pos`
    target items `caught` scored ≥ τ, of `n_neg` others `passed` scored < τ."""

    n_pos: int = 0
    caught: int = 0
    n_neg: int = 0
    passed: int = 0

    @property
    def recall(self) -> float | None:
        return self.caught / self.n_pos if self.n_pos else None

    @property
    def specificity(self) -> float | None:
        return self.passed / self.n_neg if self.n_neg else None

    @property
    def missed(self) -> int:
        return self.n_pos - self.caught

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "recall": self.recall, "specificity": self.specificity}


def _delivered(scores: FloatArray, positive: BoolArray, tau: FloatArray | float) -> Delivered:
    flagged = scores >= tau
    return Delivered(
        int(positive.sum()),
        int((flagged & positive).sum()),
        int((~positive).sum()),
        int((~flagged & ~positive).sum()),
    )


def delivered_since(
    engine: Engine, model_id: int, target_class: str, since: datetime, tau: float
) -> Delivered:
    """What τ delivered on the feedback scored after `since` (the store keeps the newest
    `drift.window` records)."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(Prequential.label, Prequential.score).where(
                Prequential.model_id == model_id,
                Prequential.target_class == target_class,
                Prequential.scored_at > since,
            )
        ).all()
    scores = np.array([r.score for r in rows], dtype=np.float64)
    return _delivered(scores, np.array([r.label == target_class for r in rows], dtype=bool), tau)


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
    # each row at the τ in force when it was scored, rows before the first τ left out
    delivered: Delivered = Delivered()
    in_force: Delivered = Delivered()  # the rows scored since the τ in force was written
    in_force_since: datetime | None = None

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["delivered"], out["in_force"] = self.delivered.as_dict(), self.in_force.as_dict()
        return out


def record_scores(
    engine: Engine,
    model_id: int,
    target_class: str,
    scored: Sequence[Scored],
    keep: int,
    now: datetime | None = None,
    trim: bool = True,
) -> None:
    """Store the scores of a batch of feedback (the last record of an id wins) and, with `trim`,
    drop all but the newest `keep` (trimming now and then is enough: it only bounds the table)."""
    if not scored:
        return
    now = now or datetime.now(UTC)
    latest = {s.message_id: s for s in scored}
    with engine.begin() as conn:
        rows = [
            {
                "model_id": model_id,
                "message_id": s.message_id,
                "label": s.label,
                "score": s.score,
                "target_class": target_class,
                "model_version": s.model_version,
                "scored_at": now + timedelta(microseconds=i),  # a total order
                "components": None if s.components is None else list(s.components),
            }
            for i, s in enumerate(latest.values())
        ]
        insert_rows(
            conn,
            Prequential.__table__,
            rows,
            conflict=("model_id", "message_id"),
            update=("label", "score", "target_class", "model_version", "scored_at", "components"),
        )
        if not trim:
            return
        cutoff = conn.execute(
            select(Prequential.scored_at)
            .where(Prequential.model_id == model_id)
            .order_by(Prequential.scored_at.desc())
            .offset(keep)
            .limit(1)
        ).scalar()
        if cutoff is not None:
            conn.execute(
                delete(Prequential).where(
                    Prequential.model_id == model_id, Prequential.scored_at <= cutoff
                )
            )


def drift_report(
    engine: Engine, model_id: int, target_class: str, window: int = 5000
) -> DriftReport:
    """The rolling figures over the newest `window` scored feedback records."""
    with engine.connect() as conn:
        rows = _newest(conn, model_id, target_class, window)
        times = [as_utc(r.scored_at) for r in rows]
        versions = _versions_since(conn, model_id, target_class, min(times)) if times else []
    threshold = latest_threshold(engine, model_id, target_class)
    tau = threshold.tau if threshold is not None else DEFAULT_TAU
    scores = np.array([r.score for r in rows], dtype=np.float64)
    positive = np.array([r.label == target_class for r in rows], dtype=bool)
    hindsight = _delivered(scores, positive, tau)  # today's τ on every row
    n_pos, n_neg = hindsight.n_pos, hindsight.n_neg
    delivered = in_force = Delivered()
    if versions:
        judged, taus = _in_force(versions, times)
        at = np.array([t.timestamp() for t in times])
        delivered = _delivered(scores[judged], positive[judged], taus[judged])
        if threshold is not None:
            since = at > threshold.created_at.timestamp()
            in_force = _delivered(scores[since], positive[since], threshold.tau)
    return DriftReport(
        target_class=target_class,
        n=len(rows),
        n_pos=n_pos,
        n_neg=n_neg,
        auc=ranking.auc(scores, positive) if n_pos and n_neg else None,
        tau=tau,
        threshold_version=threshold.version if threshold else None,
        target_recall=threshold.target_recall if threshold else None,
        recall=hindsight.recall,
        specificity=hindsight.specificity,
        first=min(times) if times else None,
        last=max(times) if times else None,
        delivered=delivered,
        in_force=in_force,
        in_force_since=threshold.created_at if threshold is not None else None,
    )


@dataclass(frozen=True)
class DriftPoint:
    """One group of consecutive scored feedback records: its last record's time (`end`), its
    size, its AUC (None without both classes) and what the thresholds delivered on it: recall
    and specificity with each record judged at the τ in force when it was scored (None when the
    group has no such positive, resp. negative; records before the first τ are left out, as in
    `DriftReport.delivered`)."""

    end: datetime
    n: int
    auc: float | None
    recall: float | None
    specificity: float | None


def drift_series(
    engine: Engine, model_id: int, target_class: str, window: int = 5000, buckets: int = 20
) -> list[DriftPoint]:
    """The newest `window` scored feedback records (those `drift_report` reads), in the order they
    were scored, cut into `buckets` consecutive groups of sizes differing by at most one (fewer
    groups when there are fewer records): one `DriftPoint` per group, oldest first."""
    if buckets < 1:
        raise ValueError(f"buckets must be at least 1, got {buckets}")
    with engine.connect() as conn:
        rows = list(reversed(_newest(conn, model_id, target_class, window)))  # oldest first
        times = [as_utc(r.scored_at) for r in rows]
        versions = _versions_since(conn, model_id, target_class, times[0]) if times else []
    if not rows:
        return []
    scores = np.array([r.score for r in rows], dtype=np.float64)
    positive = np.array([r.label == target_class for r in rows], dtype=bool)
    judged, taus = _in_force(versions, times)
    points = []
    for group in np.array_split(np.arange(len(rows)), min(buckets, len(rows))):
        s, pos, j = scores[group], positive[group], judged[group]
        n_pos = int(pos.sum())
        delivered = _delivered(s[j], pos[j], taus[group][j])
        points.append(
            DriftPoint(
                end=times[int(group[-1])],
                n=int(group.size),
                auc=ranking.auc(s, pos) if 0 < n_pos < group.size else None,
                recall=delivered.recall,
                specificity=delivered.specificity,
            )
        )
    return points


def _newest(
    conn: Connection, model_id: int, target_class: str, window: int
) -> Sequence[Row[str, float, datetime]]:
    """The newest `window` prequential rows (label, score, scored_at) of a target class, newest
    first."""
    return conn.execute(
        select(Prequential.label, Prequential.score, Prequential.scored_at)
        .where(Prequential.model_id == model_id, Prequential.target_class == target_class)
        .order_by(Prequential.scored_at.desc())
        .limit(window)
    ).all()


def _in_force(
    versions: Sequence[tuple[datetime, float]], times: Sequence[datetime]
) -> tuple[BoolArray, FloatArray]:
    """Per row scored at `times`: whether a version was in force (the last one written at or
    before the row; `versions` oldest first, as `_versions_since` gives them), and its τ (0 where
    none was)."""
    at = np.array([t.timestamp() for t in times], dtype=np.float64)
    written = np.array([v[0].timestamp() for v in versions], dtype=np.float64)
    which = np.searchsorted(written, at, side="right") - 1
    taus = np.array([v[1] for v in versions], dtype=np.float64)
    judged = which >= 0
    return judged, taus[np.maximum(which, 0)] if versions else np.zeros(len(times))


def _versions_since(
    conn: Connection, model_id: int, target_class: str, start: datetime
) -> list[tuple[datetime, float]]:
    """(created_at, τ) of the versions in force from `start` on, oldest first: the last one
    written at or before `start`, and every later one."""
    where = (ThresholdRow.model_id == model_id, ThresholdRow.target_class == target_class)
    before = conn.execute(
        select(ThresholdRow.created_at, ThresholdRow.tau)
        .where(*where, ThresholdRow.created_at <= start)
        .order_by(ThresholdRow.created_at.desc())
        .limit(1)
    ).all()
    after = conn.execute(
        select(ThresholdRow.created_at, ThresholdRow.tau)
        .where(*where, ThresholdRow.created_at > start)
        .order_by(ThresholdRow.created_at)
    ).all()
    return [(as_utc(t), float(tau)) for t, tau in [*before, *after]]
