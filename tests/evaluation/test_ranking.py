import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from filterd.bayes.arrays import BoolArray, FloatArray
from filterd.evaluation.ranking import (
    accuracy,
    auc,
    average_precision,
    average_ranks,
    binary_summary,
    lam,
    lam_pct,
    macro_f1,
    one_minus_auc_pct,
    recall_at_fpr,
    roc_curve,
    specificity_at_recall,
)

# A small case used by several tests: P = 3 positives, N = 2 negatives, one tie across classes.
#   score  0.9  0.8  0.8  0.5  0.3
#   label   T    T    F    T    F
SCORES = np.array([0.9, 0.8, 0.8, 0.5, 0.3])
LABELS = np.array([True, True, False, True, False])


def scored_items(max_size: int = 40) -> st.SearchStrategy[tuple[FloatArray, BoolArray]]:
    """Hypothesis: (scores, labels) with many ties and both classes present."""
    pair = st.tuples(st.integers(0, 6), st.booleans())
    # The first two items are forced to one positive and one negative.
    return (
        st.lists(pair, min_size=2, max_size=max_size)
        .map(lambda xs: [(xs[0][0], True), (xs[1][0], False), *xs[2:]])
        .map(lambda xs: (np.array([s / 2 for s, _ in xs]), np.array([y for _, y in xs])))
    )


def brute_force_auc(scores: FloatArray, labels: BoolArray) -> float:
    pos, neg = scores[labels], scores[~labels]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg))
    return wins / (pos.size * neg.size)


# --- ROC and AUC -----------------------------------------------------------------------


def test_roc_curve_small_case() -> None:
    # tau = +inf: nothing flagged                    -> (0, 0)
    # tau = 0.9: tp = 1, fp = 0                      -> (0, 1/3)
    # tau = 0.8: tp = 2, fp = 1 (the tie enters whole) -> (1/2, 2/3)
    # tau = 0.5: tp = 3, fp = 1                      -> (1/2, 1)
    # tau = 0.3: tp = 3, fp = 2                      -> (1, 1)
    fpr, tpr, thr = roc_curve(SCORES, LABELS)
    np.testing.assert_array_equal(thr, [np.inf, 0.9, 0.8, 0.5, 0.3])
    np.testing.assert_allclose(fpr, [0, 0, 0.5, 0.5, 1])
    np.testing.assert_allclose(tpr, [0, 1 / 3, 2 / 3, 1, 1])


def test_auc_small_case_with_tie() -> None:
    # pos x neg pairs: (0.9,0.8)=1 (0.9,0.3)=1 (0.8,0.8)=1/2 (0.8,0.3)=1 (0.5,0.8)=0 (0.5,0.3)=1
    # -> 4.5 / 6 = 0.75
    assert auc(SCORES, LABELS) == pytest.approx(0.75)
    assert one_minus_auc_pct(SCORES, LABELS) == pytest.approx(25.0)


def test_auc_all_scores_equal_is_one_half() -> None:
    assert auc(np.zeros(7), np.array([1, 0, 1, 0, 0, 1, 0], dtype=bool)) == 0.5


def test_auc_perfect_and_reversed() -> None:
    labels = np.array([True, True, False, False])
    assert auc(np.array([4.0, 3.0, 2.0, 1.0]), labels) == 1.0
    assert auc(np.array([1.0, 2.0, 3.0, 4.0]), labels) == 0.0


def test_auc_needs_both_classes() -> None:
    with pytest.raises(ValueError, match="both classes"):
        auc(np.array([0.1, 0.2]), np.array([True, True]))


def test_binary_functions_reject_bad_input() -> None:
    with pytest.raises(ValueError, match="NaN"):
        auc(np.array([0.1, np.nan]), np.array([True, False]))
    with pytest.raises(ValueError, match="length"):
        auc(np.array([0.1, 0.2, 0.3]), np.array([True, False]))


@settings(max_examples=100, deadline=None)
@given(scored_items())
def test_auc_matches_pairwise_count(data: tuple[FloatArray, BoolArray]) -> None:
    scores, labels = data
    assert auc(scores, labels) == pytest.approx(brute_force_auc(scores, labels))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from([-1.0, 0.0, 0.25, 0.5, 3.0]) | st.floats(-1e6, 1e6), min_size=1, max_size=60
    )
)
def test_average_ranks_are_scipys_rankdata(values: list[float]) -> None:
    from scipy.stats import rankdata

    array = np.array(values)
    assert average_ranks(array).tolist() == rankdata(array).tolist()


@settings(max_examples=100, deadline=None)
@given(scored_items())
def test_roc_monotone_ends_at_one_one_and_area_is_auc(data: tuple[FloatArray, BoolArray]) -> None:
    scores, labels = data
    fpr, tpr, thr = roc_curve(scores, labels)
    assert (fpr[0], tpr[0], thr[0]) == (0.0, 0.0, np.inf)
    assert (fpr[-1], tpr[-1]) == (1.0, 1.0)
    assert np.all(np.diff(thr) < 0)
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)
    assert thr.size == np.unique(scores).size + 1
    # Trapezoids: a tie between classes is a diagonal segment worth 1/2 per pair.
    area = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))
    assert area == pytest.approx(auc(scores, labels))


# --- operating points ------------------------------------------------------------------


def test_specificity_at_recall_small_case() -> None:
    # recall 1   -> tau = lowest positive 0.5; negatives below: {0.3}        -> 1/2
    # recall 2/3 -> tau = 2nd largest positive 0.8; negatives below: {0.3}   -> 1/2
    # recall 1/3 -> tau = 0.9; negatives below: {0.8, 0.3}                    -> 1
    assert specificity_at_recall(SCORES, LABELS) == 0.5
    assert specificity_at_recall(SCORES, LABELS, 2 / 3) == 0.5
    assert specificity_at_recall(SCORES, LABELS, 0.34) == 0.5  # needs 2 of 3 positives
    assert specificity_at_recall(SCORES, LABELS, 1 / 3) == 1.0


def test_specificity_at_recall_float_noise() -> None:
    # positives 1..100, one negative at 1.5
    scores = np.r_[np.arange(1.0, 101.0), 1.5]
    labels = np.r_[np.ones(100, bool), False]
    assert specificity_at_recall(scores, labels, 0.99) == 1.0  # 99 of 100: tau = 2 keeps the ham
    assert specificity_at_recall(scores, labels, 1.0) == 0.0  # tau = 1 flags it
    # 0.07 * 100 = 7.000000000000001 in floats: recall 0.07 needs 7 positives (tau = 94), not 8
    # (tau = 93); put the ham between the two to tell them apart
    scores[-1] = 93.5
    assert specificity_at_recall(scores, labels, 0.07) == 1.0


def test_recall_at_fpr_small_case() -> None:
    # FPR <= 0   : tau must exceed the top negative 0.8 -> positives caught {0.9}   -> 1/3
    # FPR <= 1/2 : tau may flag one negative (0.8), not 0.3 -> {0.9, 0.8, 0.5}      -> 1
    assert recall_at_fpr(SCORES, LABELS, 0.0) == pytest.approx(1 / 3)
    assert recall_at_fpr(SCORES, LABELS, 0.001) == pytest.approx(1 / 3)
    assert recall_at_fpr(SCORES, LABELS, 0.5) == 1.0
    assert recall_at_fpr(SCORES, LABELS, 0.49) == pytest.approx(1 / 3)


@settings(max_examples=100, deadline=None)
@given(scored_items(), st.floats(0.0, 1.0))
def test_recall_at_fpr_is_best_roc_point_within_budget(
    data: tuple[FloatArray, BoolArray], max_fpr: float
) -> None:
    scores, labels = data
    fpr, tpr, _ = roc_curve(scores, labels)
    n_neg = np.count_nonzero(~labels)
    allowed = np.round(fpr * n_neg) <= max_fpr * n_neg + 1e-9
    assert recall_at_fpr(scores, labels, max_fpr) == pytest.approx(tpr[allowed].max())


# --- TREC lam ----------------------------------------------------------------------------


def test_lam_known_rates() -> None:
    assert lam(0.1, 0.1) == pytest.approx(0.1)  # equal rates: lam is that rate
    assert lam(0.2, 0.5) == pytest.approx(1 / 3)  # odds 1/4 and 1 -> geometric mean 1/2 -> 1/3
    assert lam(0.1, 0.9) == pytest.approx(0.5)  # logits cancel
    with pytest.raises(ValueError):
        lam(0.0, 0.1)


def test_lam_pct_uses_the_half_count_correction() -> None:
    # one spam, one ham, both right at tau = 0: sm = hm = 0.5 / 2 = 0.25 -> lam% = 25
    assert lam_pct(np.array([1.0, -1.0]), np.array([True, False]), 0.0) == pytest.approx(25.0)
    # both wrong: sm = hm = 1.5 / 2 = 0.75 -> 75
    assert lam_pct(np.array([-1.0, 1.0]), np.array([True, False]), 0.0) == pytest.approx(75.0)
    # nine of each, perfectly separated: 0.5 / 10 = 0.05 each -> 5
    scores = np.r_[np.ones(9), -np.ones(9)]
    labels = np.r_[np.ones(9, bool), np.zeros(9, bool)]
    assert lam_pct(scores, labels, 0.0) == pytest.approx(5.0)


def test_lam_pct_tie_at_tau_is_target() -> None:
    # a ham scored exactly tau is flagged: FP = 1 of 1 -> hm = 1.5 / 2; the spam is kept right
    # -> sm = 0.5 / 2; odds 3 and 1/3 -> lam = 1/2
    assert lam_pct(np.array([2.0, 0.0]), np.array([True, False]), 0.0) == pytest.approx(50.0)


# --- multi-class ---------------------------------------------------------------------------


def test_accuracy() -> None:
    assert accuracy([0, 1, 2, 2], [0, 2, 2, 2]) == 0.75
    assert accuracy(["spam", "ham"], ["spam", "spam"]) == 0.5
    with pytest.raises(ValueError):
        accuracy([0, 1], [0])


# y_true  a a a b b c
# y_pred  a a b b c c
# a: TP 2, FP 0, FN 1 -> 4/5 ; b: TP 1, FP 1, FN 1 -> 1/2 ; c: TP 1, FP 1, FN 0 -> 2/3
Y_TRUE = ["a", "a", "a", "b", "b", "c"]
Y_PRED = ["a", "a", "b", "b", "c", "c"]


def test_macro_f1_three_classes() -> None:
    assert macro_f1(Y_TRUE, Y_PRED) == pytest.approx((4 / 5 + 1 / 2 + 2 / 3) / 3)


def test_macro_f1_integer_labels() -> None:
    to_int = {"a": 0, "b": 1, "c": 2}
    y_true = np.array([to_int[c] for c in Y_TRUE])
    y_pred = np.array([to_int[c] for c in Y_PRED])
    assert macro_f1(y_true, y_pred) == pytest.approx((4 / 5 + 1 / 2 + 2 / 3) / 3)


def test_macro_f1_explicit_labels() -> None:
    # a listed class that never occurs counts F1 = 0
    assert macro_f1(Y_TRUE, Y_PRED, labels=["a", "b", "c", "d"]) == pytest.approx(
        (4 / 5 + 1 / 2 + 2 / 3 + 0) / 4
    )
    # classes left out of labels are left out of the mean
    assert macro_f1(Y_TRUE, Y_PRED, labels=["a", "b"]) == pytest.approx((4 / 5 + 1 / 2) / 2)


def test_macro_f1_class_only_predicted_counts_zero_by_default() -> None:
    # "x" is predicted once but never true: F1_x = 0, F1_a = 2*1/(2*1+0+1) = 2/3
    assert macro_f1(["a", "a"], ["a", "x"]) == pytest.approx((2 / 3 + 0) / 2)


# --- summary -------------------------------------------------------------------------------


def test_binary_summary_small_case() -> None:
    summary = binary_summary(SCORES, LABELS, tau=0.8)
    assert summary["auc"] == pytest.approx(0.75)
    assert summary["one_minus_auc_pct"] == pytest.approx(25.0)
    assert summary["spec_at_full_recall"] == 0.5
    assert summary["recall_at_fpr_0_1pct"] == pytest.approx(1 / 3)
    # tau 0.8: FN = 1 (0.5) of 3, FP = 1 (0.8) of 2 -> sm = 1.5/4, hm = 1.5/3
    assert summary["lam_pct"] == pytest.approx(100 * lam(1.5 / 4, 1.5 / 3))
    assert (summary["n_pos"], summary["n_neg"], summary["tau"]) == (3, 2, 0.8)


def test_binary_summary_default_tau_is_zero() -> None:
    scores = np.array([2.0, 0.5, -0.5, -3.0])
    labels = np.array([True, False, True, False])
    assert binary_summary(scores, labels)["lam_pct"] == lam_pct(scores, labels, 0.0)


def _precision_recall_area(scores: list[float], labels: list[bool]) -> float:
    """Average precision by its definition: one threshold per distinct score, from the top."""
    positives = sum(labels)
    area, recall_before = 0.0, 0.0
    for tau in sorted(set(scores), reverse=True):
        flagged = [y for s, y in zip(scores, labels) if s >= tau]
        recall = sum(flagged) / positives
        area += (recall - recall_before) * sum(flagged) / len(flagged)
        recall_before = recall
    return area


@given(st.lists(st.tuples(st.integers(0, 6), st.booleans()), min_size=1, max_size=40))
def test_average_precision_is_the_area_under_the_precision_recall_steps(
    items: list[tuple[int, bool]],
) -> None:
    scores, labels = [float(s) for s, _ in items], [y for _, y in items]
    if all(labels) or not any(labels):
        with pytest.raises(ValueError, match="need both classes"):
            average_precision(scores, labels)
        return
    assert average_precision(scores, labels) == pytest.approx(
        _precision_recall_area(scores, labels)
    )
    assert average_precision([1.0] * len(items), labels) == pytest.approx(sum(labels) / len(labels))
