"""The online logistic fusion of estimators' scores (filterd.bayes.fusion)."""

import numpy as np

from filterd.bayes import fusion
from filterd.evaluation import ranking


def two_noisy_views(n=6000, seed=0):
    """Labels, and two components that each see the truth through independent noise."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.3
    signal = np.where(y, 2.0, -2.0)
    return y, np.column_stack(
        [signal + rng.normal(0, 2.5, n), 3 * (signal + rng.normal(0, 2.5, n))]
    )


def test_the_fusion_of_two_independent_views_ranks_better_than_either():
    y, scores = two_noisy_views()
    fused = fusion.online_fusion(fusion.features(scores), y)
    later = np.arange(len(y)) >= 1000  # once the weights have learned
    alone = [ranking.one_minus_auc_pct(scores[later, i], y[later]) for i in range(2)]
    together = ranking.one_minus_auc_pct(fused[later], y[later])
    assert together < 0.8 * min(alone), (together, alone)


def test_each_score_comes_before_its_own_label():
    y, scores = two_noisy_views(n=300)
    x = fusion.features(scores)
    flipped = y.copy()
    flipped[150] = not flipped[150]
    a, b = fusion.online_fusion(x, y), fusion.online_fusion(x, flipped)
    assert np.array_equal(a[:151], b[:151]) and not np.array_equal(a[151:], b[151:])


def test_window_weights_are_a_function_of_the_rows_so_a_relabel_is_exact():
    y, scores = two_noisy_views(n=500)
    x = fusion.features(scores)
    relabelled = y.copy()
    relabelled[10] = not relabelled[10]
    corrected = relabelled.copy()
    corrected[10] = y[10]  # the row corrected back: the same weights as if never wrong
    assert np.array_equal(fusion.window_weights(x, corrected), fusion.window_weights(x, y))
    assert not np.array_equal(fusion.window_weights(x, relabelled), fusion.window_weights(x, y))
    # the pass the online fusion makes ends at the window's weights
    w = fusion.window_weights(x, y)
    assert np.isclose(fusion.online_fusion(np.vstack([x, x[:1]]), np.r_[y, False])[-1], x[0] @ w)


def test_features_keep_the_order_of_each_component():
    s = np.array([-500.0, -3.0, 0.0, 0.5, 40.0, 900.0])
    g = fusion.features(s[:, None])[:, 1]
    assert np.all(np.diff(g) > 0) and g[2] == 0.0 and np.all(np.isfinite(g))
