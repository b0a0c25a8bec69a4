"""The learner's monitor: prequential scores, rolling figures, the recall warning, scheduled
calibration."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import structlog
from sqlalchemy import update
from structlog.testing import capture_logs

from filterd.bayes.model import ModelSpec
from filterd.daemon.model_state import ModelState
from filterd.daemon.monitor import Monitor
from filterd.evaluation.calibration import Threshold
from filterd.evaluation.synth import SynthConfig, SynthRecord, generate
from filterd.observe.health import Health
from filterd.observe.metrics import Metrics
from filterd.service.config import Config, load
from filterd.store.handle import ModelStore, Store
from filterd.store.labels import LabelledTokens
from filterd.store.schema import Prequential
from filterd.store.schema import Threshold as ThresholdRow
from filterd.tokenize import Tokenizer
from tests.store.conftest import threshold_in_force


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def monitored_store(
    tmp_path: Path, **overrides: object
) -> tuple[ModelStore, Config, Monitor, Metrics, Clock]:
    url = f"sqlite:///{tmp_path / 'filterd.db'}"
    store = Store.open(url)
    store.upgrade()
    model = store.create_model("default", ModelSpec("mnb"), seed=1)
    config = load(
        None, environ={}, overrides={"database.url": url, "model.min_docs": 5, **overrides}
    )
    metrics, clock = Metrics(), Clock()
    state = ModelState(model, config, metrics, Health(), structlog.get_logger())
    return (
        model,
        config,
        Monitor(model, config, state, metrics, structlog.get_logger(), clock=clock),
        metrics,
        clock,
    )


def feedback(records: list[SynthRecord]) -> list[LabelledTokens]:
    tokenize = Tokenizer()
    return [LabelledTokens(r["id"], r["label"], tokenize(r).tokens) for r in records]


def test_scores_before_learning_become_rolling_and_delivered_figures_and_a_recall_warning(
    tmp_path: Path,
) -> None:
    model, _config, monitor, metrics, clock = monitored_store(
        tmp_path, **{"drift.min_positives": 5}
    )
    stream = generate(SynthConfig(n_messages=1500, seed=4, class_priors={"ham": 0.7, "spam": 0.3}))
    assert monitor.score(feedback(stream[:10])) == []  # no model yet: nothing to measure
    model.learn(feedback(stream[:1000]), holdout_fraction=0.0)
    monitor.state.refresh(force=True)
    items = feedback(stream[1000:1250])
    scored = monitor.score(items)
    assert [s.message_id for s in scored] == [i.message_id for i in items]
    monitor.record(scored)
    clock.now = 11.0
    monitor.on_idle()
    assert metrics.rolling_count._value.get() == 250
    assert metrics.rolling_auc._value.get() > 0.95
    # no threshold yet: nothing was delivered at a τ
    assert metrics.delivered_positives.labels("window")._value.get() == 0
    # a threshold far above every spam score: what follows it is all missed, and the monitor says so
    model.write_threshold(
        "spam",
        Threshold(1e9, 0.99, 1, 1, 1, 1, 1, False, None),
        0.99,
        None,
        None,
        "t",
    )
    monitor.record(monitor.score(feedback(stream[1250:])))
    clock.now = 22.0
    with capture_logs() as logs:
        monitor.on_idle()
    spam_after = sum(r["label"] == "spam" for r in stream[1250:])
    assert metrics.rolling_recall._value.get() == 0.0
    assert metrics.delivered_recall.labels("window")._value.get() == 0.0
    assert metrics.delivered_positives.labels("window")._value.get() == spam_after
    assert metrics.delivered_positives.labels("in_force")._value.get() == spam_after
    assert metrics.delivered_specificity.labels("in_force")._value.get() == 1.0
    (warning,) = [e for e in logs if e["event"] == "delivered recall below the target"]
    assert warning["missed"] == spam_after


def test_scheduled_calibration_writes_a_version_then_waits_for_the_interval(tmp_path: Path) -> None:
    model, config, monitor, _metrics, clock = monitored_store(
        tmp_path, **{"intervals.calibrate_seconds": 60.0, "decision.target_recall": 0.9}
    )
    assert config.calibration.source == "adaptive"  # the default
    stream = generate(SynthConfig(n_messages=3000, seed=6, class_priors={"ham": 0.7, "spam": 0.3}))
    model.learn(feedback(stream[:1000]), holdout_fraction=0.2)
    monitor.state.refresh(force=True)
    later = feedback(stream[1000:])
    monitor.record(monitor.score(later))  # the prequential scores the adaptive source reads
    clock.now = 61.0
    monitor.on_idle()
    first = model.latest_threshold("spam")
    assert first is not None and first.version == 1 and first.created_by == "filterd run"
    assert first.source == "adaptive" and first.level == pytest.approx(0.1)  # α = 1 − R to start
    clock.now = 122.0
    monitor.on_idle()  # the newest version is younger than the interval (wall clock): no new one
    assert threshold_in_force(model).version == 1
    # older than the interval, but nothing labelled since it was written: still no new one
    with model.store.engine.begin() as conn:
        hour_ago = datetime.now(UTC) - timedelta(hours=1)
        conn.execute(update(Prequential).values(scored_at=hour_ago - timedelta(minutes=1)))
        conn.execute(update(ThresholdRow).values(created_at=hour_ago))
    clock.now = 183.0
    monitor.on_idle()
    assert threshold_in_force(model).version == 1
    # new feedback scored since: a new version, its level moved by what the first τ missed
    monitor.record(monitor.score(later[:500]))
    clock.now = 244.0
    monitor.on_idle()
    second = threshold_in_force(model)
    assert second.version == 2 and second.source == "adaptive"
