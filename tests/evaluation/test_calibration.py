from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.stats import binom, norm

from filterd.bayes.arrays import BoolArray, FloatArray
from filterd.evaluation.calibration import (
    CalibrationError,
    Threshold,
    adapt_level,
    clopper_pearson_lower,
    expected_rate,
    expected_recall,
    recall_threshold,
)


def recall_at(tau: float, scores: np.ndarray, labels: np.ndarray) -> float:
    return np.count_nonzero(scores[labels] >= tau) / np.count_nonzero(labels)


def scored_items(max_size: int = 60) -> st.SearchStrategy[tuple[FloatArray, BoolArray]]:
    """Hypothesis: (scores, labels) with many ties and both classes present."""
    pair = st.tuples(st.integers(0, 8), st.booleans())
    # The first two items are forced to one positive and one negative.
    return (
        st.lists(pair, min_size=2, max_size=max_size)
        .map(lambda xs: [(xs[0][0], True), (xs[1][0], False), *xs[2:]])
        .map(lambda xs: (np.array([float(s) for s, _ in xs]), np.array([y for _, y in xs])))
    )


# --- Clopper–Pearson -------------------------------------------------------------------------


def test_clopper_pearson_known_values() -> None:
    assert clopper_pearson_lower(0, 10) == 0.0
    # k = n: the bound is (1 - confidence)^(1/n); 299 is the smallest n reaching 0.99 at 95 %
    assert clopper_pearson_lower(299, 299) >= 0.99
    assert clopper_pearson_lower(298, 298) < 0.99
    assert clopper_pearson_lower(10, 10) == pytest.approx(0.05 ** (1 / 10))
    # 5 of 10: the lower end of the two-sided 90 % exact interval, 0.2224
    assert clopper_pearson_lower(5, 10) == pytest.approx(0.2224, abs=1e-4)


@given(st.integers(1, 400).flatmap(lambda n: st.tuples(st.integers(1, n), st.just(n))))
def test_clopper_pearson_is_the_binomial_tail_inversion(kn: tuple[int, int]) -> None:
    # The bound L satisfies P(X >= k | n, L) = 1 - confidence.
    k, n = kn
    low = clopper_pearson_lower(k, n, 0.95)
    assert binom.sf(k - 1, n, low) == pytest.approx(0.05, rel=1e-6)


# --- exact mode --------------------------------------------------------------------------------


def test_exact_small_case_with_ties() -> None:
    #   score  3  2  2  1
    #   label  T  T  F  F       P = 2, N = 2
    scores = np.array([3.0, 2.0, 2.0, 1.0])
    labels = np.array([True, True, False, False])
    # R = 1/2 -> k = 1 -> tau = 3: recall 1/2, both hams kept, precision 1
    half = recall_threshold(scores, labels, 0.5)
    assert (half.tau, half.recall, half.specificity, half.precision) == (3.0, 0.5, 1.0, 1.0)
    # R = 1 -> k = 2 -> tau = 2: the ham tied at 2 is flagged -> specificity 1/2, precision 2/3
    full = recall_threshold(scores, labels, 1.0)
    assert full == Threshold(
        tau=2.0,
        target_recall=1.0,
        recall=1.0,
        specificity=0.5,
        precision=full.precision,
        n_pos=2,
        n_neg=2,
        conservative=False,
        recall_lower_bound=full.recall_lower_bound,
    )
    assert full.precision == pytest.approx(2 / 3)
    assert full.recall_lower_bound == pytest.approx(0.05**0.5)


def test_exact_ties_at_tau_count_as_target() -> None:
    # both positives tie at 2: R = 1/2 gives tau = 2, which catches both -> reported recall 1
    scores = np.array([2.0, 2.0, 2.0, 1.0])
    labels = np.array([True, True, False, False])
    th = recall_threshold(scores, labels, 0.5)
    assert (th.tau, th.recall, th.specificity) == (2.0, 1.0, 0.5)
    assert th.precision == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("target", "n_pos", "k"),
    [
        (0.99, 100, 99),
        (0.07, 100, 7),  # 0.07 * 100 = 7.000000000000001: a bare ceil would ask for 8
        (0.28, 25, 7),  # 0.28 * 25 = 7.000000000000001
        (0.56, 100, 56),  # 0.56 * 100 = 56.00000000000001
        (0.575, 100, 58),  # genuinely fractional: 57.5 -> 58
    ],
)
def test_exact_k_is_ceil_of_target_times_positives(target: float, n_pos: int, k: int) -> None:
    # positives 1..n_pos: the k-th largest is n_pos - k + 1
    scores = np.r_[np.arange(1.0, n_pos + 1.0), 0.0]
    labels = np.r_[np.ones(n_pos, bool), False]
    th = recall_threshold(scores, labels, target)
    assert th.tau == n_pos - k + 1
    assert th.recall == k / n_pos


@settings(max_examples=100, deadline=None)
@given(scored_items(), st.floats(0.01, 1.0))
def test_exact_tau_meets_target_and_is_largest(
    data: tuple[FloatArray, BoolArray], target: float
) -> None:
    scores, labels = data
    th = recall_threshold(scores, labels, target)
    assert th.recall == recall_at(th.tau, scores, labels)
    assert th.recall >= target - 1e-12
    higher = scores[labels][scores[labels] > th.tau]
    for tau in higher:
        assert recall_at(tau, scores, labels) < target
    neg = scores[~labels]
    assert th.specificity == np.count_nonzero(neg < th.tau) / neg.size


@settings(max_examples=100, deadline=None)
@given(scored_items(max_size=120), st.floats(0.01, 0.8))
def test_conservative_tau_bound_holds_is_largest_and_below_exact(
    data: tuple[FloatArray, BoolArray], target: float
) -> None:
    scores, labels = data
    n_pos = int(np.count_nonzero(labels))
    try:
        cons = recall_threshold(scores, labels, target, conservative=True)
    except CalibrationError:
        # refused only when even catching every positive cannot certify the target
        assert clopper_pearson_lower(n_pos, n_pos) < target
        assume(False)
    exact = recall_threshold(scores, labels, target)
    assert cons.tau <= exact.tau
    assert cons.recall_lower_bound is not None and cons.recall_lower_bound >= target
    # a one-line count, read where it is used
    hits: Callable[[float], int] = lambda tau: int(  # noqa: E731
        np.count_nonzero(scores[labels] >= tau)
    )
    for tau in scores[labels][scores[labels] > cons.tau]:
        assert clopper_pearson_lower(hits(tau), n_pos) < target


# --- conservative mode ---------------------------------------------------------------------------


def test_conservative_refuses_too_few_positives_and_names_the_need() -> None:
    scores = np.r_[np.linspace(0, 1, 100), -1.0]
    labels = np.r_[np.ones(100, bool), False]
    with pytest.raises(CalibrationError, match=r"at least 299 positives.*have 100"):
        recall_threshold(scores, labels, 0.99, conservative=True)


def test_conservative_target_recall_one_is_never_certifiable() -> None:
    scores = np.r_[np.arange(1000.0), -1.0]
    labels = np.r_[np.ones(1000, bool), False]
    with pytest.raises(CalibrationError, match="exact mode"):
        recall_threshold(scores, labels, 1.0, conservative=True)


def test_conservative_is_reported() -> None:
    scores = np.r_[np.arange(300.0), -1.0]
    labels = np.r_[np.ones(300, bool), False]
    th = recall_threshold(scores, labels, 0.99, conservative=True)
    # only k = 300 of 300 reaches 0.99 at n = 300 (0.05^(1/300) = 0.99006) -> lowest positive
    assert (th.tau, th.recall, th.conservative) == (0.0, 1.0, True)
    assert th.recall_lower_bound == pytest.approx(0.05 ** (1 / 300))


def test_true_recall_of_conservative_and_exact_thresholds() -> None:
    # Positives ~ N(1, 1), so the true recall of tau is norm.sf(tau, loc=1).
    target, n_pos, seeds = 0.9, 500, 200
    cons_true, exact_true = [], []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        scores = np.r_[rng.normal(1.0, 1.0, n_pos), rng.normal(-1.0, 1.0, 100)]
        labels = np.r_[np.ones(n_pos, bool), np.zeros(100, bool)]
        cons = recall_threshold(scores, labels, target, conservative=True)
        exact = recall_threshold(scores, labels, target)
        cons_true.append(norm.sf(cons.tau, loc=1.0))
        exact_true.append(norm.sf(exact.tau, loc=1.0))
    # a 95 % bound may miss in about 5 % of windows; allow sampling slack
    assert np.mean(np.array(cons_true) < target) <= 0.10
    # the exact threshold is an order statistic: right on average, wrong about half the time
    assert abs(np.mean(exact_true) - target) < 0.01
    assert np.mean(np.array(exact_true) < target) > 0.3


# --- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scores", "labels", "target", "message"),
    [
        ([0.1, 0.2], [False, False], 0.9, "no positives"),
        ([0.1, 0.2], [True, True], 0.9, "no negatives.*specificity"),
        ([0.1, 0.2], [True, False], 0.0, r"target recall must be in \(0, 1\]"),
        ([0.1, 0.2], [True, False], 1.5, r"target recall must be in \(0, 1\]"),
        ([0.1, np.nan], [True, False], 0.9, "NaN"),
        ([0.1, 0.2, 0.3], [True, False], 0.9, "equal length"),
    ],
)
def test_recall_threshold_errors(
    scores: list[float], labels: list[bool], target: float, message: str
) -> None:
    with pytest.raises(CalibrationError, match=message):
        recall_threshold(np.array(scores), np.array(labels), target)


def test_calibration_error_is_a_value_error() -> None:
    assert issubclass(CalibrationError, ValueError)


# --- what a τ delivers on the traffic that follows -----------------------------------------------


def test_expected_recall_is_the_coverage_of_new_positives() -> None:
    """τ = the k-th largest of P positive scores (N(0, 1)): the true recall 1 − Φ(τ) averages
    k/(P + 1) over many windows, and the 90 % range holds it in about 90 % of them."""
    rng = np.random.default_rng(0)
    p, k, trials = 200, 198, 4000
    e = expected_recall(k, p, confidence=0.9)
    true = np.array([norm.sf(np.sort(rng.normal(size=p))[::-1][k - 1]) for _ in range(trials)])
    assert true.mean() == pytest.approx(k / (p + 1), abs=0.001) and e.mean == k / (p + 1)
    inside = np.mean((e.low <= true) & (true <= e.high))
    assert inside == pytest.approx(0.9, abs=0.02)


def test_expected_rate_is_a_jeffreys_interval() -> None:
    e = expected_rate(0, 100)
    assert (e.mean, e.low) == (0.0, 0.0) and 0 < e.high < 0.03
    e = expected_rate(100, 100)
    assert e.high == 1.0 and 0.97 < e.low < 1.0
    with pytest.raises(ValueError):
        expected_rate(5, 4)


def run_level(
    shift_per_round: float,
    rounds: int,
    spam_per_round: int,
    *,
    adapt: bool,
    max_gain: float = 0.5,
    seed: int = 0,
) -> tuple[float, list[float]]:
    """Spam scores N(μ_t, 1) with μ_t falling by `shift_per_round` (new campaigns the model
    has not learned), calibrated each round on the last 2,000 spam scores for the recall
    1 − level, the level moved by the round's misses (or held at α). (miss rate, levels)"""
    rng = np.random.default_rng(seed)
    alpha = 0.01
    level, window, levels = alpha, list(rng.normal(size=2000)), []
    missed = seen = 0
    ham = rng.normal(-4, 1, 500)
    for t in range(rounds):
        scores, labels = np.r_[window[-2000:], ham], np.r_[np.ones(2000, bool), np.zeros(500, bool)]
        tau = recall_threshold(scores, labels, 1 - level).tau
        spam = rng.normal(-shift_per_round * (t + 1), 1, spam_per_round)
        m = int(np.count_nonzero(spam < tau))
        missed, seen = missed + m, seen + spam_per_round
        if adapt:
            level = adapt_level(level, alpha, spam_per_round, m, 0.1 * alpha, max_gain=max_gain)
        levels.append(level)
        window += spam.tolist()
    return missed / seen, levels


def test_the_adaptive_level_keeps_the_miss_rate_under_drift_and_a_fixed_level_does_not() -> None:
    """The promise at R = 0.99 is a miss rate of at most 1 − R + 0.005 over the stream: the
    window always lags a drifting stream, which the level corrects and a level held at α not."""
    adaptive, _ = run_level(0.04, 300, 200, adapt=True)
    fixed, _ = run_level(0.04, 300, 200, adapt=False)
    assert adaptive <= 0.015, adaptive
    assert fixed > 0.015, fixed  # the same check fails for a level held at α


def test_many_spam_between_calibrations_do_not_make_the_level_swing() -> None:
    """5,000 spam per calibration: an uncapped batched step (gain γ·n = 5) jumps from clip bound
    to clip bound; the capped one settles near α."""
    capped, levels = run_level(0.0, 60, 5000, adapt=True)
    assert all(0.006 < x < 0.015 for x in levels[10:]), levels
    assert capped == pytest.approx(0.01, abs=0.002)
    _, swinging = run_level(0.0, 60, 5000, adapt=True, max_gain=float("inf"))
    assert {0.005, 0.02} <= {round(x, 6) for x in swinging[10:]}, swinging
