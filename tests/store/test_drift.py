"""Prequential scores in the store and the rolling figures over them."""

import pytest

from filterd.bayes.model import ModelSpec
from filterd.evaluation.calibration import Threshold
from filterd.store.drift import Scored, drift_report, record_scores
from filterd.store.learning import UnknownModel, create_model
from filterd.store.thresholds import write_threshold


@pytest.fixture
def store(engine):
    create_model(engine, "default", ModelSpec("mnb"), seed=1)
    return engine


def scored(pairs, prefix="m"):
    return [Scored(f"{prefix}{i}", label, score, 3) for i, (label, score) in enumerate(pairs)]


def test_rolling_auc_recall_and_specificity_at_the_threshold(store):
    record_scores(store, "default", "spam", scored([("spam", 2.0), ("spam", 0.5), ("spam", -1.0),
                                                    ("ham", -2.0), ("ham", 1.0)]), keep=100)  # fmt: skip
    report = drift_report(store, "default", "spam")
    assert (report.n, report.n_pos, report.n_neg) == (5, 3, 2)
    assert report.auc == pytest.approx(4 / 6)  # 4 of the 6 spam–ham pairs in order
    assert report.tau == 0.0 and report.threshold_version is None  # no version: the Bayes decision
    assert report.recall == pytest.approx(2 / 3) and report.specificity == pytest.approx(1 / 2)
    write_threshold(store, "default", "spam", Threshold(-1.5, 0.99, 1, 0.5, 0.75, 3, 2, False, None), 0.9,
                    None, None, "test")  # fmt: skip
    moved = drift_report(store, "default", "spam")
    assert moved.tau == -1.5 and moved.threshold_version == 1 and moved.target_recall == 0.99
    assert moved.recall == 1.0 and moved.specificity == 0.5


def test_only_the_newest_are_kept_and_a_relabel_corrects_the_row(store):
    record_scores(store, "default", "spam", scored([("ham", -1.0)] * 10), keep=12)
    record_scores(store, "default", "spam", scored([("spam", 1.0)] * 5, prefix="n"), keep=12)
    report = drift_report(store, "default", "spam")
    assert (report.n, report.n_pos) == (12, 5)  # the three oldest went
    record_scores(store, "default", "spam", [Scored("n0", "ham", 1.0, 4)], keep=12)
    assert drift_report(store, "default", "spam").n_pos == 4
    assert drift_report(store, "default", "spam", window=3).n == 3


def test_no_scores_yet_and_unknown_models(store):
    empty = drift_report(store, "default", "spam")
    assert empty.n == 0 and empty.auc is None and empty.recall is None
    with pytest.raises(UnknownModel):
        drift_report(store, "other", "spam")
