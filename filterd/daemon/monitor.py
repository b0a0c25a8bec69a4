"""The learner's watch on the model: prequential scores, rolling figures, scheduled calibration.

- Each feedback batch is scored with the current model before it is learned; the scores go
  to the store (`filterd.store.drift`) once the batch is learned.
- Every `REPORT_SECONDS` the rolling AUC, recall and specificity at the current threshold
  become gauges, and so do the recall and specificity the thresholds delivered (each record
  at the τ in force when it was scored; `store.drift.Delivered`); a warning is logged when
  the delivered recall is below the target by more than `drift.recall_margin` over at least
  `drift.min_positives` positives.
- With `intervals.calibrate_seconds` > 0 (the default), the threshold is recalibrated that
  often through `calibrate_configured`, the code path of `filterd calibrate`, with the
  `[calibration]` settings, unless no feedback was scored since the newest version. Several
  learners share the job: one calibrates only when the newest version is older than the
  interval.
Monitoring never holds learning back: its store errors are logged, not retried.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from structlog.typing import FilteringBoundLogger

from filterd.bayes.features import encode
from filterd.bayes.fusion import component_scores, with_weights
from filterd.daemon.model_state import ModelState
from filterd.evaluation.calibration import CalibrationError
from filterd.jobs.calibrate import calibrate_configured
from filterd.observe.logs import Repeats
from filterd.observe.metrics import Metrics
from filterd.service.config import Config
from filterd.service.decide import NotReady
from filterd.store.drift import Scored
from filterd.store.errors import StoreError
from filterd.store.handle import ModelStore
from filterd.store.labels import LabelledTokens

REPORT_SECONDS = 10.0
TRIM_EVERY = 10  # batches between trims of the prequential table to drift.window


class Monitor:
    def __init__(
        self,
        model: ModelStore,
        config: Config,
        state: ModelState,
        metrics: Metrics,
        log: FilteringBoundLogger,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.model, self.config, self.state, self.metrics = model, config, state, metrics
        self.log = log.bind(role="learner")
        self.clock = clock
        self.target = config.decision.target_class
        self._last_report = self._last_calibration = clock()
        self._recorded = 0
        self.repeats = Repeats()

    def score(self, items: Sequence[LabelledTokens]) -> list[Scored]:
        """The current model's scores of feedback about to be learned, with the threshold's
        weights and a fusion's component scores ([] before the model is ready)."""
        decider = self.state.decider
        if decider is None or not items:
            return []
        if decider.model is None:
            return []
        model = with_weights(decider.model, self.state.threshold.weights)
        scores = model.score(encode([item.tokens for item in items], model.hasher))
        components = component_scores(scores)
        return [
            Scored(
                item.message_id,
                item.label,
                float(s),
                decider.model_version,
                None if components is None else tuple(components[i].tolist()),
            )
            for i, (item, s) in enumerate(zip(items, scores.binary()))
        ]

    def record(self, scored: Sequence[Scored]) -> None:
        self._recorded += 1
        try:
            self.model.record_scores(
                self.target,
                scored,
                keep=self.config.drift.window,
                trim=self._recorded % TRIM_EVERY == 0,
            )
        except StoreError as error:
            self.repeats.warning(self.log, "prequential scores not recorded", error=str(error))

    def on_idle(self) -> None:
        self.state.refresh()
        self.repeats.flush()
        now = self.clock()
        if now - self._last_report >= REPORT_SECONDS:
            self._last_report = now
            self._report()
        every = self.config.intervals.calibrate_seconds
        if every > 0 and now - self._last_calibration >= every:
            self._last_calibration = now
            self._calibrate(every)

    def _report(self) -> None:
        try:
            report = self.model.drift_report(self.target, self.config.drift.window)
        except StoreError as error:
            self.log.warning("drift report failed", error=str(error))
            return
        for gauge, value in (
            (self.metrics.rolling_auc, report.auc),
            (self.metrics.rolling_recall, report.recall),
            (self.metrics.rolling_specificity, report.specificity),
        ):
            gauge.set(float("nan") if value is None else value)
        self.metrics.rolling_count.set(report.n)
        for scope, delivered in (("window", report.delivered), ("in_force", report.in_force)):
            for gauge, value in (
                (self.metrics.delivered_recall, delivered.recall),
                (self.metrics.delivered_specificity, delivered.specificity),
            ):
                gauge.labels(scope).set(float("nan") if value is None else value)
            self.metrics.delivered_positives.labels(scope).set(delivered.n_pos)
        target = report.target_recall or self.config.decision.target_recall
        drift, delivered = self.config.drift, report.delivered
        if (
            delivered.recall is not None
            and delivered.n_pos >= drift.min_positives
            and delivered.recall < target - drift.recall_margin
        ):
            self.log.warning(
                "delivered recall below the target",
                recall=round(delivered.recall, 4),
                target_recall=target,
                positives=delivered.n_pos,
                missed=delivered.missed,
                auc=report.auc,
                threshold_version=report.threshold_version,
            )

    def _calibrate(self, every: float) -> None:
        try:
            latest = self.model.latest_threshold(self.target)
            age = (
                (datetime.now(UTC) - latest.created_at).total_seconds() if latest else float("inf")
            )
            if age < every:
                return
            if latest is not None:
                since = self.model.delivered_since(self.target, latest.created_at, latest.tau)
                if since.n_pos + since.n_neg == 0:
                    return  # nothing labelled since: a new version would say nothing new
            report = calibrate_configured(self.model, self.config, created_by="filterd run")
        except (CalibrationError, NotReady) as reason:
            self.log.info("threshold not recalibrated", reason=str(reason))
            return
        except StoreError as error:
            self.log.warning("threshold not recalibrated: store error", error=str(error))
            return
        e = report.expected_recall
        self.log.info(
            "threshold recalibrated",
            threshold_version=report.version,
            tau=report.tau,
            auc=report.auc,
            positives=report.n_pos,
            negatives=report.n_neg,
            source=report.source,
            level=report.level,
            expected_recall=round(e.mean, 4),
            expected_recall_range=[round(e.low, 4), round(e.high, 4)],
            previous_delivered_recall=report.in_force.recall,
            previous_positives=report.in_force.n_pos,
        )
