"""Estimators against numbers worked by hand on a tiny corpus, and the papers' checks.

Corpus: spam = {"a a b", "a c"}, ham = {"b c", "c d"}; test document "a d".
    N[spam] = a:3 b:1 c:1 (N_spam = 5), N[ham] = b:1 c:2 d:1 (N_ham = 4), V = 4, D = 2 + 2.
"""

import inspect
import math

import numpy as np
import pytest
from scipy.stats import chi2, spearmanr

from filterd.bayes.estimators import (
    ESTIMATORS,
    ParamError,
    ParamValue,
    check_params,
    likelihood_ratio,
    parameters,
    parse_params,
)
from filterd.bayes.model import Model, ModelSpec
from filterd.bayes.statistics import Statistics


@pytest.fixture
def tiny() -> Statistics:
    stats = Statistics()
    for text, label in [("a a b", "spam"), ("a c", "spam"), ("b c", "ham"), ("c d", "ham")]:
        stats.learn(text.split(), label)
    return stats


def decision(stats: Statistics, variant: str, **params: ParamValue) -> float:
    model = Model.build(stats, ModelSpec(variant, params), target="spam")
    return float(model.score_tokens([["a", "d"]]).binary()[0])


def test_mnb_by_hand(tiny: Statistics) -> None:
    # s_spam = log ½ + log(4/9) + log(1/9);  s_ham = log ½ + log(1/8) + log(2/8)
    assert decision(tiny, "mnb") == pytest.approx(math.log((4 / 81) / (2 / 64)))


def test_mnb_lidstone_alpha(tiny: Statistics) -> None:
    a = 0.1
    spam = math.log((3 + a) / (5 + 4 * a)) + math.log(a / (5 + 4 * a))
    ham = math.log(a / (4 + 4 * a)) + math.log((1 + a) / (4 + 4 * a))
    assert decision(tiny, "mnb", alpha=a) == pytest.approx(spam - ham)


def test_cnb_by_hand(tiny: Statistics) -> None:
    # θ̃[spam,·] from ham counts: a 1/8, d 2/8; θ̃[ham,·] from spam counts: a 4/9, d 1/9
    spam = -math.log(1 / 8) - math.log(2 / 8)
    ham = -math.log(4 / 9) - math.log(1 / 9)
    assert decision(tiny, "cnb") == pytest.approx(spam - ham)


def test_wcnb_by_hand(tiny: Statistics) -> None:
    theta_spam = np.array([1, 2, 3, 2]) / 8  # a b c d from ham counts + 1
    theta_ham = np.array([4, 2, 2, 1]) / 9  # from spam counts + 1
    norm_spam, norm_ham = np.abs(np.log(theta_spam)).sum(), np.abs(np.log(theta_ham)).sum()
    spam = -(math.log(1 / 8) + math.log(2 / 8)) / norm_spam
    ham = -(math.log(4 / 9) + math.log(1 / 9)) / norm_ham
    assert decision(tiny, "wcnb") == pytest.approx(spam - ham)


def test_unb_by_hand(tiny: Statistics) -> None:
    # r̃(a,spam) = (3+1)/(5+2) / ((0+1)/(4+2)) = 24/7; r̃(d,spam) = (1/7)/(2/6) = 3/7; b = log(2/2)
    # r̃(a,ham) = (1/6)/(4/7) = 7/24;                  r̃(d,ham) = (2/6)/(1/7) = 7/3
    expected = math.log(24 / 7 * 3 / 7) - math.log(7 / 24 * 7 / 3)
    assert decision(tiny, "unb") == pytest.approx(expected)
    assert decision(tiny, "unb", lam=0.5) < decision(tiny, "unb")  # λ shrinks the ratios


def test_wmnb_by_hand(tiny: Statistics) -> None:
    # spam: log(3/5) for a, γ/Z_spam = γ/1 for unseen d; ham: γ/1 for a, log(1/4) for d
    assert decision(tiny, "wmnb", gamma=-100.0) == pytest.approx(math.log(0.6) - math.log(0.25))


def test_robinson_fisher_by_hand(tiny: Statistics) -> None:
    s, x = 0.45, 0.5
    f_a = (s * x + 2 * 1.0) / (s + 2)  # p(a) = (2/2)/(2/2 + 0/2) = 1, n = 2
    f_d = (s * x + 1 * 0.0) / (s + 1)  # p(d) = 0, n = 1
    S = chi2.cdf(-2 * (math.log(1 - f_a) + math.log(1 - f_d)), 4)
    H = chi2.cdf(-2 * (math.log(f_a) + math.log(f_d)), 4)
    p = (1 + S - H) / 2
    assert decision(tiny, "robinson_fisher") == pytest.approx(math.log(p / (1 - p)))


def test_kikuchi_ozono_table_1() -> None:
    # the uncorrected estimator with λ = 1e-5 on the paper's Table I rows
    rows = [(100, 1e4, 2000, 1e7, 47.6), (1, 1e4, 20, 1e7, 8.3), (2, 1e4, 20, 1e7, 16.7)]
    for f_nu, n_nu, f_de, n_de, published in rows:
        assert likelihood_ratio(f_nu, n_nu, f_de, n_de, 1e-5, smoothed=False) == pytest.approx(
            published, abs=0.05
        )


def skewed_stats(rng: np.random.Generator, sizes: tuple[int, int] = (400, 40)) -> Statistics:
    """Two classes of very different length; 'the' is 10% of every class's tokens."""
    stats = Statistics()
    for label, n_docs, words in [("ham", sizes[0], "abcdefgh"), ("spam", sizes[1], "fghijklm")]:
        for _ in range(n_docs):
            doc = [*list(rng.choice(list(words), size=18)), "the", "the"]
            stats.learn(doc, label)
    return stats


def test_frank_bouckaert_irrelevant_word_has_odds_ratio_one_under_pcn() -> None:
    stats = skewed_stats(
        np.random.default_rng(0), sizes=(400, 3)
    )  # smoothing bites the short class
    col = stats.vocab.lookup(stats.hasher.keys(["the"]))[0]
    pcn = Model.build(stats, ModelSpec("pcn"), target="spam").weights.W
    plain = Model.build(stats, ModelSpec("mnb"), target="spam").weights.W
    assert pcn[0, col] - pcn[1, col] == pytest.approx(0.0, abs=1e-12)
    assert abs(plain[0, col] - plain[1, col]) > 0.01


def test_pcn_with_a_1_ranks_like_the_l1_centroid() -> None:
    rng = np.random.default_rng(1)
    stats = skewed_stats(rng)
    tests = [list(rng.choice(list("abcdefghijklm"), size=15)) for _ in range(300)]
    pcn = Model.build(stats, ModelSpec("pcn"), target="spam").score_tokens(tests).binary()
    l1 = (
        Model.build(stats, ModelSpec("centroid", {"norm": "l1"}), target="spam")
        .score_tokens(tests)
        .binary()
    )
    assert spearmanr(pcn, l1).statistic > 0.99


def test_pcn_min_scales_to_the_shortest_class() -> None:
    stats = skewed_stats(np.random.default_rng(2))
    a_min = Model.build(stats, ModelSpec("pcn", {"A": "min"}), target="spam").weights
    a_value = Model.build(
        stats, ModelSpec("pcn", {"A": float(stats.counts().Nc.min())}), target="spam"
    ).weights
    assert np.allclose(a_min.W, a_value.W)


def test_twcnb_transforms_the_test_document_like_training_documents(tiny: Statistics) -> None:
    model = Model.build(tiny, ModelSpec("twcnb"), target="spam")
    once = model.score_tokens([["a", "d"]]).class_scores
    repeated = model.score_tokens([["a", "a", "a", "d", "d", "d"]]).class_scores
    # log(1+f)·IDF then L2: equal counts per token give the same normalized vector
    assert np.allclose(once, repeated)


@pytest.mark.parametrize("smoothing", ["laplace", "absolute", "linear", "witten_bell"])
def test_pnbc_gives_probabilities(tiny: Statistics, smoothing: str) -> None:
    w = Model.build(tiny, ModelSpec("pnbc", {"smoothing": smoothing})).weights
    p = np.exp(w.W[:, w.known])
    assert ((p > 0) & (p <= 1)).all()
    if smoothing != "laplace":  # the smoothed distributions sum to one over the vocabulary
        assert np.allclose(p.sum(axis=1), 1.0)


@pytest.mark.parametrize("smoothing", ["absolute", "linear", "witten_bell"])
def test_pnbc_reads_a_class_without_tokens_as_the_background(smoothing: str) -> None:
    stats = Statistics()
    stats.learn(["a", "b", "a"], "spam")
    stats.learn([], "ham")  # a document without a token (of the view a model reads)
    model = Model.build(stats, ModelSpec("pnbc", {"smoothing": smoothing}), target="spam")
    w = model.weights
    assert np.isfinite(w.W).all()
    # ham reads the background, spam's tokens: a 2/3, b 1/3 (ids in order of first appearance)
    assert np.allclose(np.exp(w.W[1]), [2 / 3, 1 / 3])
    assert np.isfinite(model.score_tokens([["a", "b"]]).binary()).all()


def test_every_estimator_ignores_unknown_tokens(tiny: Statistics) -> None:
    for variant in ESTIMATORS:
        model = Model.build(tiny, ModelSpec(variant), target="spam")
        with_unknown = model.score_tokens([["a", "d", "never-seen", "also-new"]]).class_scores
        without = model.score_tokens([["a", "d"]]).class_scores
        assert np.allclose(with_unknown, without), variant


def test_parse_params_types_and_errors() -> None:
    assert parse_params("unb", {"lam": "1e-5,1e-3"}) == {"lam": [1e-5, 1e-3]}
    assert parse_params("pcn", {"A": "min"}) == {"A": "min"}
    with pytest.raises(ParamError, match=r"mnb has no parameter 'beta' \(parameters: alpha\)"):
        parse_params("mnb", {"beta": "1"})
    with pytest.raises(ValueError, match="unknown variant"):
        parse_params("svm", {})


# Every parameter of every variant, with values it must refuse and what the error says it takes.
BAD_VALUES = [
    ("mnb", "alpha", ["abc", "0", "-1", "nan", "inf", "1,2"], "a number > 0"),
    ("pcn", "A", ["foo", "0", "-2", "min,1"], "a number > 0 or min"),
    ("centroid", "norm", ["l3", "2", "l1,l2"], "l1 or l2"),
    ("cnb", "alpha", ["abc", "0"], "a number > 0"),
    ("wcnb", "alpha", ["-0.5"], "a number > 0"),
    ("twcnb", "alpha", ["x"], "a number > 0"),
    ("ova", "alpha", ["-inf"], "a number > 0"),
    (
        "unb",
        "lam",
        ["abc", "-1e-5", "1e-5,-1", "1e-5,x", "nan"],
        "a number ≥ 0, or a list of one per class",
    ),
    ("wmnb", "gamma", ["abc", "0", "5", "-inf"], "a number < 0"),
    ("pnbc", "smoothing", ["dirichlet", "1"], "laplace, absolute, linear or witten_bell"),
    ("pnbc", "alpha", ["0"], "a number > 0"),
    ("pnbc", "delta", ["0", "1.5", "abc"], "a number > 0 and ≤ 1"),
    ("pnbc", "mu", ["0", "1", "-0.1"], "a number > 0 and < 1"),
    ("robinson_fisher", "s", ["0", "-1", "abc"], "a number > 0"),
    ("robinson_fisher", "x", ["0", "1", "1.5", "abc"], "a number > 0 and < 1"),
]


def test_the_bad_values_cover_every_parameter_of_every_variant() -> None:
    covered = {(variant, name) for variant, name, _, _ in BAD_VALUES}
    assert covered == {(v, name) for v in ESTIMATORS for name in parameters(v)}


@pytest.mark.parametrize("variant, name, texts, takes", BAD_VALUES)
def test_a_bad_parameter_value_is_refused_in_one_line_naming_it(
    variant: str, name: str, texts: list[str], takes: str
) -> None:
    for text in texts:
        with pytest.raises(ParamError) as raised:
            parse_params(variant, {name: text})
        message = str(raised.value)
        assert raised.value.name == name and "\n" not in message
        assert message.startswith(f"invalid value for {variant} parameter {name!r}: ")
        assert message.endswith(f"(must be {takes})"), message


def test_the_message_quotes_text_and_writes_numbers_short() -> None:
    with pytest.raises(ParamError, match=r"'alpha': 'abc' \(must be a number > 0\)$"):
        parse_params("mnb", {"alpha": "abc"})
    with pytest.raises(ParamError, match=r"'alpha': -1 \(must"):
        parse_params("mnb", {"alpha": "-1"})
    with pytest.raises(ParamError, match=r"'alpha': '1,2' \(must"):
        parse_params("mnb", {"alpha": "1,2"})


def test_every_estimator_declares_its_parameters_and_its_defaults_are_valid() -> None:
    for variant, estimator in ESTIMATORS.items():
        signature = inspect.signature(estimator)
        defaults = {n: p.default for n, p in signature.parameters.items() if n != "c"}
        assert set(parameters(variant)) == set(defaults), variant
        assert check_params(variant, defaults) == defaults, variant


def test_values_typed_by_a_toml_file_or_json_are_checked_too() -> None:
    assert check_params("mnb", {"alpha": 1}) == {"alpha": 1.0}  # an int is a number
    assert check_params("unb", {"lam": (1e-5, 0)}) == {"lam": [1e-5, 0.0]}
    assert check_params("pcn", {"A": "min"}) == {"A": "min"}
    for bad in (True, None, {"a": 1}, [], [True]):
        with pytest.raises(ParamError, match="'alpha'"):
            check_params("mnb", {"alpha": bad})
    with pytest.raises(ParamError, match="'lam'"):
        check_params("unb", {"lam": []})


def test_a_per_class_parameter_gives_one_value_or_one_per_class(tiny: Statistics) -> None:
    counts = tiny.counts()  # two classes
    with pytest.raises(
        ParamError, match=r"'lam': 3 values for 2 classes \((spam, ham|ham, spam)\)"
    ):
        ESTIMATORS["unb"](counts, lam=[1e-5, 1e-3, 1e-2])
    one, two = ESTIMATORS["unb"](counts, lam=[1e-3]), ESTIMATORS["unb"](counts, lam=[1e-3, 1e-3])
    assert np.allclose(one.W, two.W) and np.allclose(one.W, ESTIMATORS["unb"](counts, lam=1e-3).W)
