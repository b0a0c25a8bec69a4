"""The online logistic fusion of estimators' scores (filterd.bayes.fusion)."""

from dataclasses import replace

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from filterd.bayes import fusion
from filterd.bayes.arrays import BoolArray, FloatArray
from filterd.bayes.features import DocBatch, encode
from filterd.bayes.model import ModelSpec
from filterd.bayes.statistics import Statistics
from filterd.bayes.vocab import view_of_token
from filterd.evaluation import ranking
from filterd.evaluation.synth import SynthRecord


def two_noisy_views(n: int = 6000, seed: int = 0) -> tuple[BoolArray, FloatArray]:
    """Labels, and two components that each see the truth through independent noise."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.3
    signal = np.where(y, 2.0, -2.0)
    return y, np.column_stack(
        [signal + rng.normal(0, 2.5, n), 3 * (signal + rng.normal(0, 2.5, n))]
    )


def test_the_fusion_of_two_independent_views_ranks_better_than_either() -> None:
    y, scores = two_noisy_views()
    fused = fusion.online_fusion(fusion.features(scores), y)
    later = np.arange(len(y)) >= 1000  # once the weights have learned
    alone = [ranking.one_minus_auc_pct(scores[later, i], y[later]) for i in range(2)]
    together = ranking.one_minus_auc_pct(fused[later], y[later])
    assert together < 0.8 * min(alone), (together, alone)


def test_each_score_comes_before_its_own_label() -> None:
    y, scores = two_noisy_views(n=300)
    x = fusion.features(scores)
    flipped = y.copy()
    flipped[150] = not flipped[150]
    a, b = fusion.online_fusion(x, y), fusion.online_fusion(x, flipped)
    assert np.array_equal(a[:151], b[:151]) and not np.array_equal(a[151:], b[151:])


def test_window_weights_are_a_function_of_the_rows_so_a_relabel_is_exact() -> None:
    y, scores = two_noisy_views(n=500)
    x = fusion.features(scores)
    relabelled = y.copy()
    relabelled[10] = not relabelled[10]
    corrected = relabelled.copy()
    corrected[10] = y[10]  # the row corrected back: the same weights as if never wrong
    assert np.array_equal(fusion.window_weights(x, corrected), fusion.window_weights(x, y))
    assert not np.array_equal(fusion.window_weights(x, relabelled), fusion.window_weights(x, y))


def test_a_minority_target_weighs_as_much_as_the_rest() -> None:
    rng = np.random.default_rng(3)
    y = rng.random(5000) < 0.1
    x = fusion.features(rng.normal(0, 1, (5000, 1)))  # a component that knows nothing
    # the bias of the weighted pass finds the classes even (σ(w_0) ≈ ½), not the 10 % of targets
    # an unweighted pass would (w_0 ≈ ln(1/9) ≈ −2.2)
    assert abs(fusion.window_weights(x, y)[0]) < 0.5
    assert fusion.window_weights(x, ~y)[0] > 1.5  # a majority target is not weighed down


def test_a_rare_target_keeps_the_ranking_of_its_best_component() -> None:
    # frauds at 0.5 % of the traffic: no step may be larger than the rate (a target's step
    # scaled up 199 times made the pass swing from one fraud to the next)
    rng = np.random.default_rng(5)
    y = rng.random(30_000) < 0.005
    good = np.where(y, 4.0, -4.0) + rng.normal(0, 4, len(y))
    scores = np.column_stack([good, rng.normal(0, 3, len(y)), np.full(len(y), -5.0)])
    z = fusion.replay_fused(scores, y)
    later = np.arange(len(y)) >= 10_000
    alone = ranking.auc(good[later], y[later])
    # (scaling the target's steps up instead ranks at 0.81 here, against 0.91 alone)
    assert ranking.auc(z[later], y[later]) > alone - 0.02, (ranking.auc(z[later], y[later]), alone)


def test_features_keep_the_order_of_each_component() -> None:
    s = np.array([-500.0, -3.0, 0.0, 0.5, 40.0, 900.0])
    g = fusion.features(s[:, None])[:, 1]
    assert np.all(np.diff(g) > 0) and g[2] == 0.0 and np.all(np.isfinite(g))


# --- the fusion as a model -------------------------------------------------------------------


def learned_stats(n: int = 600, seed: int = 2) -> tuple[Statistics, DocBatch, list[SynthRecord]]:
    """Statistics of a synthetic spam/ham stream, and fresh messages of it as a batch."""
    from filterd.bayes.features import encode
    from filterd.bayes.statistics import Statistics
    from filterd.evaluation.synth import SynthConfig, generate

    records = generate(SynthConfig(n_messages=n + 200, seed=seed))
    stats = Statistics(seed=0)
    train = records[:n]
    stats.update(
        encode([r["text"].split() for r in train], stats.hasher), [r["label"] for r in train]
    )
    fresh = records[n:]
    return stats, encode([r["text"].split() for r in fresh], stats.hasher, with_tokens=True), fresh


def test_until_weights_are_learned_the_fusion_decides_as_the_default_model() -> None:
    from filterd.bayes.model import ROBINSON_FISHER_SPEC, Model

    stats, batch, _ = learned_stats()
    fused = fusion.build_model(stats, fusion_spec(), "spam").score(batch)
    single = Model.build(stats, ROBINSON_FISHER_SPEC, "spam").score(batch)
    s, z = single.binary(), fused.binary()
    assert np.array_equal(np.sign(z), np.sign(s))  # the same Bayes decisions at τ = 0
    assert np.array_equal(np.argsort(z, kind="stable"), np.argsort(s, kind="stable"))
    assert fused.explanations(5) == single.explanations(5)  # the first component's clues
    assert isinstance(fused, fusion.FusedScores)
    assert fused.components.shape == (len(batch), fusion.COLUMNS)
    assert np.array_equal(fused.components[:, 0], s)


def test_weights_combine_the_component_scores() -> None:
    stats, batch, _ = learned_stats()
    model = fusion.build_model(stats, fusion_spec(), "spam")
    k = fusion.COLUMNS
    w = (0.5, *np.linspace(0.1, 0.5, k).tolist(), -0.2)
    weighted = fusion.with_weights(model, w).score(batch)
    assert isinstance(weighted, fusion.FusedScores)

    def by_formula(s: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        g = np.sign(s) * np.log1p(np.abs(s))
        linear = np.clip(s[:, -1], -fusion.LINEAR_CLIP, fusion.LINEAR_CLIP)
        z: npt.NDArray[np.float64] = 0.5 + g @ np.array(w[1:-1]) - 0.2 * linear
        return z

    assert np.allclose(weighted.binary(), by_formula(weighted.components))
    # the logistic component's z beyond the clip (this model's took no steps: z = 0)
    wide = np.random.default_rng(0).normal(0, 20, (50, k))
    assert np.allclose(fusion.combine(wide, w), by_formula(wide))
    assert isinstance(model, fusion.FusionModel)
    with pytest.raises(ValueError, match=f"2 weights for {k - 1} components and the logistic"):
        fusion.FusionModel(model.components, model.logistic, (1.0, 2.0))
    # weights of another set of components (an older release's): the initial ones until the
    # next calibration
    assert fusion.with_weights(model, (1.0, 2.0)).score(batch).weights == fusion.INITIAL_WEIGHTS


def test_each_component_reads_its_view_and_the_first_is_the_default_model_on_words() -> None:
    from filterd.bayes.model import ROBINSON_FISHER_SPEC, Model
    from filterd.bayes.vocab import VIEWS, views_of
    from filterd.evaluation.synth import SynthConfig, generate
    from filterd.tokenize import Tokenizer, TokenizerConfig

    records = generate(SynthConfig(n_messages=500, seed=3))
    every_view = Tokenizer(TokenizerConfig(osb=True, char_ngrams=True, char_ngram_chars=80))
    tokens = [list(every_view({"text": r["text"]}).tokens) for r in records]
    stats, words = Statistics(seed=1), Statistics(seed=1)
    stats.update(encode(tokens[:400], stats.hasher), [r["label"] for r in records[:400]])
    just_words = [[t for t in doc if view_of_token(t) == 0] for doc in tokens]
    words.update(encode(just_words[:400], words.hasher), [r["label"] for r in records[:400]])
    assert {VIEWS[v] for v in views_of(stats.vocab.keys).tolist()} == set(VIEWS)
    model = fusion.build_model(stats, fusion_spec(), "spam")
    fused = model.score(encode(tokens[400:], stats.hasher))
    default_model = Model.build(words, ROBINSON_FISHER_SPEC, "spam")
    default = default_model.score(encode(just_words[400:], words.hasher))
    assert isinstance(fused, fusion.FusedScores)
    np.testing.assert_array_equal(fused.components[:, 0], default.binary())
    assert fused.explanations(5) == default.explanations(5)
    for i, spec in enumerate(fusion.COMPONENTS):
        alone = Statistics(seed=1)
        view = VIEWS.index(str(spec.view))
        of_view = [[t for t in doc if view_of_token(t) == view] for doc in tokens]
        alone.update(encode(of_view[:400], alone.hasher), [r["label"] for r in records[:400]])
        plain = Model.build(alone, replace(spec, view=None), "spam")
        expected = plain.score(encode(of_view[400:], alone.hasher)).binary()
        # to rounding: the components of a view are summed together (filterd.bayes.view_scores)
        np.testing.assert_allclose(
            fused.components[:, i], expected, rtol=1e-9, atol=1e-12, err_msg=str(spec)
        )


def test_the_fusion_is_a_variant_without_parameters_and_needs_a_target() -> None:
    from filterd.bayes.model import ModelSpec

    assert str(fusion_spec()) == "fusion"
    with pytest.raises(ValueError, match="fusion takes no parameters"):
        ModelSpec.parse("fusion", {"s": "0.1"})
    with pytest.raises(ValueError, match="fusion takes no parameters"):
        ModelSpec.parse("fusion", selection="local:6")
    stats, _, _ = learned_stats(n=100)
    with pytest.raises(ValueError, match="two-class"):
        fusion.build_model(stats, fusion_spec())


def test_the_online_replay_refits_the_weights_as_the_daemon_would() -> None:
    y, scores = two_noisy_views(n=700)
    x = fusion.features(scores)
    window, every = 300, 50
    z = fusion.replay_fused(scores, y, refit_every=every, window=window)
    # the first message: the initial weights; while the rows fit the window, the pass over all of
    # them
    assert z[0] == pytest.approx(fusion.combine(scores[:1], fusion.initial_weights(2))[0])
    for t in (1, 120, window, window + every - 1):
        rows = slice(0, min(t, window))
        assert z[t] == pytest.approx(x[t] @ fusion.window_weights(x[rows], y[rows])), t
    # then the newest `window` rows of each class, refitted every `every` messages
    for t in (window + every, window + every + 1, 699):
        r = window + (t - window) // every * every
        newest = newest_of_each_class(y[:r], window)
        expected = x[t] @ fusion.window_weights(x[newest], y[newest])
        assert z[t] == pytest.approx(expected), t


def test_with_late_labels_the_weights_learn_from_the_scores_at_each_labels_arrival() -> None:
    """As the daemon's learner: a row is the message scored when its label came. Here the scores
    message t was decided with (its model 100 labels behind) carry the truth in the second
    component and the scores at the labels' arrival in the first: the weights follow the
    arrival rows, so the decisions rank by the first component."""
    rng = np.random.default_rng(3)
    y = rng.random(600) < 0.4
    signal, noise = np.where(y, 2.0, -2.0), rng.normal(0, 2.0, (600, 2))
    decided = np.column_stack([noise[:, 0], signal + noise[:, 1]])
    arrival = np.column_stack([signal + noise[:, 1], noise[:, 0]])
    visible = np.maximum(np.arange(600) - 100, 0)
    z = fusion.replay_fused(decided, y, visible=visible, arrival=arrival)
    later = np.arange(600) >= 300
    by_first = np.corrcoef(z[later], decided[later, 0])[0, 1]
    by_second = np.corrcoef(z[later], decided[later, 1])[0, 1]
    assert by_first > 0.9 and abs(by_second) < 0.3, (by_first, by_second)
    # without them, the rows are the decisions' own scores: the second component
    z = fusion.replay_fused(decided, y, visible=visible)
    assert np.corrcoef(z[later], decided[later, 1])[0, 1] > 0.9


def newest_of_each_class(y: BoolArray, window: int) -> list[int]:
    targets = [i for i, target in enumerate(y) if target][-window:]
    rest = [i for i, target in enumerate(y) if not target][-window:]
    return sorted(targets + rest)


@pytest.mark.skipif(fusion.c_logistic_pass is None, reason="filterd._speedups not built")
@given(
    st.integers(0, 400),
    st.integers(1, 6),
    st.floats(0.05, 0.95),
    st.floats(0.001, 0.5),
    st.floats(1.0, 20.0),
    st.integers(0, 2**32 - 1),
)
@settings(max_examples=100, deadline=None)
def test_the_c_pass_agrees_with_its_reference(
    n: int, k: int, share: float, rate: float, weight: float, seed: int
) -> None:
    assert fusion.c_logistic_pass is not None
    rng = np.random.default_rng(seed)
    x = fusion.features(rng.normal(0, 30, (n, k)))  # (n, 2 + k): a bias column first
    y = rng.random(n) < share
    passed = fusion.c_logistic_pass(x, y, rate, rate * weight, x.shape[1])
    expected = fusion.logistic_pass_python(x, y, rate, rate * weight)
    assert np.array_equal(np.frombuffer(passed), expected)  # the same sums in the same order
    # window_weights is the pass with the window's own target weight, PASSES times over the rows
    rest = rate / fusion.target_weight(y)
    reference = fusion.logistic_pass_python(x, y, rest, rate)
    assert np.array_equal(fusion.window_weights(x, y, rate, passes=1), reference)
    again = fusion.logistic_pass_python(
        np.tile(x, (fusion.PASSES, 1)), np.tile(y, fusion.PASSES), rest, rate
    )
    assert np.array_equal(fusion.window_weights(x, y, rate), again)


def test_fit_weights_reads_the_newest_rows_of_each_class_in_arrival_order() -> None:
    y, scores = two_noisy_views(n=400)
    y &= np.arange(400) % 3 == 0  # a rare target (some 40 rows): every one is read
    rows = newest_of_each_class(y, 100)
    assert set(np.flatnonzero(y)) <= set(rows) and len(rows) == np.count_nonzero(y) + 100
    w = fusion.fit_weights(scores, y, window=100)
    assert np.allclose(w, fusion.window_weights(fusion.features(scores[rows]), y[rows]))
    assert fusion.fit_weights(scores[:0], y[:0]) == fusion.initial_weights(2)


def fusion_spec() -> ModelSpec:
    from filterd.bayes.model import ModelSpec

    return ModelSpec.parse("fusion")
