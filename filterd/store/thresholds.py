"""Versioned decision thresholds in the store, and the labelled windows calibration reads.

Versions. A row of `thresholds` is one threshold version. Versions are numbered 1, 2, … per
model, in the order they were written (one sequence per model, shared by its target classes);
the threshold in force for a target class is its highest version (`latest_threshold`, one
indexed query, cheap enough to poll every second). `write_threshold` takes the model row's
lock first, as learning does, so concurrent writers queue and never reuse a number.

Windows. `holdout_window` gives the holdout items of a time window (or the last N), tokens
encoded; `prequential_window` the scores feedback records got when they arrived (`store.drift`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

import numpy as np
import numpy.typing as npt
from sqlalchemy import Engine, func, insert, select

from filterd.bayes.features import DocBatch
from filterd.store.ledger import unpack
from filterd.store.models import ModelRef, lock_model
from filterd.store.schema import Holdout, Prequential
from filterd.store.schema import Threshold as ThresholdRow
from filterd.store.sql import as_utc

if TYPE_CHECKING:  # scipy's statistics: not imported for a type
    from filterd.evaluation.calibration import Threshold


@dataclass(frozen=True)
class ThresholdVersion:
    """One row of `thresholds`."""

    model_id: int
    version: int
    target_class: str
    target_recall: float
    tau: float  # decide target iff s(x) ≥ tau
    auc: float | None
    recall: float | None
    specificity: float | None
    precision: float | None
    n_pos: int
    n_neg: int
    window_start: datetime | None
    window_end: datetime | None
    conservative: bool
    forced: bool
    created_by: str
    created_at: datetime
    source: str | None = None  # holdout | prequential | adaptive (None: not recorded)
    level: float | None = None  # adaptive: the miss level τ was chosen for (recall 1 − level)
    weights: tuple[float, ...] | None = (
        None  # a fusion model's, τ applies to the scores they combine
    )

    @property
    def ham_misclassification(self) -> float | None:
        """1 − specificity: the share of negatives flagged at tau."""
        return None if self.specificity is None else 1.0 - self.specificity


def _version(values: dict[str, Any]) -> ThresholdVersion:
    """The version of a `thresholds` row (as column name → value)."""
    for name in ("window_start", "window_end", "created_at"):
        values[name] = as_utc(values[name])
    if values.get("weights") is not None:
        values["weights"] = tuple(float(w) for w in values["weights"])
    return ThresholdVersion(**values)


def latest_threshold(engine: Engine, model_id: int, target_class: str) -> ThresholdVersion | None:
    """The threshold in force for `target_class` (its highest version), None if there is none."""
    with engine.connect() as conn:
        row = conn.execute(
            select(ThresholdRow.__table__)
            .where(ThresholdRow.model_id == model_id, ThresholdRow.target_class == target_class)
            .order_by(ThresholdRow.version.desc())
            .limit(1)
        ).one_or_none()
    return None if row is None else _version(row._asdict())


def threshold_history(engine: Engine, model_id: int, limit: int = 20) -> list[ThresholdVersion]:
    """The model's latest `limit` versions, newest first, all target classes."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(ThresholdRow.__table__)
            .where(ThresholdRow.model_id == model_id)
            .order_by(ThresholdRow.version.desc())
            .limit(limit)
        ).all()
    return [_version(row._asdict()) for row in rows]


class Written(TypedDict, total=False):
    """How a threshold version came about, each key optional: `forced` past a guardrail
    (default False), written at `now` (default: the clock), its `source` (holdout, prequential
    or adaptive), the miss `level` it was chosen for (adaptive), a fusion model's `weights`."""

    forced: bool
    now: datetime | None
    source: str | None
    level: float | None
    weights: tuple[float, ...] | None


def write_threshold(
    engine: Engine,
    model: ModelRef,
    target_class: str,
    threshold: Threshold,
    auc: float | None,
    window_start: datetime | None,
    window_end: datetime | None,
    created_by: str,
    **written: Unpack[Written],
) -> ThresholdVersion:
    """Write the next version of `model`'s threshold for `target_class`, chosen on the labels
    of [`window_start`, `window_end`]; returns the row."""
    weights = written.get("weights")
    with engine.begin() as conn:
        lock_model(conn, model)  # concurrent writers queue for the number
        model_id = model.id
        last = conn.execute(
            select(func.max(ThresholdRow.version)).where(ThresholdRow.model_id == model_id)
        ).scalar_one()
        row = ThresholdVersion(
            model_id=model_id,
            version=(last or 0) + 1,
            target_class=target_class,
            target_recall=threshold.target_recall,
            tau=threshold.tau,
            auc=auc,
            recall=threshold.recall,
            specificity=threshold.specificity,
            precision=threshold.precision,
            n_pos=threshold.n_pos,
            n_neg=threshold.n_neg,
            window_start=as_utc(window_start),
            window_end=as_utc(window_end),
            conservative=threshold.conservative,
            forced=written.get("forced", False),
            created_by=created_by[:200],
            created_at=as_utc(written.get("now")) or datetime.now(UTC),
            source=written.get("source"),
            level=written.get("level"),
            weights=weights,
        )
        values = asdict(row)
        values["weights"] = None if weights is None else list(weights)
        conn.execute(insert(ThresholdRow).values(**values))
    return row


# --- the holdout window --------------------------------------------------------------------


@dataclass(frozen=True)
class HoldoutWindow:
    """Holdout items in feedback-time order: token counts (no token strings), labels, times."""

    batch: DocBatch
    labels: npt.NDArray[np.object_]  # (n,) str
    ts: list[datetime]
    start: datetime | None  # now − window, else the first item's time
    end: datetime | None  # now, else the last item's time

    def __len__(self) -> int:
        return len(self.labels)


def holdout_window(
    engine: Engine,
    model_id: int,
    window: timedelta | None = None,
    last: int | None = None,
    now: datetime | None = None,
) -> HoldoutWindow:
    """The holdout items with now − window < ts ≤ now, or the last `last` by ts, or all."""
    if window is not None and last is not None:
        raise ValueError("give a time window or a number of items, not both")
    if window is not None and window <= timedelta(0):
        raise ValueError(f"the window must be positive, not {window}")
    if last is not None and last < 1:
        raise ValueError(f"the number of items must be at least 1, not {last}")
    now = as_utc(now) or datetime.now(UTC)
    query = select(Holdout.label, Holdout.tokens, Holdout.ts)
    with engine.connect() as conn:
        query = query.where(Holdout.model_id == model_id)
        if window is not None:
            query = query.where(Holdout.ts > now - window, Holdout.ts <= now)
        if last is not None:
            query = query.order_by(Holdout.ts.desc(), Holdout.message_id.desc()).limit(last)
        else:
            query = query.order_by(Holdout.ts, Holdout.message_id)
        rows = conn.execute(query).all()
    if last is not None:
        rows = rows[::-1]
    keys, counts = zip(*(unpack(tokens) for _, tokens, _ in rows)) if rows else ((), ())
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(k) for k in keys], out=indptr[1:])
    batch = DocBatch(
        indptr,
        np.concatenate([np.zeros(0, np.int64), *keys]),
        np.concatenate([np.zeros(0, np.int64), *counts]),
    )
    ts = [as_utc(t) for _, _, t in rows]
    start: datetime | None
    end: datetime | None
    if window is not None:
        start, end = now - window, now
    else:
        start, end = (ts[0], ts[-1]) if ts else (None, None)
    return HoldoutWindow(
        batch, np.array([label for label, _, _ in rows], dtype=object), ts, start, end
    )


@dataclass(frozen=True)
class PrequentialWindow:
    """Scores feedback records got on arrival, newest first, with their labels; for a fusion
    model also each row's component scores (NaN where a row has none)."""

    scores: npt.NDArray[np.float64]
    labels: npt.NDArray[np.object_]
    start: datetime | None
    end: datetime | None
    components: npt.NDArray[np.float64] | None  # (n, k); None when no row has any


def prequential_window(
    engine: Engine,
    model_id: int,
    target_class: str,
    window: timedelta | None = None,
    last: int | None = None,
    now: datetime | None = None,
) -> PrequentialWindow:
    """The feedback scored for `target_class` before it was learned, with now − window <
    scored_at ≤ now, or the last `last`, or all the store keeps."""
    now = as_utc(now) or datetime.now(UTC)
    query = select(
        Prequential.score, Prequential.label, Prequential.scored_at, Prequential.components
    )
    with engine.connect() as conn:
        query = query.where(
            Prequential.model_id == model_id,
            Prequential.target_class == target_class,
        )
        if window is not None:
            query = query.where(Prequential.scored_at > now - window, Prequential.scored_at <= now)
        query = query.order_by(Prequential.scored_at.desc())
        rows = conn.execute(query.limit(last) if last is not None else query).all()
    scores = np.array([r.score for r in rows], dtype=np.float64)
    labels = np.array([r.label for r in rows], dtype=object)
    times = [as_utc(r.scored_at) for r in rows]
    start, end = (
        (now - window, now)
        if window is not None
        else ((min(times), max(times)) if times else (None, None))
    )
    return PrequentialWindow(scores, labels, start, end, _components([r.components for r in rows]))


def _components(rows: list[list[float] | None]) -> npt.NDArray[np.float64] | None:
    k = max((len(r) for r in rows if r is not None), default=0)
    if k == 0:
        return None
    return np.array(
        [r if r is not None and len(r) == k else [np.nan] * k for r in rows], dtype=np.float64
    )
