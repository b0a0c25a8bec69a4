import math
from random import Random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from filterd.bayes.features import encode
from filterd.bayes.matrix import SparseMatrix
from filterd.bayes.statistics import T_SCALE, Canonical, Statistics
from filterd.bayes.vocab import VIEWS, view_of_token

# words and tokens of the other views: character 4-grams and word pairs
WORDS = ["free", "win", "cash", "meet", "noon", "bob", "the", "a", "€5", "subject:a b"]
words = st.sampled_from([*WORDS, "c4:free", "c4:_win", "free cash", "win ~cash"])
docs = st.lists(words, min_size=0, max_size=12)
labelled = st.lists(st.tuples(docs, st.sampled_from(["ham", "spam", "fraud"])), max_size=15)


def learned(items: list[tuple[list[str], str]], seed: int = 0, sparse: bool = False) -> Statistics:
    stats = Statistics(seed=seed, sparse=sparse)
    for tokens, label in items:
        stats.learn(tokens, label)
    return stats


def test_statistics_are_those_of_methods_md() -> None:
    stats = learned([(["a", "a", "b"], "spam"), (["a", "c"], "spam"), (["b"], "ham")])
    c = stats.counts()
    col = {t: stats.vocab.lookup(stats.hasher.keys([t]))[0] for t in "abc"}
    spam = c.labels.index("spam")
    assert c.statistic("N")[spam, col["a"]] == 3 and c.DF[spam, col["a"]] == 2
    assert (
        c.D.tolist() == [[2], [1]] and c.Nc[spam, 0] == 5 and c.V == 3
    )  # aggregates are (C, 1) columns
    # t_dw = log(1+f)/‖log(1+f_d·)‖₂ summed over the class:
    # doc1 a: log3/√(log²3+log²2), doc2 a: 1/√2
    expected = math.log(3) / math.hypot(math.log(3), math.log(2)) + 1 / math.sqrt(2)
    assert c.statistic("T")[spam, col["a"]] == pytest.approx(expected, abs=2 / T_SCALE)


@given(labelled, docs, st.sampled_from(["ham", "spam"]))
def test_unlearn_is_the_exact_inverse_of_learn(
    items: list[tuple[list[str], str]], doc: list[str], label: str
) -> None:
    stats = learned(items)
    before = stats.canonical()
    stats.learn(doc, label)
    stats.unlearn(doc, label)
    after = stats.canonical()
    before.setdefault(label, (0, {}))  # learning may have introduced the class
    assert after == before


@settings(max_examples=50)
@given(labelled, st.randoms(use_true_random=False))
def test_learning_order_does_not_matter(items: list[tuple[list[str], str]], random: Random) -> None:
    shuffled = list(items)
    random.shuffle(shuffled)
    assert learned(items).canonical() == learned(shuffled).canonical()


def test_unlearning_what_was_not_learned_raises_and_changes_nothing() -> None:
    stats = learned([(["free", "cash"], "spam")])
    before = stats.canonical()
    with pytest.raises(ValueError, match="not learned"):
        stats.unlearn(["free", "cash"], "ham")
    with pytest.raises(ValueError):
        stats.unlearn(["free", "free", "free"], "spam")
    assert stats.canonical() == before


@pytest.mark.parametrize(
    "source_sparse, replica_sparse", [(False, False), (True, False), (False, True)]
)
@settings(max_examples=40)
@given(first=labelled, second=labelled)
def test_a_copy_synced_by_deltas_equals_the_source(
    source_sparse: bool,
    replica_sparse: bool,
    first: list[tuple[list[str], str]],
    second: list[tuple[list[str], str]],
) -> None:
    source, replica = learned(first, sparse=source_sparse), Statistics(sparse=replica_sparse)
    replica.apply_delta(source.export_delta(0))
    synced_at = source.version
    for tokens, label in second:
        source.learn(tokens, label)
    if second:
        source.unlearn(*second[0])
    replica.apply_delta(source.export_delta(synced_at))
    replica.apply_delta(source.export_delta(synced_at))  # applying twice changes nothing
    assert _nonempty(replica.canonical()) == _nonempty(source.canonical())
    kept = (list(replica.Nc), list(replica.DFc), list(replica.U), replica.V)
    replica._recount()
    assert kept == (list(replica.Nc), list(replica.DFc), list(replica.U), replica.V)


@pytest.mark.parametrize("sparse", [False, True])
def test_logistic_steps_are_learned_unlearned_and_synced_with_the_counts(sparse: bool) -> None:
    from filterd.bayes.logistic import learn_steps

    docs = [["free", "cash"], ["lunch", "today"], ["free", "lunch"]]
    labels = ["spam", "ham", "spam"]
    stats = Statistics(seed=3, sparse=sparse)
    batch = encode(docs, stats.hasher)
    steps = learn_steps(stats, batch, labels, "spam")
    stats.update(batch, labels, steps=steps)
    bias, weights = stats.logistic_weights()
    free, lunch = stats.hasher.key("free"), stats.hasher.key("lunch")
    assert bias == int(steps.sum()) and weights[free] == steps[0] + steps[2] > 0
    assert weights[lunch] == steps[1] + steps[2]
    replica = Statistics(seed=3, sparse=not sparse)
    replica.apply_delta(stats.export_delta(0))
    assert replica.logistic_weights() == (bias, weights)
    stats.update(batch, labels, -1, steps=steps)  # unlearned with the steps they took
    assert stats.logistic_weights() == (0, {})
    with pytest.raises(ValueError, match="3 documents but 2 steps"):
        stats.update(batch, labels, steps=steps[:2])


def _nonempty(canonical: Canonical) -> Canonical:
    return {label: v for label, v in canonical.items() if v[0] or v[1]}


def test_delta_names_only_rows_changed_since_the_version() -> None:
    stats = learned([(["old"], "ham")])
    version = stats.version
    stats.learn(["new"], "spam")
    delta = stats.export_delta(version)
    assert list(delta.keys) == [stats.hasher.key("new")]


def test_binary_view_sums_the_other_classes() -> None:
    stats = learned([(["x"], "spam"), (["x", "y"], "ham"), (["x"], "fraud")])
    view = stats.counts(target="spam")
    assert view.labels == ("spam", "not spam")
    assert view.D.tolist() == [[1], [2]]
    col = stats.vocab.lookup(stats.hasher.keys(["x"]))[0]
    assert list(view.statistic("N")[:, col]) == [1, 2]
    with pytest.raises(KeyError, match="unknown class"):
        stats.counts(target="phishing")


def test_set_of_words_view_counts_documents() -> None:
    stats = learned([(["x", "x", "x"], "spam")])
    view = stats.counts(set_of_words=True)
    assert (
        view.statistic("N").sum() == 1
        and view.Nc.sum() == 1
        and stats.counts().statistic("N").sum() == 3
    )


def test_a_subset_of_columns_keeps_the_whole_vocabulary_aggregates() -> None:
    stats = learned([(["x", "y", "y"], "spam"), (["x", "z"], "ham"), (["w"], "fraud")])
    whole = stats.counts(target="spam")
    cols = stats.vocab.lookup(stats.hasher.keys(["y", "w"]))
    part = stats.counts(target="spam", columns=cols)
    assert not part.full and whole.full
    assert (whole.statistic("N")[:, cols] == part.statistic("N")).all()
    assert (whole.statistic("T")[:, cols] == part.statistic("T")).all()
    assert (part.Nc == whole.Nc).all() and (part.U == whole.U).all() and part.V == whole.V == 4
    assert whole.U.tolist() == [[2], [3]] and whole.Nc.tolist() == [[3], [3]]


@settings(max_examples=50)
@given(labelled, st.integers(0, 14))
def test_maintained_aggregates_equal_a_recount(
    items: list[tuple[list[str], str]], unlearn_first: int
) -> None:
    stats = learned(items)
    for tokens, label in items[:unlearn_first]:
        stats.unlearn(tokens, label)
    kept = (stats.Nc.copy(), stats.DFc.copy(), stats.U.copy(), stats.V)
    stats._recount()
    assert [list(a) for a in kept[:3]] == [list(stats.Nc), list(stats.DFc), list(stats.U)]
    assert kept[3] == stats.V


@settings(max_examples=50)
@given(labelled, st.integers(0, 14), st.sampled_from([None, "spam"]), st.sampled_from(VIEWS))
def test_a_view_reads_as_the_statistics_of_its_tokens_alone(
    items: list[tuple[list[str], str]], unlearn_first: int, target: str | None, view: str
) -> None:
    v = VIEWS.index(view)
    stats, alone = learned(items), Statistics()
    for tokens, label in items:
        alone.learn([t for t in tokens if view_of_token(t) == v], label)
    for tokens, label in items[:unlearn_first]:
        stats.unlearn(tokens, label)
        alone.unlearn([t for t in tokens if view_of_token(t) == v], label)
    if target is not None and target not in stats.labels:
        return
    of_view, of_alone = stats.counts(target, view=v), alone.counts(target)
    keys = stats.vocab.keys[stats.view_columns(v)]
    order = np.argsort(keys)
    assert (keys[order] == np.sort(alone.vocab.keys)).all()
    alone_order = np.argsort(alone.vocab.keys)
    # the classes in one order: `alone` met them in another where a document had no token of v
    rows = [of_alone.labels.index(label) for label in of_view.labels]
    for name in ("DF", "D", "Nc", "U"):
        np.testing.assert_array_equal(
            getattr(of_view, name)[:, order] if name == "DF" else getattr(of_view, name),
            getattr(of_alone, name)[rows][:, alone_order]
            if name == "DF"
            else getattr(of_alone, name)[rows],
            err_msg=name,
        )
    assert of_view.V == of_alone.V


@settings(max_examples=60)
@given(labelled, st.integers(0, 14), st.sampled_from([None, "spam", "ham"]), st.booleans())
def test_sparse_storage_behaves_like_dense(
    items: list[tuple[list[str], str]], unlearn_first: int, target: str | None, set_of_words: bool
) -> None:
    dense, sparse = learned(items), learned(items, sparse=True)
    for tokens, label in items[:unlearn_first]:
        dense.unlearn(tokens, label)
        sparse.unlearn(tokens, label)
    assert sparse.canonical() == dense.canonical()
    assert (list(sparse.U), sparse.V, list(sparse.Nc)) == (list(dense.U), dense.V, list(dense.Nc))
    if target in dense.labels:
        columns = np.arange(0, len(dense.vocab), 2)
        a = dense.counts(target, columns, set_of_words)
        b = sparse.counts(target, columns, set_of_words)
        assert (a.statistic("N") == b.statistic("N")).all() and (a.DF == b.DF).all()
        assert (a.statistic("T") == b.statistic("T")).all()
        assert (a.Nc == b.Nc).all() and (a.U == b.U).all() and a.V == b.V


def test_sparse_unlearning_what_was_not_learned_raises_and_changes_nothing() -> None:
    stats = learned([(["free", "cash"], "spam"), (["noon"], "ham")], sparse=True)
    before = stats.canonical()
    with pytest.raises(ValueError, match="not learned"):
        stats.unlearn(["free", "noon"], "ham")
    assert stats.canonical() == before


def test_sparse_storage_keeps_only_the_pairs_that_occur() -> None:
    stats = Statistics(sparse=True)
    for c in range(300):
        stats.learn([f"word{c}", f"word{c + 1}", "common"], f"class{c}")
    assert isinstance(stats.storage, SparseMatrix)
    assert stats.storage.n_pairs == 300 * 3  # dense storage would hold 300 × 302 cells
    view = stats.counts(
        target="class7", columns=stats.vocab.lookup(stats.hasher.keys(["word7", "common"]))
    )
    assert view.statistic("N").tolist() == [[1, 1], [1, 299]]


def big_corpus(n_docs: int = 400, seed: int = 1) -> list[tuple[list[str], str]]:
    """Documents with ≥ 2¹⁴ entries in all, over a vocabulary of ≥ 2¹⁴ tokens: the batch paths."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(40_000)]
    sizes = rng.integers(1, 300, size=n_docs)
    docs = [
        [
            words[i]
            for i in np.concatenate(
                [rng.zipf(1.3, size=n) % 50, rng.integers(0, len(words), size=n)]
            )
        ]
        for n in sizes
    ]
    return [(doc, str(rng.choice(["ham", "spam", "fraud"]))) for doc in docs]


@pytest.mark.parametrize("sparse", [False, True])
def test_a_large_batch_learns_and_unlearns_like_one_document_at_a_time(sparse: bool) -> None:
    items = big_corpus()
    together = Statistics(sparse=sparse)
    together.update(encode([d for d, _ in items], together.hasher), [label for _, label in items])
    assert together.canonical() == learned(items).canonical()
    kept = (list(together.Nc), list(together.DFc), list(together.U), together.V)
    together._recount()
    assert kept == (list(together.Nc), list(together.DFc), list(together.U), together.V)
    half = items[::2]
    together.update(encode([d for d, _ in half], together.hasher), [label for _, label in half], -1)
    rest = learned(items)
    for tokens, label in half:
        rest.unlearn(tokens, label)
    assert together.canonical() == rest.canonical()


@pytest.mark.parametrize("sparse", [False, True])
def test_unlearning_a_large_batch_with_one_wrong_document_raises_and_changes_nothing(
    sparse: bool,
) -> None:
    items = big_corpus(200)
    stats = learned(items, sparse=sparse)
    before, aggregates = (
        stats.canonical(),
        (list(stats.Nc), list(stats.DFc), list(stats.U), stats.V, list(stats.D)),
    )
    docs, labels = [d for d, _ in items], [label for _, label in items]
    other = next(label for label in stats.labels if label != labels[-1])
    for wrong_docs, wrong_labels in (
        (docs, [*labels[:-1], other]),
        ([*docs[:-1], ["never", "seen"]], labels),
    ):
        with pytest.raises(ValueError, match="not learned"):
            stats.update(encode(wrong_docs, stats.hasher), wrong_labels, -1)
        assert stats.canonical() == before
        assert aggregates == (
            list(stats.Nc),
            list(stats.DFc),
            list(stats.U),
            stats.V,
            list(stats.D),
        )
