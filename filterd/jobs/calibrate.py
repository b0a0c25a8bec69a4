"""The calibration job: a new threshold version per target class from a labelled window.

Calibration (`calibrate_model`, `calibrate_classes`) for target class t and recall target R:
1. the holdout items of the window, by feedback time ts: now − window < ts ≤ now, or the
   last N by ts, or (neither) the whole holdout;
2. each re-scored with the model's current statistics through
   `filterd.service.decide.scoring_model` and `filterd.service.decide.decision_scores`, the
   daemon's own scores s(x) = s_t(x) − max_{c≠t} s_c(x);
   positives are the items labelled t, negatives all others (one-vs-rest for many classes);
   or, with source "prequential", steps 1–2 are the scores every feedback record (learned or
   held out) got from the daemon when it arrived, before it was learned (`store.drift`):
   the scores new traffic really gets, from a model as far behind as the daemon's;
   source "adaptive" (the default, `calibration.source`) takes the same window, and chooses τ for
   the recall 1 − α_t instead of R, where the miss level α_t is the previous version's, moved
   by the misses its τ made on the feedback scored since it was written
   (`filterd.evaluation.calibration.adapt_level`, γ = step · (1 − R)); a target's first
   adaptive version (R < 1) is chosen in conservative mode, whatever the setting;
3. ROC and AUC (`filterd.evaluation.ranking`); τ by
   `filterd.evaluation.calibration.recall_threshold`: exact mode, the
   k-th largest positive score with k = ⌈R·P⌉; conservative mode, the smallest k whose
   one-sided Clopper–Pearson lower bound on recall is ≥ R;
4. the guardrails, then a new version unless `dry_run`.

The report gives what τ is expected to deliver on new traffic like the window
(`expected_recall`: Beta(k, P + 1 − k); specificity: Jeffreys' interval) and what the
previous τ delivered since it was written (`in_force`).

The guardrails are `filterd.evaluation.guardrails`; a refusal is a `GuardrailError`.
A model that is not ready (`filterd.service.decide.NotReady`) is an error too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import cache, partial
from typing import Any, TypedDict, Unpack

import numpy as np
import numpy.typing as npt

from filterd.bayes.fusion import (
    COLUMNS,
    FusionModel,
    combine,
    fit_weights,
    weights_or_initial,
    with_weights,
)
from filterd.bayes.model import FUSION
from filterd.bayes.statistics import Statistics
from filterd.evaluation import ranking
from filterd.evaluation.calibration import (
    CalibrationError,
    Expected,
    Threshold,
    adapt_level,
    expected_rate,
    expected_recall,
)
from filterd.evaluation.guardrails import MIN_NEGATIVES, GuardrailError, guarded_threshold
from filterd.service.config import CALIBRATION_SOURCES, DEFAULTS, Config, parse_duration
from filterd.service.decide import check_ready, decision_scores, scoring_model
from filterd.store.drift import Delivered
from filterd.store.handle import ModelStore
from filterd.store.sql import as_utc
from filterd.store.thresholds import HoldoutWindow, PrequentialWindow, ThresholdVersion

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class _Window:
    """The labelled scores τ is chosen on; for a fusion model, the weights that combined them
    and the same rows combined with the previous version's weights (its τ applies to those)."""

    scores: FloatArray
    labels: npt.NDArray[np.object_]
    bounds: tuple[datetime | None, datetime | None]
    weights: tuple[float, ...] | None = None
    previous_scores: FloatArray | None = None


@dataclass(frozen=True)
class OperatingPoint:
    """A threshold's figures on the window's scores."""

    tau: float
    recall: float
    specificity: float
    precision: float | None  # None when nothing is flagged


def operating_point(scores: FloatArray, positives: BoolArray, tau: float) -> OperatingPoint:
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
    # what the previous τ delivered on the feedback scored since it was written
    in_force: Delivered
    source: str
    level: float | None  # adaptive: the miss level τ was chosen for (recall 1 − level)
    expected_recall: Expected  # on new positives like the window's
    expected_specificity: Expected
    version: int | None  # the version written; None on a dry run
    forced: bool
    overridden: tuple[str, ...]  # the guardrail messages `force` overrode
    weights: tuple[float, ...] | None  # a fusion model's, written with τ
    # fpr, tpr, thresholds (ranking.roc_curve), for the plot
    roc: tuple[FloatArray, FloatArray, FloatArray] = field(repr=False, compare=False)

    @property
    def ham_misclassification(self) -> float:
        """Expected share of negatives flagged at tau: 1 − specificity."""
        return 1.0 - self.specificity

    def as_dict(self) -> dict[str, Any]:
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
        out["in_force"] = self.in_force.as_dict()
        out["expected_recall"] = asdict(self.expected_recall)
        out["expected_specificity"] = asdict(self.expected_specificity)
        out["overridden"] = list(self.overridden)
        return _iso(out)


def _iso(values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` with every datetime, in nested dicts too, as ISO 8601 text."""
    return {
        k: _iso(v) if isinstance(v, dict) else v.isoformat() if isinstance(v, datetime) else v
        for k, v in values.items()
    }


class CalibrationOptions(TypedDict, total=False):
    """The keyword options of `calibrate_classes`, which `calibrate_model` passes on."""

    window: timedelta | None
    last: int | None
    conservative: bool
    confidence: float
    min_positives: int | None
    min_negatives: int
    max_auc_drop: float
    min_docs: int
    force: bool
    dry_run: bool
    created_by: str
    now: datetime | None
    source: str
    step: float


def takes_the_bound(source: str, first: bool, target_recall: float, conservative: bool) -> bool:
    """Whether τ is chosen with the conservative bound: when configured, and for a target's
    `first` adaptive version below R = 1 (also when it comes from the holdout, for want of scores
    on arrival), whose window was scored by the youngest model the deployment will have (its
    scale still moves with every batch learned) and no miss has yet shown how far those scores
    are from the ones to come. At R = 1 the exact τ is the lowest positive already, and no bound
    can certify it.

    >>> takes_the_bound("adaptive", True, 0.99, False)  # a first version
    True
    >>> takes_the_bound("adaptive", False, 0.99, False)  # a later version
    False
    >>> takes_the_bound("adaptive", True, 1.0, False)  # R = 1
    False
    >>> takes_the_bound("holdout", False, 0.99, True)  # as configured
    True
    """
    return conservative or (source == "adaptive" and first and target_recall < 1.0)


def calibrate_model(
    model: ModelStore,
    target_class: str,
    target_recall: float,
    **options: Unpack[CalibrationOptions],
) -> CalibrationReport:
    """Calibrate `target_class` of `model` on a window of its feedback; the keywords (window, last,
    conservative, confidence, min_positives, min_negatives, max_auc_drop, min_docs, force,
    dry_run, created_by, now, source, step) are those of `calibrate_classes`."""
    (report,) = calibrate_classes(model, [target_class], target_recall, **options)
    return report


def calibrate_configured(
    model: ModelStore,
    config: Config,
    created_by: str,
    dry_run: bool = False,
    target_recall: float | None = None,
) -> CalibrationReport:
    """`calibrate_model` for the configured model, target class and recall (or `target_recall`),
    with the `[calibration]` settings: what `filterd run` does every
    `intervals.calibrate_seconds`, and the workbench when an analyst asks."""
    c = config.calibration
    return calibrate_model(
        model,
        config.decision.target_class,
        config.decision.target_recall if target_recall is None else target_recall,
        window=parse_duration(c.window),
        conservative=c.conservative,
        min_positives=c.min_positives or None,
        max_auc_drop=c.max_auc_drop,
        min_docs=config.model.min_docs,
        created_by=created_by,
        source=c.source,
        step=c.step,
        dry_run=dry_run,
    )


def calibrate_classes(
    model: ModelStore,
    target_classes: Sequence[str] | None,
    target_recall: float,
    *,
    window: timedelta | None = None,
    last: int | None = None,
    conservative: bool = False,
    confidence: float = 0.95,
    min_positives: int | None = None,
    min_negatives: int = MIN_NEGATIVES,
    max_auc_drop: float = DEFAULTS.calibration.max_auc_drop,
    min_docs: int = DEFAULTS.model.min_docs,
    force: bool = False,
    dry_run: bool = False,
    created_by: str = "filterd calibrate",
    now: datetime | None = None,
    source: str = DEFAULTS.calibration.source,
    step: float = DEFAULTS.calibration.step,
) -> list[CalibrationReport]:
    """One report per target class, one-vs-rest (None: every class of the model).

    source "holdout": the holdout items re-scored with the current model; "prequential": the
    scores feedback records got when they arrived, before they were learned (`store.drift`);
    "adaptive": the prequential scores, τ for the adapted miss level (module docstring).

    All classes are checked before any is written: a refusal for one writes none.
    """
    if not 0.0 < target_recall <= 1.0:
        raise CalibrationError(f"target recall must be in (0, 1], got {target_recall}")
    now = as_utc(now) or datetime.now(UTC)
    if source not in CALIBRATION_SOURCES:
        choices = ", ".join(CALIBRATION_SOURCES)
        raise ValueError(f"source must be one of {choices}, not {source!r}")
    counts = model.class_documents()
    labels_learned, docs = [label for label, _ in counts], [n for _, n in counts]
    spec = model.spec

    # The statistics are loaded only to re-score the holdout: scores on arrival need none, and
    # the learner runs this job every minute.
    @cache
    def holdout() -> tuple[Statistics, HoldoutWindow]:
        return model.load()[0], model.holdout_window(window, last, now)

    fused = spec.variant == FUSION

    def window_of(source: str, target: str, previous: ThresholdVersion | None) -> _Window:
        in_force = None if previous is None else previous.weights
        if source != "holdout":
            found = model.prequential_window(target, window, last, now)
            if not fused:
                return _Window(found.scores, found.labels, (found.start, found.end))
            return _fused_window(found, target, in_force)
        stats, items = holdout()
        # the holdout is re-scored with the weights in force: they were learned on arrival
        scorer = with_weights(scoring_model(stats, spec, target, min_docs), in_force)
        scores = decision_scores(scorer, items.batch) if len(items) else np.zeros(0)
        weights = scorer.weights if isinstance(scorer, FusionModel) else None
        return _Window(scores, items.labels, (items.start, items.end), weights)

    classes = list(labels_learned) if target_classes is None else list(target_classes)
    checked = []
    for target in classes:
        check_ready(labels_learned, docs, target, min_docs)
        previous = model.latest_threshold(target)
        in_force = (
            Delivered()
            if previous is None
            else model.delivered_since(target, previous.created_at, previous.tau)
        )
        level = None
        cautious = takes_the_bound(source, previous is None, target_recall, conservative)
        if source == "adaptive":
            alpha = 1.0 - target_recall
            start = alpha  # a new target, or no adaptive version yet: start at α
            if previous is not None and previous.target_recall == target_recall:
                start = alpha if previous.level is None else previous.level
            level = adapt_level(start, alpha, in_force.n_pos, in_force.missed, step * alpha)
        check = partial(
            _check,
            model.name,
            target,
            target_recall=target_recall,
            previous=previous,
            in_force=in_force,
            confidence=confidence,
            min_positives=min_positives,
            min_negatives=min_negatives,
            max_auc_drop=max_auc_drop,
            force=force,
        )
        try:
            scored = window_of(source, target, previous)
            checked.append(check(scored, source=source, level=level, conservative=cautious))
        except GuardrailError as refused:
            # No τ yet and too little scored on arrival (a store bootstrapped by `filterd learn`):
            # the first τ may come from the holdout; the adaptive level starts from the next.
            if source != "adaptive" or previous is not None or "auc_drop" in refused.reasons:
                raise
            try:
                rescored = window_of("holdout", target, previous)
                checked.append(check(rescored, source="holdout", level=None, conservative=cautious))
            except GuardrailError as also:
                raise GuardrailError(
                    f"{refused}; nor from the holdout, for a first τ: {also}",
                    list(refused.reasons),
                    refused.forceable,
                ) from None
    if dry_run:
        return [report for report, _ in checked]
    reports = []
    for report, threshold in checked:
        row = model.write_threshold(
            report.target_class,
            threshold,
            report.auc,
            report.window_start,
            report.window_end,
            created_by,
            forced=report.forced,
            now=now,
            source=report.source,
            level=report.level,
            weights=report.weights,
        )
        reports.append(replace(report, version=row.version))
    return reports


def _fused_window(
    found: PrequentialWindow, target: str, in_force: tuple[float, ...] | None
) -> _Window:
    """A fusion model's window: its weights learned from the rows in arrival order
    (`fusion.fit_weights`), every row re-scored with them."""
    components, k = found.components, COLUMNS
    if components is None or components.shape[1] != k:  # none, or another release's components
        components = np.full((len(found.labels), k), np.nan)
    keep = ~np.isnan(components).any(axis=1)  # rows scored without components take no part
    components, labels = components[keep], found.labels[keep]
    oldest_first = slice(None, None, -1)
    weights = fit_weights(components[oldest_first], (labels == target)[oldest_first])
    return _Window(
        combine(components, weights),
        labels,
        (found.start, found.end),
        weights,
        combine(components, weights_or_initial(in_force, k)),  # as the scorers combine them
    )


def _check(
    model: str,
    target: str,
    window: _Window,
    *,
    source: str,
    level: float | None,
    target_recall: float,
    previous: ThresholdVersion | None,
    in_force: Delivered,
    conservative: bool,
    confidence: float,
    min_positives: int | None,
    min_negatives: int,
    max_auc_drop: float,
    force: bool,
) -> tuple[CalibrationReport, Threshold]:
    """τ and its figures for one target class, through the guardrails."""
    scores, labels, bounds = window.scores, window.labels, window.bounds
    positives = np.asarray(labels == target, dtype=bool)
    guarded = guarded_threshold(
        scores,
        positives,
        target_recall,
        target=target,
        # AUCs of different sources differ by design (a holdout re-scored by a model that has
        # learned more ranks better than scores on arrival): compare like with like
        previous_auc=None if previous is None or previous.source != source else previous.auc,
        previous_version=None if previous is None else previous.version,
        conservative=conservative,
        confidence=confidence,
        min_positives=min_positives,
        min_negatives=min_negatives,
        max_auc_drop=max_auc_drop,
        force=force,
        aim=None if level is None else 1.0 - level,
    )
    threshold = guarded.threshold
    n_pos, n_neg = int(positives.sum()), int((~positives).sum())
    hits = round(threshold.recall * n_pos)
    kept = round(threshold.specificity * n_neg)
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
        auc=guarded.auc,
        tau=threshold.tau,
        recall=threshold.recall,
        specificity=threshold.specificity,
        precision=threshold.precision,
        recall_lower_bound=threshold.recall_lower_bound,
        previous=previous,
        previous_here=None
        if previous is None
        else operating_point(
            scores if window.previous_scores is None else window.previous_scores,
            positives,
            previous.tau,
        ),
        in_force=in_force,
        source=source,
        level=level,
        expected_recall=expected_recall(hits, n_pos),
        expected_specificity=expected_rate(kept, n_neg),
        version=None,
        forced=bool(guarded.overridden),
        overridden=guarded.overridden,
        weights=window.weights,
        roc=ranking.roc_curve(scores, positives),
    )
    return report, threshold
