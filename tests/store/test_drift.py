"""Prequential scores in the store and the rolling figures over them."""

from datetime import UTC, datetime, timedelta

import pytest

from filterd.bayes.model import ModelSpec
from filterd.evaluation.calibration import Threshold
from filterd.store.drift import Scored
from filterd.store.handle import ModelStore, Store


@pytest.fixture
def model(store: Store) -> ModelStore:
    return store.create_model("default", ModelSpec("mnb"), seed=1)


def scored(pairs: list[tuple[str, float]], prefix: str = "m") -> list[Scored]:
    return [Scored(f"{prefix}{i}", label, score, 3) for i, (label, score) in enumerate(pairs)]


def test_rolling_auc_recall_and_specificity_at_the_threshold(model: ModelStore) -> None:
    model.record_scores(
        "spam",
        scored([("spam", 2.0), ("spam", 0.5), ("spam", -1.0), ("ham", -2.0), ("ham", 1.0)]),
        keep=100,
    )
    report = model.drift_report("spam")
    assert (report.n, report.n_pos, report.n_neg) == (5, 3, 2)
    assert report.auc == pytest.approx(4 / 6)  # 4 of the 6 spam–ham pairs in order
    assert report.tau == 0.0 and report.threshold_version is None  # no version: the Bayes decision
    assert report.recall == pytest.approx(2 / 3) and report.specificity == pytest.approx(1 / 2)
    model.write_threshold(
        "spam",
        Threshold(-1.5, 0.99, 1, 0.5, 0.75, 3, 2, False, None),
        0.9,
        None,
        None,
        "test",
    )
    moved = model.drift_report("spam")
    assert moved.tau == -1.5 and moved.threshold_version == 1 and moved.target_recall == 0.99
    assert moved.recall == 1.0 and moved.specificity == 0.5


def test_only_the_newest_are_kept_and_a_relabel_corrects_the_row(model: ModelStore) -> None:
    model.record_scores("spam", scored([("ham", -1.0)] * 10), keep=12)
    model.record_scores("spam", scored([("spam", 1.0)] * 5, prefix="n"), keep=12)
    report = model.drift_report("spam")
    assert (report.n, report.n_pos) == (12, 5)  # the three oldest went
    model.record_scores("spam", [Scored("n0", "ham", 1.0, 4)], keep=12)
    assert model.drift_report("spam").n_pos == 4
    assert model.drift_report("spam", window=3).n == 3


def test_no_scores_yet(model: ModelStore) -> None:
    empty = model.drift_report("spam")
    assert empty.n == 0 and empty.auc is None and empty.recall is None


def test_each_record_is_judged_at_the_threshold_in_force_when_it_was_scored(
    model: ModelStore,
) -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)

    def version(tau: float, at: datetime) -> None:
        model.write_threshold(
            "spam",
            Threshold(tau, 0.99, 1, 1, 1, 1, 1, False, None),
            0.9,
            None,
            None,
            "test",
            now=at,
        )

    def feed(pairs: list[tuple[str, float]], prefix: str, at: datetime) -> None:
        model.record_scores("spam", scored(pairs, prefix), keep=100, now=at)

    feed([("spam", -5.0), ("ham", 3.0)], "before", t0)  # before any τ: not judged
    version(0.0, t0 + timedelta(minutes=1))
    feed([("spam", 0.5), ("spam", -0.5), ("ham", -1.0)], "a", t0 + timedelta(minutes=2))
    version(-1.0, t0 + timedelta(minutes=3))
    feed([("spam", -0.5), ("ham", -0.5), ("ham", -2.0)], "b", t0 + timedelta(minutes=4))
    report = model.drift_report("spam")
    # at τ = 0: spam 0.5 caught, −0.5 missed, ham −1 passed; at τ = −1: spam −0.5 caught, ham
    # −0.5 flagged, ham −2 passed
    d = report.delivered
    assert (d.n_pos, d.caught, d.n_neg, d.passed) == (3, 2, 3, 2)
    assert d.recall == pytest.approx(2 / 3) and d.missed == 1
    f = report.in_force
    assert (f.n_pos, f.caught, f.n_neg, f.passed) == (1, 1, 2, 1)
    assert report.in_force_since == t0 + timedelta(minutes=3)
    # in hindsight, today's τ = −1 on every row: only the −5 spam is missed
    assert report.recall == pytest.approx(3 / 4)
    since = model.delivered_since("spam", t0 + timedelta(minutes=1), 0.0)
    assert (since.n_pos, since.caught, since.n_neg, since.passed) == (3, 1, 3, 3)  # all at τ = 0
    assert report.as_dict()["delivered"]["recall"] == pytest.approx(2 / 3)
