import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from filterd.bayes import selection
from filterd.bayes.arrays import Int64Array
from filterd.bayes.selection import Selection, global_top, local_top, local_top_python, strength
from filterd.bayes.statistics import Counts, Statistics


@pytest.fixture
def view() -> tuple[Counts, Int64Array]:
    stats = Statistics()
    for text, label in [("a a b", "spam"), ("a c", "spam"), ("b c", "ham"), ("c d", "ham")]:
        stats.learn(text.split(), label)
    cols = stats.vocab.lookup(stats.hasher.keys(list("abcd")))
    return stats.counts(target="spam"), cols


def test_alo_is_the_absolute_mnb_log_odds(view: tuple[Counts, Int64Array]) -> None:
    c, cols = view
    s = strength(c, "alo")[cols]
    assert s[0] == pytest.approx(abs(math.log(4 / 9) - math.log(1 / 8)))  # a
    assert s[1] == pytest.approx(abs(math.log(2 / 9) - math.log(2 / 8)))  # b


def test_odds_ratio_is_signed_towards_the_target(view: tuple[Counts, Int64Array]) -> None:
    c, cols = view
    p_t, p_o = (2 + 1) / (2 + 2), (0 + 1) / (2 + 2)  # token a: DF spam 2, ham 0
    odds_ratio = strength(c, "or")[cols]
    assert odds_ratio[0] == pytest.approx(math.log(p_t * (1 - p_o) / ((1 - p_t) * p_o)))
    # d: DF spam 0 of 2, ham 1 of 2 → P(d|t) = 1/4, P(d|t̄) = 2/4: a ham predictor ranks low
    assert odds_ratio[3] == pytest.approx(math.log((1 / 4) * (2 / 4) / ((3 / 4) * (2 / 4))))
    assert odds_ratio[3] < 0 < odds_ratio[0]


def test_mutual_information_is_zero_for_an_even_token_and_positive_for_a_skewed_one(
    view: tuple[Counts, Int64Array],
) -> None:
    c, cols = view
    mi = strength(c, "mi")[cols]
    assert mi[1] == pytest.approx(0.0, abs=1e-12)  # b: one spam doc, one ham doc
    assert mi[0] == pytest.approx(
        math.log(2)
    )  # a: presence decides the (balanced) class: MI = H(class)


def test_unknown_tokens_are_never_strong(view: tuple[Counts, Int64Array]) -> None:
    c, _ = view
    assert np.isneginf(strength(c, "alo")[~c.known]).all()


@given(st.lists(st.tuples(st.integers(0, 5), st.floats(0, 10)), max_size=40), st.integers(1, 6))
def test_local_top_keeps_the_n_strongest_of_each_document(
    entries: list[tuple[int, float]], n: int
) -> None:
    doc = np.array([d for d, _ in entries], dtype=np.int64)
    s = np.array([v for _, v in entries])
    keep = local_top(doc, s, np.arange(len(doc)), n)
    for d in set(doc.tolist()):
        mine = np.flatnonzero(doc == d)
        kept = np.intersect1d(keep, mine)
        assert len(kept) == min(n, len(mine))
        dropped = np.setdiff1d(mine, kept)
        if len(dropped):
            assert s[kept].min() >= s[dropped].max()


@pytest.mark.skipif(selection.c_local_top is None, reason="filterd._speedups not built")
@given(
    entries=st.lists(
        st.tuples(
            st.integers(0, 2),
            # ties, signed zeros, NaN and infinities: the C loop orders them as numpy does
            st.sampled_from([0.0, -0.0, 0.5, 1.0, 2.5, math.nan, math.inf, -math.inf]),
        ),
        max_size=90,
    ),
    n=st.sampled_from([0, 1, 2, 3, 6, 15, 33]),  # 33: past the C loop's insertion
    min_strength=st.sampled_from([0.0, 0.7, -math.inf]),
    seed=st.integers(0, 1000),
)
def test_the_c_loop_keeps_what_the_reference_keeps(
    entries: list[tuple[int, float]], n: int, min_strength: float, seed: int
) -> None:
    entries.sort(key=lambda e: e[0])  # the scorer's documents come in order
    doc = np.array([d for d, _ in entries], dtype=np.int64)
    s = np.array([v for _, v in entries], dtype=np.float64)
    tiebreak = np.random.default_rng(seed).permutation(len(doc)).astype(np.int64) - 30
    kept = local_top(doc, s, tiebreak, n, min_strength)
    assert kept.tolist() == local_top_python(doc, s, tiebreak, n, min_strength).tolist()


@pytest.mark.parametrize("n", [3, 1_000_000])  # ranked, and N above every document's length
def test_local_top_honours_a_minimum_strength(n: int) -> None:
    keep = local_top(
        np.zeros(4, dtype=np.int64),
        np.array([0.1, 2.0, 0.5, 3.0]),
        np.arange(4),
        n=n,
        min_strength=0.4,
    )
    assert list(keep) == [1, 2, 3]


def test_global_top_picks_the_strongest_known_tokens() -> None:
    s = np.array([0.5, -np.inf, 2.0, 1.0, 2.0])
    assert list(global_top(s, np.arange(5), 2)) == [False, False, True, False, True]
    assert global_top(s, np.arange(5), 10).sum() == 4


@pytest.mark.parametrize(
    "spec, parsed",
    [
        ("none", Selection()),
        ("ir", Selection("ir")),
        ("local:6:or", Selection("local", 6, "or")),
        ("local:8", Selection("local", 8, "alo")),
        ("local:150:alo:0.1", Selection("local", 150, "alo", 0.1)),
        ("global:1000:mi", Selection("global", 1000, "mi")),
    ],
)
def test_selection_specs_parse_and_print_back(spec: str, parsed: Selection) -> None:
    assert Selection.parse(spec) == parsed
    assert Selection.parse(str(parsed)) == parsed


@pytest.mark.parametrize(
    "spec", ["local", "local:x", "local:0", "local:5:chi", "global:5:or:1", "top:5", "none:1"]
)
def test_bad_selection_specs_say_what_is_expected(spec: str) -> None:
    with pytest.raises(ValueError, match="bad selection"):
        Selection.parse(spec)
