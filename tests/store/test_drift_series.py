"""The drift figures per group of consecutive prequential rows, on a real store (SQLite and
PostgreSQL, tests/store/conftest.py)."""

from datetime import UTC, datetime, timedelta

import pytest

from filterd.bayes.model import ModelSpec
from filterd.evaluation.calibration import Threshold
from filterd.store.drift import DriftPoint, Scored
from filterd.store.handle import ModelStore, Store

T0 = datetime(2026, 1, 1, tzinfo=UTC)
GOOD = [("spam", 2.0), ("spam", 1.0), ("ham", -1.0), ("ham", -2.0)]  # AUC 1
# spam −2 < ham 1.5, ties ham −2; spam 1 < ham 1.5, beats ham −2: AUC (0 + ½ + 0 + 1) / 4
WORSE = [("spam", -2.0), ("spam", 1.0), ("ham", 1.5), ("ham", -2.0)]


@pytest.fixture
def model(store: Store) -> ModelStore:
    return store.create_model("default", ModelSpec("mnb"), seed=1)


def feed(model: ModelStore, pairs: list[tuple[str, float]], prefix: str, at: datetime) -> None:
    scored = [Scored(f"{prefix}{i}", label, score, 3) for i, (label, score) in enumerate(pairs)]
    model.record_scores("spam", scored, keep=1000, now=at)


def version(model: ModelStore, tau: float, at: datetime) -> None:
    model.write_threshold(
        "spam",
        Threshold(tau, 0.99, 1, 1, 1, 1, 1, False, None),
        0.9,
        None,
        None,
        "test",
        now=at,
    )


def test_a_group_where_the_model_got_worse_shows_a_lower_auc(model: ModelStore) -> None:
    feed(model, GOOD, "a", T0)
    feed(model, GOOD, "b", T0 + timedelta(minutes=1))
    feed(model, WORSE, "c", T0 + timedelta(minutes=2))
    points = model.drift_series("spam", buckets=3)
    assert [p.n for p in points] == [4, 4, 4]
    assert [p.auc for p in points] == [1.0, 1.0, pytest.approx(0.375)]
    # each group ends at its last row: the batch's time plus one microsecond per row
    assert [p.end for p in points] == [T0 + timedelta(minutes=m, microseconds=3) for m in range(3)]
    assert all(isinstance(p, DriftPoint) for p in points)


def test_each_row_is_judged_at_the_threshold_in_force_when_it_was_scored(model: ModelStore) -> None:
    feed(model, GOOD, "a", T0)  # before any τ: not judged
    version(model, 0.0, T0 + timedelta(seconds=30))
    feed(model, GOOD, "b", T0 + timedelta(minutes=1))
    version(model, -3.0, T0 + timedelta(seconds=90))
    feed(model, WORSE, "c", T0 + timedelta(minutes=2))
    a, b, c = model.drift_series("spam", buckets=3)
    assert (a.recall, a.specificity) == (None, None)
    # at τ = 0 every row of b is right; today's τ = −3 would flag both its hams
    assert (b.recall, b.specificity) == (1.0, 1.0)
    # at τ = −3: both spams caught, both hams (1.5 and −2) flagged
    assert (c.recall, c.specificity) == (1.0, 0.0)
    # one group: the window's figures as drift_report gives them
    (whole,) = model.drift_series("spam", buckets=1)
    report = model.drift_report("spam")
    assert whole.n == report.n == 12 and whole.auc == pytest.approx(report.auc)
    assert whole.recall == pytest.approx(report.delivered.recall)
    assert whole.specificity == pytest.approx(report.delivered.specificity)
    assert whole.end == report.last


def test_the_newest_window_in_nearly_equal_groups(model: ModelStore) -> None:
    feed(model, GOOD, "a", T0)
    feed(model, GOOD, "b", T0 + timedelta(minutes=1))
    feed(model, WORSE, "c", T0 + timedelta(minutes=2))
    # newest 6: b2 b3 c0 | c1 c2 c3
    first, second = model.drift_series("spam", window=6, buckets=2)
    assert (first.n, second.n) == (3, 3)
    assert first.end == T0 + timedelta(minutes=2)  # c0
    assert first.auc == pytest.approx(0.25)  # spam −2 (c0) below ham −1 (b2), tied with −2 (b3)
    assert second.auc == pytest.approx(0.5)  # spam 1 against ham 1.5 and −2
    assert [p.n for p in model.drift_series("spam", buckets=5)] == [3, 3, 2, 2, 2]
    singles = model.drift_series("spam", buckets=50)  # fewer rows than groups
    assert len(singles) == 12 and all(p.n == 1 and p.auc is None for p in singles)


def test_no_rows_and_bad_arguments(model: ModelStore) -> None:
    assert model.drift_series("spam") == []
    with pytest.raises(ValueError, match="buckets"):
        model.drift_series("spam", buckets=0)
