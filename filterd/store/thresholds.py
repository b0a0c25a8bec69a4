"""Versioned decision thresholds in the store, and the calibration job that writes them.

Versions. A row of `thresholds` is one threshold version. Versions are numbered 1, 2, … per
model, in the order they were written (one sequence per model, shared by its target classes);
the threshold in force for a target class is its highest version (`latest_threshold`, one
indexed query, cheap enough to poll every second). `write_threshold` takes the model row's
lock first, as learning does, so concurrent writers queue and never reuse a number.

Calibration (`calibrate_model`, `calibrate_classes`) for target class t and recall target R:
1. the holdout items of the window, by feedback time ts: now − window < ts ≤ now, or the
   last N by ts, or (neither) the whole holdout;
2. each re-scored with the model's current statistics through `decide.scoring_model` and
   `decide.decision_scores`, the daemon's own scores s(x) = s_t(x) − max_{c≠t} s_c(x);
   positives are the items labelled t, negatives all others (one-vs-rest for many classes);
   or, with source "prequential", steps 1–2 are the scores every feedback record (learned or
   held out) got from the daemon when it arrived, before it was learned (`store.drift`):
   the scores new traffic really gets, from a model as far behind as the daemon's;
3. ROC and AUC (`filterd.metrics`); τ by `calibrate.recall_threshold`: exact mode, the
   k-th largest positive score with k = ⌈R·P⌉; conservative mode, the smallest k whose
   one-sided Clopper–Pearson lower bound on recall is ≥ R;
4. the guardrails below, then a new version unless `dry_run`.

Guardrails (`GuardrailError`). `force` overrides the first three; the version written then
records forced = true (only when a guardrail was actually overridden).
- too few positives: P ≥ min_positives, by default ⌈1/(1−R)⌉ for R < 1 (100 for R = 0.99)
  and 100 for R = 1; conservative mode needs at least the P whose bound can reach R at all
  (299 for R = 0.99 at 95 %). Why: below 1/(1−R) positives ⌈R·P⌉ = P, so τ is the lowest
  positive score and the window cannot tell R from 1. And a new positive, exchangeable with
  the window's P, scores ≥ the k-th largest of them with probability k/(P+1): at P = 1/(1−R)
  the expected miss rate on new traffic is ≈ 2(1−R), falling toward 1−R as P grows; for R = 1
  (τ = the lowest positive) it is 1/(P+1) ≤ 1 % from P = 100 on.
- too few negatives: N ≥ min_negatives (100), so that specificity is measured to 1 % (with
  no false alarm among N, the one-sided 95 % bound on the ham misclassification rate is
  still ≈ 3/N, the rule of three).
- AUC drop: AUC < the previous version's AUC − max_auc_drop (0.02): the model or the traffic
  changed; a person should look before a new τ is trusted.
- unreachable (cannot be forced): no τ meets the target — no positives or no negatives in
  the window, or the conservative bound cannot reach R with this many positives.
A model that is not ready (`decide.NotReady`) or unknown (`UnknownModel`) is an error too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta

import numpy as np
from sqlalchemy import Engine, func, insert, select, update

from filterd import metrics
from filterd.calibrate import CalibrationError, Threshold, _positives_needed, recall_threshold
from filterd.decide import decision_scores, scoring_model
from filterd.features import DocBatch
from filterd.store.learning import UnknownModel, as_utc, find_model_id, spec_from_json, unpack
from filterd.store.schema import Holdout, ModelRow, Prequential
from filterd.store.schema import Threshold as ThresholdRow
from filterd.store.sync import load

MIN_POSITIVES_FULL_RECALL = 100  # R = 1: expected miss rate 1/(P+1) ≤ 1 %
MIN_NEGATIVES = 100  # specificity to 1 %
MAX_AUC_DROP = 0.02
SOURCES = ("holdout", "prequential")


class GuardrailError(CalibrationError):
    """Calibration refused; `reasons` are the guardrails that failed ("too_few_positives",
    "too_few_negatives", "auc_drop", "unreachable"), `forceable` whether `force` overrides them."""

    def __init__(self, message: str, reasons: Sequence[str], forceable: bool) -> None:
        super().__init__(message)
        self.reasons = tuple(reasons)
        self.forceable = forceable


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

    @property
    def ham_misclassification(self) -> float | None:
        """1 − specificity: the share of negatives flagged at tau."""
        return None if self.specificity is None else 1.0 - self.specificity


def _version(row) -> ThresholdVersion:
    values = row._asdict()
    for name in ("window_start", "window_end", "created_at"):
        values[name] = as_utc(values[name])
    return ThresholdVersion(**values)


def latest_threshold(engine: Engine, model: str, target_class: str) -> ThresholdVersion | None:
    """The threshold in force for `target_class` (its highest version), None if there is none."""
    with engine.connect() as conn:
        row = conn.execute(
            select(ThresholdRow.__table__)
            .join(ModelRow, ModelRow.id == ThresholdRow.model_id)
            .where(ModelRow.name == model, ThresholdRow.target_class == target_class)
            .order_by(ThresholdRow.version.desc())
            .limit(1)
        ).one_or_none()
        if row is None:
            find_model_id(conn, model)  # an unknown model is an error, not "no threshold yet"
            return None
    return _version(row)


def threshold_history(engine: Engine, model: str, limit: int = 20) -> list[ThresholdVersion]:
    """The model's latest `limit` versions, newest first, all target classes."""
    with engine.connect() as conn:
        model_id = find_model_id(conn, model)
        rows = conn.execute(
            select(ThresholdRow.__table__)
            .where(ThresholdRow.model_id == model_id)
            .order_by(ThresholdRow.version.desc())
            .limit(limit)
        ).all()
    return [_version(row) for row in rows]


def write_threshold(
    engine: Engine,
    model: str,
    target_class: str,
    threshold: Threshold,
    auc: float | None,
    window_start: datetime | None,
    window_end: datetime | None,
    created_by: str,
    forced: bool = False,
    now: datetime | None = None,
) -> ThresholdVersion:
    """Write the next version of `model`'s threshold for `target_class`; returns the row."""
    with engine.begin() as conn:
        # The model row lock (as learning takes it): concurrent writers queue for the number.
        model_id = conn.execute(
            update(ModelRow)
            .where(ModelRow.name == model)
            .values(seq=ModelRow.seq)
            .returning(ModelRow.id)
        ).scalar_one_or_none()
        if model_id is None:
            raise UnknownModel(f"no model named {model!r} in the store")
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
            forced=forced,
            created_by=created_by[:200],
            created_at=as_utc(now) or datetime.now(UTC),
        )
        conn.execute(insert(ThresholdRow).values(**asdict(row)))
    return row


# --- the holdout window --------------------------------------------------------------------


@dataclass(frozen=True)
class HoldoutWindow:
    """Holdout items in feedback-time order: token counts (no token strings), labels, times."""

    batch: DocBatch
    labels: np.ndarray  # (n,) str
    ts: list[datetime]
    start: datetime | None  # now − window, else the first item's time
    end: datetime | None  # now, else the last item's time

    def __len__(self) -> int:
        return len(self.labels)


def holdout_window(
    engine: Engine,
    model: str,
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
        query = query.where(Holdout.model_id == find_model_id(conn, model))
        if window is not None:
            query = query.where(Holdout.ts > now - window, Holdout.ts <= now)
        if last is not None:
            query = query.order_by(Holdout.ts.desc(), Holdout.message_id.desc()).limit(last)
        else:
            query = query.order_by(Holdout.ts, Holdout.message_id)
        rows = conn.execute(query).all()
    if last is not None:
        rows.reverse()
    keys, counts = zip(*(unpack(tokens) for _, tokens, _ in rows)) if rows else ((), ())
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(k) for k in keys], out=indptr[1:])
    batch = DocBatch(
        indptr,
        np.concatenate([np.zeros(0, np.int64), *keys]),
        np.concatenate([np.zeros(0, np.int64), *counts]),
    )
    ts = [as_utc(t) for _, _, t in rows]
    if window is not None:
        start, end = now - window, now
    else:
        start, end = (ts[0], ts[-1]) if ts else (None, None)
    return HoldoutWindow(
        batch, np.array([label for label, _, _ in rows], dtype=object), ts, start, end
    )


def prequential_window(engine: Engine, model: str, target_class: str, window: timedelta | None = None,
                       last: int | None = None, now: datetime | None = None):  # fmt: skip
    """(scores, labels, (start, end)) of the feedback scored for `target_class` before it was
    learned, with now − window < scored_at ≤ now, or the last `last`, or all the store keeps."""
    now = as_utc(now) or datetime.now(UTC)
    query = select(Prequential.score, Prequential.label, Prequential.scored_at)
    with engine.connect() as conn:
        query = query.where(Prequential.model_id == find_model_id(conn, model), Prequential.target_class == target_class)
        if window is not None:
            query = query.where(Prequential.scored_at > now - window, Prequential.scored_at <= now)
        query = query.order_by(Prequential.scored_at.desc())
        rows = conn.execute(query.limit(last) if last is not None else query).all()
    scores = np.array([r.score for r in rows], dtype=np.float64)
    labels = np.array([r.label for r in rows], dtype=object)
    times = [as_utc(r.scored_at) for r in rows]
    bounds = (now - window, now) if window is not None else ((min(times), max(times)) if times else (None, None))
    return scores, labels, bounds


# --- calibration --------------------------------------------------------------------------


def default_min_positives(target_recall: float) -> int:
    """⌈1/(1−R)⌉ for R < 1, MIN_POSITIVES_FULL_RECALL for R = 1 (see the module docstring)."""
    if target_recall >= 1.0:
        return MIN_POSITIVES_FULL_RECALL
    return max(1, math.ceil(1.0 / (1.0 - target_recall) - 1e-9))  # 1/(1−0.99) is 100.000…01


@dataclass(frozen=True)
class OperatingPoint:
    """A threshold's figures on the window's scores."""

    tau: float
    recall: float
    specificity: float
    precision: float | None  # None when nothing is flagged


def operating_point(scores: np.ndarray, positives: np.ndarray, tau: float) -> OperatingPoint:
    flagged = scores >= tau
    hits, false_alarms = int(np.sum(flagged & positives)), int(np.sum(flagged & ~positives))
    n_pos, n_neg = int(positives.sum()), int((~positives).sum())
    return OperatingPoint(
        tau,
        hits / n_pos,
        (n_neg - false_alarms) / n_neg,
        hits / (hits + false_alarms) if hits + false_alarms else None,
    )


@dataclass(frozen=True)
class CalibrationReport:
    """What one calibration of one target class found, and what it wrote."""

    model: str
    target_class: str
    target_recall: float
    conservative: bool
    confidence: float
    window_start: datetime | None
    window_end: datetime | None
    n_pos: int
    n_neg: int
    auc: float
    tau: float
    recall: float  # on the window
    specificity: float  # ham kept
    precision: float
    recall_lower_bound: float | None  # one-sided Clopper–Pearson at `confidence`
    previous: ThresholdVersion | None  # the version in force before, with its own window's figures
    previous_here: OperatingPoint | None  # the previous tau on this window's scores
    version: int | None  # the version written; None on a dry run
    forced: bool
    overridden: tuple[str, ...]  # the guardrail messages `force` overrode
    # fpr, tpr, thresholds (metrics.roc_curve), for the plot
    roc: tuple[np.ndarray, np.ndarray, np.ndarray] = field(repr=False, compare=False)

    @property
    def ham_misclassification(self) -> float:
        """Expected share of negatives flagged at tau: 1 − specificity."""
        return 1.0 - self.specificity

    def as_dict(self) -> dict:
        """JSON-ready figures (times ISO 8601; the ROC points left out)."""
        out = {name: getattr(self, name) for name in self.__dataclass_fields__ if name != "roc"}
        out["ham_misclassification"] = self.ham_misclassification
        out["previous"] = (
            None
            if self.previous is None
            else {
                **asdict(self.previous),
                "ham_misclassification": self.previous.ham_misclassification,
            }
        )
        out["previous_here"] = None if self.previous_here is None else asdict(self.previous_here)
        out["overridden"] = list(self.overridden)
        return _iso(out)


def _iso(value):
    if isinstance(value, dict):
        return {k: _iso(v) for k, v in value.items()}
    return value.isoformat() if isinstance(value, datetime) else value


def calibrate_model(
    engine: Engine, model: str, target_class: str, target_recall: float, **options
) -> CalibrationReport:
    """Calibrate `target_class` of `model` on its holdout window; the keywords (window, last,
    conservative, confidence, min_positives, min_negatives, max_auc_drop, min_docs, force,
    dry_run, created_by, now) are those of `calibrate_classes`."""
    (report,) = calibrate_classes(engine, model, [target_class], target_recall, **options)
    return report


def calibrate_classes(
    engine: Engine,
    model: str,
    target_classes: Sequence[str] | None,
    target_recall: float,
    *,
    window: timedelta | None = None,
    last: int | None = None,
    conservative: bool = False,
    confidence: float = 0.95,
    min_positives: int | None = None,
    min_negatives: int = MIN_NEGATIVES,
    max_auc_drop: float = MAX_AUC_DROP,
    min_docs: int = 20,
    force: bool = False,
    dry_run: bool = False,
    created_by: str = "filterd calibrate",
    now: datetime | None = None,
    source: str = "holdout",
) -> list[CalibrationReport]:
    """One report per target class, one-vs-rest (None: every class of the model).

    source "holdout": the holdout items re-scored with the current model; "prequential": the
    scores feedback records got when they arrived, before they were learned (`store.drift`).

    All classes are checked before any is written: a refusal for one writes none.
    """
    if not 0.0 < target_recall <= 1.0:
        raise CalibrationError(f"target recall must be in (0, 1], got {target_recall}")
    now = as_utc(now) or datetime.now(UTC)
    with engine.connect() as conn:
        spec = conn.execute(
            select(ModelRow.spec).where(ModelRow.name == model)
        ).scalar_one_or_none()
    if spec is None:
        raise UnknownModel(f"no model named {model!r} in the store")
    if source not in SOURCES:
        raise ValueError(f"source must be one of {', '.join(SOURCES)}, not {source!r}")
    stats, _ = load(engine, model)
    items = holdout_window(engine, model, window, last, now) if source == "holdout" else None
    classes = list(stats.labels) if target_classes is None else list(target_classes)
    checked = []
    for target in classes:
        scorer = scoring_model(stats, spec_from_json(spec), target, min_docs)
        if items is not None:
            scores = decision_scores(scorer, items.batch) if len(items) else np.zeros(0)
            labels, bounds = items.labels, (items.start, items.end)
        else:
            scores, labels, bounds = prequential_window(engine, model, target, window, last, now)
        checked.append(
            _check(
                model,
                target,
                scores,
                labels == target,
                bounds,
                target_recall,
                latest_threshold(engine, model, target),
                conservative=conservative,
                confidence=confidence,
                min_positives=min_positives,
                min_negatives=min_negatives,
                max_auc_drop=max_auc_drop,
                force=force,
            )
        )
    if dry_run:
        return [report for report, _ in checked]
    reports = []
    for report, threshold in checked:
        row = write_threshold(
            engine,
            model,
            report.target_class,
            threshold,
            report.auc,
            report.window_start,
            report.window_end,
            created_by,
            forced=report.forced,
            now=now,
        )
        reports.append(replace(report, version=row.version))
    return reports


def _check(
    model: str,
    target: str,
    scores: np.ndarray,
    positives: np.ndarray,
    bounds: tuple[datetime | None, datetime | None],
    target_recall: float,
    previous: ThresholdVersion | None,
    *,
    conservative: bool,
    confidence: float,
    min_positives: int | None,
    min_negatives: int,
    max_auc_drop: float,
    force: bool,
) -> tuple[CalibrationReport, Threshold]:
    """τ and its figures for one target class, through the guardrails."""
    positives = positives.astype(bool)
    n_pos, n_neg = int(positives.sum()), int((~positives).sum())
    needed = default_min_positives(target_recall) if min_positives is None else min_positives
    if conservative:
        needed = max(needed, _positives_needed(target_recall, confidence) or 0)
    failed: list[tuple[str, str]] = []
    if n_pos < needed:
        mode = f"the conservative {confidence:.0%} bound" if conservative else "exact mode"
        message = (
            f"too few positives: {n_pos} {target!r} items in the window, target recall "
            f"{target_recall:g} in {mode} needs at least {needed}"
        )
        failed.append(("too_few_positives", message))
    if n_neg < min_negatives:
        message = (
            f"too few negatives: {n_neg} items not {target!r} in the window, "
            f"at least {min_negatives} needed"
        )
        failed.append(("too_few_negatives", message))
    _refuse(target, failed, force)
    try:
        threshold = recall_threshold(
            scores, positives, target_recall, conservative=conservative, confidence=confidence
        )
    except CalibrationError as error:
        raise GuardrailError(
            f"{target!r}: target not reachable: {error} (--force cannot override this)",
            ["unreachable"],
            False,
        ) from None
    auc = metrics.auc(scores, positives)
    auc_failed = []
    if previous is not None and previous.auc is not None and auc < previous.auc - max_auc_drop:
        message = (
            f"AUC fell from {previous.auc:.4f} (version {previous.version}) to {auc:.4f}, "
            f"more than the allowed {max_auc_drop:g}"
        )
        auc_failed.append(("auc_drop", message))
    _refuse(target, auc_failed, force)
    overridden = tuple(message for _, message in failed + auc_failed)
    report = CalibrationReport(
        model=model,
        target_class=target,
        target_recall=float(target_recall),
        conservative=conservative,
        confidence=confidence,
        window_start=bounds[0],
        window_end=bounds[1],
        n_pos=n_pos,
        n_neg=n_neg,
        auc=auc,
        tau=threshold.tau,
        recall=threshold.recall,
        specificity=threshold.specificity,
        precision=threshold.precision,
        recall_lower_bound=threshold.recall_lower_bound,
        previous=previous,
        previous_here=None
        if previous is None
        else operating_point(scores, positives, previous.tau),
        version=None,
        forced=bool(overridden),
        overridden=overridden,
        roc=metrics.roc_curve(scores, positives),
    )
    return report, threshold


def _refuse(target: str, failed: list[tuple[str, str]], force: bool) -> None:
    if failed and not force:
        raise GuardrailError(
            f"refused for {target!r}: "
            + "; ".join(m for _, m in failed)
            + " (--force to override)",
            [r for r, _ in failed],
            True,
        )
