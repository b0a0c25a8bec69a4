"""The drift figures per group of consecutive prequential rows, on a real store (SQLite and
PostgreSQL, tests/store/conftest.py)."""

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine

from filterd.bayes.model import ModelSpec
from filterd.evaluation.calibration import Threshold
from filterd.store.drift import DriftPoint, Scored, drift_report, drift_series, record_scores
from filterd.store.learning import UnknownModel, create_model
from filterd.store.thresholds import write_threshold

T0 = datetime(2026, 1, 1, tzinfo=UTC)
GOOD = [("spam", 2.0), ("spam", 1.0), ("ham", -1.0), ("ham", -2.0)]  # AUC 1
# spam −2 < ham 1.5, ties ham −2; spam 1 < ham 1.5, beats ham −2: AUC (0 + ½ + 0 + 1) / 4
WORSE = [("spam", -2.0), ("spam", 1.0), ("ham", 1.5), ("ham", -2.0)]


@pytest.fixture
def store(engine: Engine) -> Engine:
    create_model(engine, "default", ModelSpec("mnb"), seed=1)
    return engine


def feed(store: Engine, pairs: list[tuple[str, float]], prefix: str, at: datetime) -> None:
    scored = [Scored(f"{prefix}{i}", label, score, 3) for i, (label, score) in enumerate(pairs)]
    record_scores(store, "default", "spam", scored, keep=1000, now=at)


def version(store: Engine, tau: float, at: datetime) -> None:
    write_threshold(
        store,
        "default",
        "spam",
        Threshold(tau, 0.99, 1, 1, 1, 1, 1, False, None),
        0.9,
        None,
        None,
        "test",
        now=at,
    )


def test_a_group_where_the_model_got_worse_shows_a_lower_auc(store: Engine) -> None:
    feed(store, GOOD, "a", T0)
    feed(store, GOOD, "b", T0 + timedelta(minutes=1))
    feed(store, WORSE, "c", T0 + timedelta(minutes=2))
    points = drift_series(store, "default", "spam", buckets=3)
    assert [p.n for p in points] == [4, 4, 4]
    assert [p.auc for p in points] == [1.0, 1.0, pytest.approx(0.375)]
    # each group ends at its last row: the batch's time plus one microsecond per row
    assert [p.end for p in points] == [T0 + timedelta(minutes=m, microseconds=3) for m in range(3)]
    assert all(isinstance(p, DriftPoint) for p in points)


def test_each_row_is_judged_at_the_threshold_in_force_when_it_was_scored(store: Engine) -> None:
    feed(store, GOOD, "a", T0)  # before any τ: not judged
    version(store, 0.0, T0 + timedelta(seconds=30))
    feed(store, GOOD, "b", T0 + timedelta(minutes=1))
    version(store, -3.0, T0 + timedelta(seconds=90))
    feed(store, WORSE, "c", T0 + timedelta(minutes=2))
    a, b, c = drift_series(store, "default", "spam", buckets=3)
    assert (a.recall, a.specificity) == (None, None)
    # at τ = 0 every row of b is right; today's τ = −3 would flag both its hams
    assert (b.recall, b.specificity) == (1.0, 1.0)
    # at τ = −3: both spams caught, both hams (1.5 and −2) flagged
    assert (c.recall, c.specificity) == (1.0, 0.0)
    # one group: the window's figures as drift_report gives them
    (whole,) = drift_series(store, "default", "spam", buckets=1)
    report = drift_report(store, "default", "spam")
    assert whole.n == report.n == 12 and whole.auc == pytest.approx(report.auc)
    assert whole.recall == pytest.approx(report.delivered.recall)
    assert whole.specificity == pytest.approx(report.delivered.specificity)
    assert whole.end == report.last


def test_the_newest_window_in_nearly_equal_groups(store: Engine) -> None:
    feed(store, GOOD, "a", T0)
    feed(store, GOOD, "b", T0 + timedelta(minutes=1))
    feed(store, WORSE, "c", T0 + timedelta(minutes=2))
    # newest 6: b2 b3 c0 | c1 c2 c3
    first, second = drift_series(store, "default", "spam", window=6, buckets=2)
    assert (first.n, second.n) == (3, 3)
    assert first.end == T0 + timedelta(minutes=2)  # c0
    assert first.auc == pytest.approx(0.25)  # spam −2 (c0) below ham −1 (b2), tied with −2 (b3)
    assert second.auc == pytest.approx(0.5)  # spam 1 against ham 1.5 and −2
    assert [p.n for p in drift_series(store, "default", "spam", buckets=5)] == [3, 3, 2, 2, 2]
    singles = drift_series(store, "default", "spam", buckets=50)  # fewer rows than groups
    assert len(singles) == 12 and all(p.n == 1 and p.auc is None for p in singles)


def test_no_rows_unknown_models_and_bad_arguments(store: Engine) -> None:
    assert drift_series(store, "default", "spam") == []
    with pytest.raises(UnknownModel):
        drift_series(store, "other", "spam")
    with pytest.raises(ValueError, match="buckets"):
        drift_series(store, "default", "spam", buckets=0)
