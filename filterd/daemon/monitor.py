"""The learner's watch on the model: prequential scores, rolling figures, scheduled calibration.

- Each feedback batch is scored with the current model before it is learned; the scores go
  to the store (`filterd.store.drift`) once the batch is learned.
- Every `REPORT_SECONDS` the rolling AUC, recall and specificity at the current threshold
  become gauges, and a warning is logged when the rolling recall is below the target recall
  by more than `drift.recall_margin` over at least `drift.min_positives` positives.
- With `intervals.calibrate_seconds` > 0, the threshold is recalibrated that often through
  `calibrate_model`, the code path of `filterd calibrate`, with the `[calibration]` settings.
  Several learners share the job: one calibrates only when the newest version is older
  than the interval.
Monitoring never holds learning back: its store errors are logged, not retried.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError
from structlog.typing import FilteringBoundLogger

from filterd.bayes.features import encode
from filterd.daemon.model_state import ModelState
from filterd.evaluation.calibration import CalibrationError
from filterd.jobs.calibrate import calibrate_model
from filterd.observe.logs import Repeats
from filterd.observe.metrics import Metrics
from filterd.service.config import Config, parse_duration
from filterd.service.decide import NotReady, decision_scores
from filterd.store import learning
from filterd.store.database import error_detail
from filterd.store.drift import Scored, drift_report, record_scores
from filterd.store.thresholds import latest_threshold

REPORT_SECONDS = 10.0
TRIM_EVERY = 10  # batches between trims of the prequential table to drift.window


class Monitor:
    def __init__(self, engine: Engine, config: Config, state: ModelState, metrics: Metrics,
                 log: FilteringBoundLogger,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.engine, self.config, self.state, self.metrics = engine, config, state, metrics
        self.log = log.bind(role="learner")
        self.clock = clock
        self.target = config.decision.target_class
        self._last_report = self._last_calibration = clock()
        self._recorded = 0
        self.repeats = Repeats()

    def score(self, items: Sequence[learning.LabelledTokens]) -> list[Scored]:
        """The current model's scores of feedback about to be learned ([] before it is ready)."""
        decider = self.state.decider
        if decider is None or not items:
            return []
        model = decider.model
        if model is None:
            return []
        scores = decision_scores(model, encode([item.tokens for item in items], model.hasher))
        return [
            Scored(item.message_id, item.label, float(s), decider.model_version)
            for item, s in zip(items, scores)
        ]

    def record(self, scored: Sequence[Scored]) -> None:
        self._recorded += 1
        try:
            record_scores(self.engine, self.config.model.name, self.target, scored, keep=self.config.drift.window,
                          trim=self._recorded % TRIM_EVERY == 0)  # fmt: skip
        except SQLAlchemyError as error:
            self.repeats.warning(
                self.log, "prequential scores not recorded", error=error_detail(error)
            )

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
            report = drift_report(
                self.engine, self.config.model.name, self.target, self.config.drift.window
            )
        except SQLAlchemyError as error:
            self.log.warning("drift report failed", error=error_detail(error))
            return
        for gauge, value in ((self.metrics.rolling_auc, report.auc), (self.metrics.rolling_recall, report.recall),
                             (self.metrics.rolling_specificity, report.specificity)):  # fmt: skip
            gauge.set(float("nan") if value is None else value)
        self.metrics.rolling_count.set(report.n)
        target = report.target_recall or self.config.decision.target_recall
        drift = self.config.drift
        if (
            report.recall is not None
            and report.n_pos >= drift.min_positives
            and report.recall < target - drift.recall_margin
        ):
            self.log.warning("rolling recall below the target", recall=round(report.recall, 4), target_recall=target,
                             positives=report.n_pos, auc=report.auc, threshold_version=report.threshold_version)  # fmt: skip

    def _calibrate(self, every: float) -> None:
        c = self.config.calibration
        try:
            latest = latest_threshold(self.engine, self.config.model.name, self.target)
            age = (
                (datetime.now(UTC) - latest.created_at).total_seconds() if latest else float("inf")
            )
            if age < every:
                return
            report = calibrate_model(self.engine, self.config.model.name, self.target, self.config.decision.target_recall,
                                     window=parse_duration(c.window), conservative=c.conservative,
                                     min_positives=c.min_positives or None, max_auc_drop=c.max_auc_drop,
                                     min_docs=self.config.model.min_docs, created_by="filterd run",
                                     source=c.source)  # fmt: skip
        except (CalibrationError, NotReady) as reason:
            self.log.info("threshold not recalibrated", reason=str(reason))
            return
        except SQLAlchemyError as error:
            self.log.warning("threshold not recalibrated: store error", error=error_detail(error))
            return
        self.log.info("threshold recalibrated", threshold_version=report.version, tau=report.tau, auc=report.auc,
                      positives=report.n_pos, negatives=report.n_neg)  # fmt: skip
