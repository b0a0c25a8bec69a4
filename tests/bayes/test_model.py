from collections.abc import Callable
from dataclasses import replace
from random import Random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from filterd.bayes import model as model_module
from filterd.bayes.estimators import ESTIMATORS, ParamError
from filterd.bayes.model import Model, ModelSpec
from filterd.bayes.selection import Selection
from filterd.bayes.statistics import Statistics

SPAM = ["free", "cash", "win", "prize", "now", "click"]
HAM = ["meet", "noon", "lunch", "bob", "report", "now"]


@pytest.fixture(scope="module")
def stats() -> Statistics:
    rng = np.random.default_rng(0)
    s = Statistics()
    for _ in range(60):
        s.learn(list(rng.choice(SPAM + HAM[:2], size=8)), "spam")
        s.learn(list(rng.choice(HAM + SPAM[:1], size=8)), "ham")
    return s


documents = st.lists(st.sampled_from(SPAM + HAM + ["unseen", "other"]), min_size=0, max_size=15)


@settings(max_examples=30)
@given(documents, st.randoms(use_true_random=False), st.sampled_from(list(ESTIMATORS)))
def test_scores_do_not_depend_on_token_order(
    stats: Statistics, doc: list[str], random: Random, variant: str
) -> None:
    shuffled = list(doc)
    random.shuffle(shuffled)
    model = Model.build(stats, ModelSpec(variant, selection=Selection("local", 3)), target="spam")
    a, b = model.score_tokens([doc]).class_scores, model.score_tokens([shuffled]).class_scores
    assert np.allclose(a, b, equal_nan=True)


@settings(max_examples=30)
@given(st.lists(documents, min_size=1, max_size=6), st.sampled_from(["none", "local:2:or", "ir"]))
def test_a_batch_scores_like_its_documents_one_by_one(
    stats: Statistics, docs: list[list[str]], select: str
) -> None:
    model = Model.build(stats, ModelSpec("twcnb", selection=Selection.parse(select)), target="spam")
    together = model.score_tokens(docs).class_scores
    alone = np.vstack([model.score_tokens([d]).class_scores for d in docs])
    assert np.allclose(together, alone)


@given(documents, st.integers(1, 8))
def test_local_top_n_keeps_min_of_n_and_the_known_tokens(
    stats: Statistics, doc: list[str], n: int
) -> None:
    model = Model.build(
        stats, ModelSpec("mnb", selection=Selection("local", n, "alo")), target="spam"
    )
    explanation = model.score_tokens([doc]).explain(0)
    known = {t for t in doc if t in SPAM + HAM}
    assert len(explanation) == min(n, len(known))
    assert {t for t, _ in explanation} <= known


def test_explanation_adds_up_to_the_decision_score(stats: Statistics) -> None:
    model = Model.build(stats, ModelSpec("mnb"), target="spam")
    scores = model.score_tokens([["free", "free", "cash", "meet", "unseen"]])
    explanation = scores.explain(0)
    b = model.weights.b
    assert sum(c for _, c in explanation) + (b[0, 0] - b[1, 0]) == pytest.approx(scores.binary()[0])
    W, keys = model.weights.W, model.hasher.keys(["free", "cash"])
    free, cash = (int(np.flatnonzero(stats.vocab.keys == k)[0]) for k in keys)
    contributions = dict(explanation)
    assert contributions["free"] == pytest.approx(2 * (W[0, free] - W[1, free]))  # f_w = 2
    assert contributions["cash"] == pytest.approx(W[0, cash] - W[1, cash])
    assert [abs(c) for _, c in explanation] == sorted(
        (abs(c) for _, c in explanation), reverse=True
    )
    assert [t for t, _ in explanation if t == "unseen"] == []


def test_local_selection_keeps_the_strongest_evidence(stats: Statistics) -> None:
    everything = Model.build(stats, ModelSpec("mnb"), target="spam")
    top1 = Model.build(
        stats, ModelSpec("mnb", selection=Selection("local", 1, "alo")), target="spam"
    )
    doc = [["click", "now"]]
    ((token, _),) = top1.score_tokens(doc).explain(0)
    assert token == "click"  # 'now' is in both classes: weak
    assert (
        abs(top1.score_tokens(doc).binary()[0]) < abs(everything.score_tokens(doc).binary()[0]) + 10
    )


def test_global_selection_zeroes_the_weaker_tokens(stats: Statistics) -> None:
    model = Model.build(stats, ModelSpec("mnb", selection=Selection("global", 3)), target="spam")
    assert model.weights.known.sum() == 3
    assert np.count_nonzero(model.weights.W.any(axis=0)) == 3


def test_multiclass_model_predicts_and_scores_one_vs_rest() -> None:
    s = Statistics()
    for label, words in [
        ("sport", "ball goal team"),
        ("tech", "chip code data"),
        ("food", "bread soup salt"),
    ]:
        for _ in range(5):
            s.learn(words.split(), label)
    scores = Model.build(s, ModelSpec("cnb")).score_tokens(
        [["goal", "team"], ["soup"], ["code", "chip", "ball"]]
    )
    assert scores.predict() == ["sport", "food", "tech"]
    assert scores.binary("food")[1] > 0 > scores.binary("food")[0]


def test_selection_without_a_target_is_refused_for_many_classes() -> None:
    s = Statistics()
    for label in ("a", "b", "c"):
        s.learn([label], label)
    with pytest.raises(ValueError, match="give a target"):
        Model.build(s, ModelSpec("mnb", selection=Selection("local", 5)))


def test_model_is_frozen_while_statistics_keep_learning(stats: Statistics) -> None:
    s = Statistics()
    s.learn(["free"], "spam")
    s.learn(["meet"], "ham")
    model = Model.build(s, ModelSpec("mnb"), target="spam")
    before = model.score_tokens([["free", "brandnew"]]).class_scores.copy()
    s.learn(["brandnew"] * 5, "ham")
    assert np.allclose(model.score_tokens([["free", "brandnew"]]).class_scores, before)
    assert model.version < s.version


def test_spec_names_read_like_the_cli() -> None:
    assert (
        str(ModelSpec("unb", {"lam": [1e-5, 0.001]}, Selection("local", 6, "or")))
        == "unb(lam=1e-05,0.001)+local:6:or"
    )
    assert str(ModelSpec("mnb", set_of_words=True)) == "mnb+sow"
    with pytest.raises(ValueError, match="unknown variant"):
        ModelSpec("svm")


def test_a_spec_is_checked_when_it_is_built_however_it_is_built() -> None:
    builds: tuple[Callable[[], object], ...] = (
        lambda: ModelSpec.parse("mnb", {"alpha": "abc"}),
        lambda: ModelSpec.parse("mnb", {"alpha": -1}),  # a value, as the configuration gives it
        lambda: ModelSpec("mnb", {"alpha": "abc"}),
        lambda: replace(ModelSpec("mnb"), params={"alpha": 0.0}),  # tuning's candidates
    )
    for build in builds:
        with pytest.raises(ParamError, match=r"invalid value for mnb parameter 'alpha'"):
            build()


def test_stored_specs_with_valid_parameters_still_load() -> None:
    # as JSON gives them back: ints for whole numbers, lists, words
    stored: list[tuple[str, dict[str, Any]]] = [
        ("mnb", {"alpha": 1}),
        ("pcn", {"A": "min"}),
        ("unb", {"lam": [1e-05, 0.001]}),
        ("centroid", {"norm": "l1"}),
        ("robinson_fisher", {"s": 0.025, "x": 0.52}),
        ("pnbc", {"smoothing": "linear", "mu": 0.5}),
        ("wmnb", {"gamma": -1000000}),
    ]
    for variant, params in stored:
        spec = ModelSpec(variant, params)
        assert spec.params == params and str(spec) == str(ModelSpec.parse(variant, params))


def test_per_class_parameters_are_checked_against_the_classes_a_model_is_built_on(
    stats: Statistics,
) -> None:
    spec = ModelSpec.parse("unb", {"lam": "1e-5,1e-3,1e-2"})  # the classes are not known yet
    with pytest.raises(ParamError, match=r"'lam': 3 values for 2 classes \(spam, not spam\)"):
        Model.build(stats, spec, target="spam")
    with pytest.raises(ParamError, match="'lam': 3 values for 2 classes"):
        spec.check_classes(("the target", "the rest"))
    ModelSpec.parse("unb", {"lam": "1e-5,1e-3"}).check_classes(("spam", "not spam"))


LAZY_VARIANTS = [v for v in ESTIMATORS if not ModelSpec(v).needs_whole_vocabulary] + ["centroid"]


@pytest.mark.parametrize("variant", LAZY_VARIANTS)
@pytest.mark.parametrize("select", ["none", "local:3:or", "ir"])
def test_a_lazy_model_scores_like_a_full_one(stats: Statistics, variant: str, select: str) -> None:
    params = {"norm": "l1"} if variant == "centroid" else {}
    spec = ModelSpec(variant, params, Selection.parse(select))
    docs = [
        ["free", "cash", "meet", "unseen"],
        ["noon", "bob", "now", "now"],
        ["never", "seen"],
        [],
    ]
    full = Model.build(stats, spec, target="spam").score_tokens(docs)
    lazy = Model.build(stats, spec, target="spam", lazy=True).score_tokens(docs)
    assert np.allclose(full.class_scores, lazy.class_scores)
    (full_tokens, full_values), (lazy_tokens, lazy_values) = (
        zip(*full.explain(0)),
        zip(*lazy.explain(0)),
    )
    assert full_tokens == lazy_tokens and lazy_values == pytest.approx(full_values)


def test_a_lazy_model_refuses_stale_statistics_and_whole_vocabulary_variants() -> None:
    s = Statistics()
    s.learn(["a"], "spam")
    s.learn(["b"], "ham")
    lazy = Model.build(s, ModelSpec("mnb"), target="spam", lazy=True)
    s.learn(["c"], "ham")
    with pytest.raises(ValueError, match="changed"):
        lazy.score_tokens([["a"]])
    with pytest.raises(ValueError, match="whole vocabulary"):
        Model.build(s, ModelSpec("twcnb"), target="spam", lazy=True)


def test_sparse_statistics_score_like_dense_ones(stats: Statistics) -> None:
    sparse = Statistics(sparse=True)
    sparse.apply_delta(stats.export_delta(0))
    docs = [["free", "cash", "meet"], ["noon", "bob", "unseen"]]
    for spec in (
        ModelSpec("mnb", selection=Selection("local", 2, "or")),
        ModelSpec("pnbc"),
        ModelSpec("wmnb"),
    ):
        dense_scores = Model.build(stats, spec, target="spam").score_tokens(docs).class_scores
        for lazy in (False, True):
            assert np.allclose(
                Model.build(sparse, spec, target="spam", lazy=lazy).score_tokens(docs).class_scores,
                dense_scores,
            )


@pytest.mark.parametrize("variant", ["mnb", "robinson_fisher", "twcnb"])
def test_batch_explanations_equal_each_documents_explanation(variant: str) -> None:
    stats = Statistics(seed=2)
    for doc, label in [
        ("win cash prize now", "spam"),
        ("cash prize claim", "spam"),
        ("lunch at noon", "ham"),
        ("meeting at noon now", "ham"),
        ("invoice due now", "billing"),
    ]:
        stats.learn(doc.split(), label)
    model = Model.build(
        stats, ModelSpec(variant, selection=Selection.parse("local:3:alo")), target="spam"
    )
    scores = model.score_tokens(
        [d.split() for d in ["win cash at noon", "", "prize", "claim lunch invoice now"]]
    )
    for limit in (1, 2, 10):
        assert scores.explanations(limit) == [scores.explain(i)[:limit] for i in range(4)]


@settings(max_examples=30)
@given(
    st.lists(documents, min_size=1, max_size=6),
    st.sampled_from(["local:1000000:alo:0.18", "local:5:or:0.1", "none", "local:3", "global:4"]),
    st.sampled_from(["robinson_fisher", "mnb", "unb"]),
    st.booleans(),
)
def test_clues_by_threshold_are_those_the_ranking_keeps(
    stats: Statistics, docs: list[list[str]], select: str, variant: str, lazy: bool
) -> None:
    spec = ModelSpec(variant, selection=Selection.parse(select))
    if lazy and spec.needs_whole_vocabulary:
        return
    fast = Model.build(stats, spec, target="spam", lazy=lazy).score_tokens(docs)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(model_module, "_threshold_only", lambda selection, batch: False)
        ranked = Model.build(stats, spec, target="spam", lazy=lazy).score_tokens(docs)
    for name in ("class_scores", "_entry", "_ids", "_doc", "_x"):
        assert np.array_equal(getattr(fast, name), getattr(ranked, name), equal_nan=True), name
