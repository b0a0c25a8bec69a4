"""Threshold versions and the calibration job, on SQLite and PostgreSQL (`store` fixture)."""

import math
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TypedDict, Unpack

import numpy as np
import pytest
from sqlalchemy import create_engine, delete, func, select, text
from sqlalchemy.engine import make_url

from filterd.bayes.arrays import BoolArray, FloatArray, Int64Array
from filterd.bayes.features import encode
from filterd.bayes.model import ModelSpec
from filterd.evaluation import ranking
from filterd.evaluation.calibration import Threshold, recall_threshold
from filterd.evaluation.corpus import Record
from filterd.evaluation.guardrails import GuardrailError, default_min_positives
from filterd.evaluation.protocols import Corpus, evaluate
from filterd.evaluation.synth import SynthConfig, SynthRecord, generate
from filterd.jobs import calibrate
from filterd.service.config import DEFAULTS
from filterd.service.decide import NotReady, decision_scores, scoring_model
from filterd.store.drift import Scored
from filterd.store.handle import ModelStore, Store
from filterd.store.labels import LabelledTokens
from filterd.store.ledger import in_holdout
from filterd.store.schema import Threshold as ThresholdRow
from filterd.tokenize import Tokenizer
from tests.store.conftest import threshold_in_force

# The holdout, unless a test names another source (the default is calibration.source's)
calibrate_model = partial(calibrate.calibrate_model, source="holdout")
calibrate_classes = partial(calibrate.calibrate_classes, source="holdout")
T0 = datetime(2026, 1, 1, tzinfo=UTC)
HOLDOUT = 0.2
# AUC ≈ 0.96: hard enough that τ matters; 3,000 messages leave ≈ 240 spam, 360 ham held out.
CONFIG = SynthConfig(
    n_messages=3000, class_priors={"ham": 0.6, "spam": 0.4}, signal=0.2, mean_length=12, seed=1
)
RECORDS = generate(CONFIG)


def feedback(records: list[SynthRecord]) -> list[LabelledTokens]:
    return [LabelledTokens(r["id"], r["label"], r["text"].split()) for r in records]


def learn(
    model: ModelStore, records: list[SynthRecord], fraction: float = HOLDOUT, now: datetime = T0
) -> None:
    for start in range(0, len(records), 2000):
        model.learn(feedback(records[start : start + 2000]), fraction, now=now)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def learned(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ModelStore]:
    """A store that learned RECORDS, once per module and database kind (learning is slow)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('learned') / 'store.db'}"
    else:
        server = request.getfixturevalue("postgres_server")
        base, _, query = server.partition("?")
        url = f"{base.rsplit('/', 1)[0]}/learned_{uuid.uuid4().hex[:8]}?{query}"
        admin = create_engine(server, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{make_url(url).database}"'))
        admin.dispose()
    store = Store.open(url)
    store.upgrade()
    model = store.create_model("default", ModelSpec("mnb"), seed=0)
    learn(model, RECORDS)
    yield model
    store.close()


@pytest.fixture
def model(learned: ModelStore) -> Iterator[ModelStore]:
    """The learned model without threshold versions."""
    yield learned
    with learned.store.engine.begin() as conn:
        conn.execute(delete(ThresholdRow))


def count_versions(model: ModelStore) -> int:
    with model.store.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(ThresholdRow)).scalar_one()


def threshold(tau: float, recall: float = 0.99) -> Threshold:
    return Threshold(
        tau=tau,
        target_recall=0.99,
        recall=recall,
        specificity=0.9,
        precision=0.8,
        n_pos=120,
        n_neg=800,
        conservative=False,
        recall_lower_bound=0.97,
    )


class Window(TypedDict, total=False):
    """`holdout_window`'s choice of items: a time window or the last items."""

    window: timedelta
    last: int


def rescored(
    model: ModelStore, target: str = "spam", **window: Unpack[Window]
) -> tuple[FloatArray, BoolArray]:
    """The window's scores through the daemon's own path, independently of calibrate_model."""
    items = model.holdout_window(now=T0, **window)
    stats, _ = model.load()
    return decision_scores(
        scoring_model(stats, ModelSpec("mnb"), target), items.batch
    ), items.labels == target


# --- versions --------------------------------------------------------------------------------


def test_versions_increase_per_model_and_the_latest_is_per_class(store: Store) -> None:
    model = store.create_model("default", ModelSpec("mnb"))
    other = store.create_model("other", ModelSpec("mnb"))
    assert model.latest_threshold("spam") is None
    first = model.write_threshold(
        "spam", threshold(-1.0), 0.97, T0, T0 + timedelta(days=14), "test"
    )
    fraud = model.write_threshold("fraud", threshold(0.5), 0.95, None, None, "test")
    second = model.write_threshold("spam", threshold(-2.0), None, None, None, "test", forced=True)
    elsewhere = other.write_threshold("spam", threshold(3.0), 0.9, None, None, "test")
    assert [first.version, fraud.version, second.version, elsewhere.version] == [1, 2, 3, 1]
    latest = model.latest_threshold("spam")
    assert latest == second and latest.forced and latest.auc is None and latest.tau == -2.0
    assert threshold_in_force(model, "fraud").tau == 0.5
    assert [v.version for v in model.threshold_history()] == [3, 2, 1]
    again = model.threshold_history()[-1]
    assert (
        again.window_start == T0
        and again.window_end is not None
        and again.window_end.tzinfo is not None
        and again == first
    )


def test_concurrent_writers_never_share_a_version(store: Store) -> None:
    model = store.create_model("default", ModelSpec("mnb"))

    def writer(tau: float) -> None:
        for i in range(6):
            model.write_threshold("spam", threshold(tau + i), None, None, None, "test")

    with ThreadPoolExecutor(3) as pool:
        for done in [pool.submit(writer, 100 * k) for k in range(3)]:
            done.result()  # raises what a writer raised
    versions = sorted(v.version for v in model.threshold_history(limit=100))
    assert versions == list(range(1, 19))


# --- the holdout window ---------------------------------------------------------------------


def test_the_window_selects_by_feedback_time_and_last_takes_the_newest(store: Store) -> None:
    model = store.create_model("default", ModelSpec("mnb"), seed=0)
    learn(model, RECORDS[:1000], fraction=0.5, now=T0)
    learn(model, RECORDS[1000:2000], fraction=0.5, now=T0 + timedelta(days=10))
    everything = model.holdout_window()
    late = model.holdout_window(window=timedelta(days=3), now=T0 + timedelta(days=11))
    newest = model.holdout_window(last=50)
    held = [r for r in RECORDS[:2000] if in_holdout(r["id"], 0.5)]
    assert len(everything) == len(held) and set(everything.ts) == {T0, T0 + timedelta(days=10)}
    assert len(late) == sum(1 for r in RECORDS[1000:2000] if in_holdout(r["id"], 0.5))
    assert set(late.ts) == {T0 + timedelta(days=10)}
    assert (late.start, late.end) == (T0 + timedelta(days=8), T0 + timedelta(days=11))
    assert len(newest) == 50 and newest.start == newest.end == T0 + timedelta(days=10)
    assert len(model.holdout_window(window=timedelta(hours=1), now=T0 - timedelta(days=1))) == 0
    with pytest.raises(ValueError):
        model.holdout_window(window=timedelta(days=1), last=5)


# --- calibration ---------------------------------------------------------------------------


def test_calibration_reaches_the_target_on_the_holdout_and_reports_the_metrics_figures(
    model: ModelStore,
) -> None:
    report = calibrate_model(model, "spam", 0.99, now=T0)
    scores, positives = rescored(model)
    assert (
        report.version == 1
        and report.n_pos == positives.sum()
        and report.n_neg == (~positives).sum()
    )
    assert report.recall >= 0.99 and report.recall == np.mean(scores[positives] >= report.tau)
    assert report.specificity == np.mean(scores[~positives] < report.tau)
    assert report.ham_misclassification == pytest.approx(1 - report.specificity)
    assert report.auc == ranking.auc(scores, positives)
    for ours, theirs in zip(report.roc, ranking.roc_curve(scores, positives)):
        np.testing.assert_array_equal(ours, theirs)
    stored = threshold_in_force(model, "spam")
    assert (stored.version, stored.tau, stored.auc, stored.n_pos, stored.forced) == (
        1,
        report.tau,
        report.auc,
        report.n_pos,
        False,
    )
    assert (
        stored.window_start == report.window_start == T0 == stored.window_end
    )  # the whole holdout
    second = calibrate_model(model, "spam", 0.95, now=T0)
    assert second.version == 2 and second.previous == stored and second.tau >= report.tau
    assert second.previous_here is not None
    assert second.previous_here.tau == report.tau and second.previous_here.recall == report.recall


def test_the_report_equals_filterd_evaluate_on_the_same_items(store: Store) -> None:
    """Learn the train part through the store, hold out the test part; R = 1 gives spec@R=1."""
    model = store.create_model(
        "default", ModelSpec("mnb"), seed=0
    )  # evaluate hashes tokens with seed 0 as well
    records = [
        Record(
            r["id"],
            (r["label"],),
            r["text"],
            "text",
            r["order"],
            "test" if in_holdout(r["id"], HOLDOUT) else "train",
        )
        for r in RECORDS[:1500]
    ]
    tokenize = Tokenizer()
    items = [LabelledTokens(r.id, r.label, tokenize(r.message()).tokens) for r in records]
    model.learn(items, HOLDOUT, now=T0)
    report = calibrate_model(model, "spam", 1.0, min_positives=1, min_negatives=1, now=T0)
    evaluation = evaluate(Corpus.tokenize(records, tokenize), ModelSpec("mnb"), "split", "spam")
    assert report.n_pos + report.n_neg == evaluation.n_test
    assert report.auc == pytest.approx(evaluation.auc, abs=1e-12)
    assert report.specificity == pytest.approx(evaluation.spec_at_full_recall, abs=1e-12)


def test_a_dry_run_writes_nothing(model: ModelStore) -> None:
    report = calibrate_model(model, "spam", 0.99, dry_run=True, now=T0)
    assert report.version is None and count_versions(model) == 0


def test_too_few_positives_is_refused_and_force_is_recorded(model: ModelStore) -> None:
    assert default_min_positives(0.99) == 100 and default_min_positives(0.9) == 10
    assert default_min_positives(1.0) == 100
    with pytest.raises(GuardrailError, match="needs at least 100") as refused:
        calibrate_model(model, "spam", 0.99, last=150, min_negatives=10, now=T0)
    assert refused.value.reasons == ("too_few_positives",) and refused.value.forceable
    assert count_versions(model) == 0
    report = calibrate_model(model, "spam", 0.99, last=150, min_negatives=10, force=True, now=T0)
    assert report.forced and "too few positives" in report.overridden[0]
    assert threshold_in_force(model, "spam").forced
    unforced = calibrate_model(model, "spam", 0.99, force=True, now=T0)  # nothing to override
    assert not unforced.forced and not threshold_in_force(model, "spam").forced


def test_too_few_negatives_is_refused(model: ModelStore) -> None:
    with pytest.raises(GuardrailError, match="at least 100000 needed") as refused:
        calibrate_model(model, "spam", 0.99, min_negatives=100_000, now=T0)
    assert refused.value.reasons == ("too_few_negatives",)
    assert calibrate_model(model, "spam", 0.99, min_negatives=100_000, force=True, now=T0).forced


def test_an_auc_drop_is_refused(model: ModelStore) -> None:
    model.write_threshold("spam", threshold(0.0), 0.999, None, None, "test", source="holdout")
    with pytest.raises(GuardrailError, match=r"AUC fell from 0.9990 \(version 1\)") as refused:
        calibrate_model(model, "spam", 0.99, now=T0)
    assert refused.value.reasons == ("auc_drop",) and count_versions(model) == 1
    assert calibrate_model(model, "spam", 0.99, max_auc_drop=0.5, now=T0).version == 2
    assert calibrate_model(model, "spam", 0.99, max_auc_drop=0.0, now=T0).version == 3  # same AUC
    model.write_threshold("spam", threshold(0.0), 0.999, None, None, "test", source="holdout")
    assert calibrate_model(model, "spam", 0.99, force=True, now=T0).forced
    # a version of unknown source (written before sources were recorded) is not compared
    model.write_threshold("spam", threshold(0.0), 0.999, None, None, "test")
    assert not calibrate_model(model, "spam", 0.99, now=T0).forced


def test_an_unreachable_target_is_refused_even_when_forced(model: ModelStore) -> None:
    n_pos = calibrate_model(model, "spam", 0.99, dry_run=True, now=T0).n_pos
    assert n_pos < 299  # what the conservative 95 % bound needs for 0.99
    with pytest.raises(GuardrailError, match="needs at least 299") as refused:
        calibrate_model(model, "spam", 0.99, conservative=True, now=T0)
    assert refused.value.forceable
    with pytest.raises(GuardrailError, match="needs at least 299 positives") as refused:
        calibrate_model(model, "spam", 0.99, conservative=True, force=True, now=T0)
    assert refused.value.reasons == ("unreachable",) and not refused.value.forceable
    with pytest.raises(GuardrailError, match="any finite number of positives"):
        calibrate_model(model, "spam", 1.0, conservative=True, force=True, now=T0)
    with pytest.raises(GuardrailError, match="no positives"):  # an empty window
        calibrate_model(
            model,
            "spam",
            0.99,
            window=timedelta(hours=1),
            force=True,
            now=T0 - timedelta(days=1),
        )
    assert count_versions(model) == 0
    conservative = calibrate_model(model, "spam", 0.95, conservative=True, now=T0)
    assert conservative.recall_lower_bound is not None
    assert conservative.recall_lower_bound >= 0.95 and conservative.recall >= 0.95


def test_a_model_not_ready_is_an_error(model: ModelStore) -> None:
    with pytest.raises(NotReady, match="needs 100000 learned documents"):
        calibrate_model(model, "spam", 0.99, min_docs=100_000, now=T0)


def test_many_classes_get_one_threshold_each_or_none(store: Store) -> None:
    model = store.create_model("default", ModelSpec("mnb"), seed=0)
    config = SynthConfig(
        n_messages=2000, class_priors={"a": 0.5, "b": 0.3, "c": 0.2}, signal=0.2, seed=2
    )
    learn(model, generate(config))
    with pytest.raises(GuardrailError, match="refused for 'c'"):  # b: 101 positives, c: fewer
        calibrate_classes(model, None, 0.99, min_positives=95, now=T0)
    assert count_versions(model) == 0
    reports = calibrate_classes(model, None, 0.95, now=T0)
    assert [(r.target_class, r.version) for r in reports] == [("a", 1), ("b", 2), ("c", 3)]
    for r in reports:
        scores, positives = rescored(model, r.target_class)
        assert r.recall >= 0.95 and r.auc == ranking.auc(scores, positives)
        assert threshold_in_force(model, r.target_class).tau == r.tau


# --- on fresh data from the same distribution (SQLite only: no database behaviour here) -----


@pytest.fixture(scope="module")
def windows(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ModelStore, int, FloatArray]]:
    """A model learned from 2,000 messages, 30 holdout windows of 250 (≈ 100 spam each, one per
    hour), and the decision scores of 5,000 fresh messages of the same stationary stream."""
    url = f"sqlite:///{tmp_path_factory.mktemp('windows') / 'store.db'}"
    store = Store.open(url)
    store.upgrade()
    held = store.create_model("default", ModelSpec("mnb"), seed=0)
    k, size, train, fresh = 30, 250, 2000, 5000
    records = generate(
        SynthConfig(
            n_messages=train + k * size + fresh,
            class_priors={"ham": 0.6, "spam": 0.4},
            signal=0.2,
            mean_length=12,
            seed=5,
        )
    )
    held.learn(feedback(records[:train]), holdout_fraction=0.0, now=T0)
    for i in range(k):
        part = records[train + i * size : train + (i + 1) * size]
        held.learn(feedback(part), holdout_fraction=1.0, now=T0 + timedelta(hours=i + 1))
    stats, _ = held.load()
    model = scoring_model(stats, ModelSpec("mnb"), "spam")
    new = records[train + k * size :]
    scores = decision_scores(model, encode([r["text"].split() for r in new], model.hasher))
    yield held, k, scores[np.array([r["label"] == "spam" for r in new])]
    store.close()


def fresh_recalls(
    windows: tuple[ModelStore, int, FloatArray], target: float, conservative: bool
) -> tuple[FloatArray, Int64Array]:
    model, k, fresh_positive_scores = windows
    reports = [
        calibrate_model(
            model,
            "spam",
            target,
            window=timedelta(minutes=30),
            now=T0 + timedelta(hours=i + 1, minutes=1),
            conservative=conservative,
            dry_run=True,
        )
        for i in range(k)
    ]
    assert all(r.recall >= target for r in reports) and {r.n_pos + r.n_neg for r in reports} == {
        250
    }
    recalls = np.array([np.mean(fresh_positive_scores >= r.tau) for r in reports])
    return recalls, np.array([r.n_pos for r in reports])


def test_exact_mode_reaches_the_target_on_fresh_data_on_average(
    windows: tuple[ModelStore, int, FloatArray],
) -> None:
    """τ is the k-th largest of P positive scores, k = ⌈R·P⌉; a new positive scores at least
    that with probability k/(P+1), so the average falls short of R by at most ≈ 1/(P+1)."""
    target = 0.95
    recalls, n_pos = fresh_recalls(windows, target, conservative=False)
    se = recalls.std(ddof=1) / math.sqrt(len(recalls))
    expected = np.mean([math.ceil(target * p) / (p + 1) for p in n_pos])
    assert abs(recalls.mean() - expected) < 3 * se + 0.005
    assert recalls.mean() >= target - 1 / (n_pos.mean() + 1) - 3 * se


def test_conservative_mode_reaches_the_target_at_about_the_stated_confidence(
    windows: tuple[ModelStore, int, FloatArray],
) -> None:
    target = 0.95
    recalls, _ = fresh_recalls(windows, target, conservative=True)
    coverage = np.mean(recalls >= target)
    assert coverage >= 0.85  # 95 % stated; 30 windows: binomial sd ≈ 4 points
    assert recalls.mean() > target


def test_the_prequential_source_uses_the_scores_feedback_got_on_arrival(model: ModelStore) -> None:
    from filterd.store.drift import Scored
    from filterd.store.schema import Prequential

    rng = np.random.default_rng(3)
    labels = list(rng.permutation(["spam"] * 300 + ["ham"] * 700))
    scores = np.where(np.array(labels) == "spam", rng.normal(2, 1, 1000), rng.normal(-2, 1, 1000))
    model.record_scores(
        "spam",
        [Scored(f"p{i}", label, float(s), 1) for i, (label, s) in enumerate(zip(labels, scores))],
        keep=5000,
    )
    try:
        report = calibrate_model(model, "spam", 0.99, source="prequential", dry_run=True)
        positives = np.array(labels) == "spam"
        assert (report.n_pos, report.n_neg) == (300, 700)
        assert report.tau == recall_threshold(scores, positives, 0.99).tau
        assert report.auc == pytest.approx(ranking.auc(scores, positives))
        newest = calibrate_model(model, "spam", 0.9, source="prequential", last=400, dry_run=True)
        assert newest.n_pos + newest.n_neg == 400 and newest.n_pos == labels[-400:].count("spam")
        with pytest.raises(ValueError, match="source"):
            calibrate_model(model, "spam", 0.99, source="elsewhere")
    finally:
        with model.store.engine.begin() as conn:
            conn.execute(delete(Prequential))


def scored_on_arrival(
    rng: np.random.Generator, n: int, spam_share: float, prefix: str, shift: float = 0.0
) -> list[Scored]:
    """`n` prequential records: spam ~ N(2 − shift, 1), ham ~ N(−2, 1)."""
    labels = np.where(rng.random(n) < spam_share, "spam", "ham")
    scores = np.where(labels == "spam", rng.normal(2 - shift, 1, n), rng.normal(-2, 1, n))
    return [
        Scored(f"{prefix}{i}", str(lab), float(s), 1)
        for i, (lab, s) in enumerate(zip(labels, scores))
    ]


def test_the_adaptive_level_moves_with_the_misses_of_the_threshold_in_force(
    model: ModelStore,
) -> None:
    from filterd.evaluation.calibration import adapt_level
    from filterd.store.schema import Prequential

    rng = np.random.default_rng(5)
    t1, t2 = T0 + timedelta(hours=1), T0 + timedelta(hours=2)  # calibrations, scores just before
    first_window = scored_on_arrival(rng, 2000, 0.3, "a")
    model.record_scores("spam", first_window, keep=5000, now=t1 - timedelta(minutes=1))
    try:
        first = calibrate_model(
            model, "spam", 0.99, source="adaptive", now=t1, window=timedelta(days=1)
        )
        assert first.source == "adaptive" and first.level == pytest.approx(0.01)  # starts at α
        scores = np.array([s.score for s in first_window])
        positives = np.array([s.label == "spam" for s in first_window])
        # the first version, before any miss was seen, with the conservative bound
        assert first.conservative and not DEFAULTS.calibration.conservative
        cautious = recall_threshold(scores, positives, 0.99, conservative=True)
        assert first.tau == cautious.tau < recall_threshold(scores, positives, 0.99).tau
        assert first.in_force.n_pos == 0  # nothing before it
        # spam drifts toward the ham: the τ in force misses more than 1 % of what follows
        after = scored_on_arrival(rng, 2000, 0.3, "b", shift=1.5)
        model.record_scores("spam", after, keep=5000, now=t2 - timedelta(minutes=1))
        second = calibrate_model(
            model, "spam", 0.99, source="adaptive", now=t2, window=timedelta(days=1)
        )
        spam = [s.score for s in after if s.label == "spam"]
        missed = sum(s < first.tau for s in spam)
        assert (second.in_force.n_pos, second.in_force.missed) == (len(spam), missed)
        assert missed > 0.01 * len(spam)
        assert second.level == pytest.approx(adapt_level(0.01, 0.01, len(spam), missed, 0.001))
        assert not second.conservative  # from the second version on: the level alone
        assert second.level is not None and second.level < 0.01  # aims higher than R now
        assert second.recall >= 1 - second.level  # τ chosen for 1 − level on the window
        written = threshold_in_force(model, "spam")
        assert (written.version, written.source) == (second.version, "adaptive")
        assert written.level == pytest.approx(second.level)
        e = second.expected_recall
        assert e.low < e.mean < e.high and e.mean == pytest.approx(
            round(second.recall * second.n_pos) / (second.n_pos + 1)
        )
    finally:
        with model.store.engine.begin() as conn:
            conn.execute(delete(Prequential))


def test_a_first_adaptive_threshold_for_recall_1_is_the_lowest_positive_not_a_bound(
    model: ModelStore,
) -> None:
    """No finite window certifies recall 1 with the conservative bound; the exact τ, the lowest
    positive score, is already the cautious one."""
    from filterd.store.schema import Prequential

    window = scored_on_arrival(np.random.default_rng(6), 1000, 0.3, "r1")
    model.record_scores("spam", window, keep=5000, now=T0 - timedelta(minutes=1))
    try:
        first = calibrate_model(model, "spam", 1.0, source="adaptive", now=T0)
        assert (first.source, first.conservative) == ("adaptive", False)
        assert first.tau == min(s.score for s in window if s.label == "spam")
    finally:
        with model.store.engine.begin() as conn:
            conn.execute(delete(Prequential))


def test_without_scores_on_arrival_the_first_adaptive_threshold_comes_from_the_holdout(
    model: ModelStore,
) -> None:
    from filterd.store.schema import Prequential

    first = calibrate_model(model, "spam", 0.9, source="adaptive", now=T0)
    assert (first.source, first.level) == ("holdout", None)
    assert threshold_in_force(model, "spam").source == "holdout"
    # once a τ exists, a window too small is a refusal that keeps it, not a fallback
    with pytest.raises(GuardrailError, match="too few positives") as refused:
        calibrate_model(model, "spam", 0.9, source="adaptive", now=T0)
    assert refused.value.reasons == ("too_few_positives", "too_few_negatives")
    # and the AUC of scores on arrival is held to the last version of the same source only
    model.record_scores(
        "spam",
        scored_on_arrival(np.random.default_rng(1), 1000, 0.3, "c", shift=2.5),
        keep=5000,
        now=T0 + timedelta(minutes=59),
    )
    try:
        later = calibrate_model(
            model,
            "spam",
            0.9,
            source="adaptive",
            now=T0 + timedelta(hours=1),
            window=timedelta(days=1),
        )
        assert later.auc < first.auc - 0.02 and later.source == "adaptive"
    finally:
        with model.store.engine.begin() as conn:
            conn.execute(delete(Prequential))
