"""The vectorized online replay gives the scores of the stepwise one (score, then learn)."""

from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from filterd.bayes import estimators
from filterd.bayes.arrays import BoolArray
from filterd.bayes.estimators import TOKEN_STATISTICS, Statistic, Weights, reads, reads_of
from filterd.bayes.features import DocBatch, encode, select_docs, select_entries
from filterd.bayes.model import ROBINSON_FISHER_SPEC, Model, ModelSpec
from filterd.bayes.replay import (
    BLOCK_ENTRIES,
    _History,
    online_scores,
    replay_many,
    replay_scores,
    statistics_read,
    stepwise_scores,
)
from filterd.bayes.selection import Selection
from filterd.bayes.statistics import Counts, Statistics
from filterd.bayes.vocab import VIEWS, views_of
from filterd.evaluation.corpus import to_records
from filterd.evaluation.protocols import Corpus
from filterd.evaluation.synth import SynthConfig, generate
from filterd.tokenize import Tokenizer, TokenizerConfig

ESTIMATORS: list[tuple[str, dict[str, Any]]] = [
    ("mnb", {}),
    ("mnb", {"alpha": 0.1}),
    ("pcn", {}),
    ("pcn", {"A": "min"}),
    ("centroid", {"norm": "l1"}),
    ("cnb", {}),
    ("ova", {}),
    ("unb", {}),
    ("unb", {"lam": [1e-5, 1e-2]}),  # per-class λ
    ("wmnb", {"gamma": -1e6}),
    ("pnbc", {"smoothing": "absolute"}),
    ("pnbc", {"smoothing": "linear"}),
    ("pnbc", {"smoothing": "witten_bell"}),
    ("robinson_fisher", {}),
    ("robinson_fisher", {"s": 0.0178, "x": 0.52}),
]
SELECTIONS = ["none", "local:3:alo", "local:5:mi", "local:4:or", "local:8:alo:0.5", "ir"]
LAZY_SPECS = [
    ModelSpec(v, p, Selection.parse(s), sow)
    for v, p in ESTIMATORS
    for s in SELECTIONS
    for sow in (False, True)
]
# on the synthetic stream (the stepwise replay is slow): every estimator plain, with local
# selection and in set-of-words mode; every selection with a few estimators
SOME_SPECS = (
    [ModelSpec(v, p, Selection.parse(s)) for v, p in ESTIMATORS for s in ("none", "local:3:alo")]
    + [
        ModelSpec(v, p, set_of_words=True, selection=Selection.parse("local:5:mi"))
        for v, p in ESTIMATORS
    ]
    + [ModelSpec(v, p, Selection.parse(s)) for v, p in ESTIMATORS[::4] for s in SELECTIONS[2:]]
)


def synthetic_stream(
    n: int, seed: int, spam: float = 0.3, tokenizer: Tokenizer | None = None
) -> tuple[DocBatch, BoolArray]:
    records = to_records(
        generate(
            SynthConfig(
                n_messages=n,
                class_priors={"ham": 1 - spam, "spam": spam},
                vocab_size=400,
                mean_length=8,
                seed=seed,
            )
        )
    )
    corpus = Corpus.tokenize(records, tokenizer or Tokenizer())
    return corpus.batch, np.array([r.label == "spam" for r in records])


def assert_replays_agree(
    batch: DocBatch, is_target: BoolArray, spec: ModelSpec, block_entries: int = BLOCK_ENTRIES
) -> None:
    stepwise = stepwise_scores(batch, is_target, spec)
    replayed = replay_scores(batch, is_target, spec, block_entries=block_entries)
    np.testing.assert_allclose(replayed, stepwise, rtol=0, atol=1e-9, err_msg=str(spec))


@pytest.fixture(scope="module")
def stream() -> tuple[DocBatch, BoolArray]:
    return synthetic_stream(150, seed=4)


@pytest.mark.parametrize("spec", SOME_SPECS, ids=str)
def test_replay_equals_the_stepwise_replay_on_a_synthetic_stream(
    stream: tuple[DocBatch, BoolArray], spec: ModelSpec
) -> None:
    batch, is_target = stream
    assert_replays_agree(batch, is_target, spec)


@pytest.mark.parametrize(
    "spec",
    [
        replace(spec, view=view)
        for spec in (ROBINSON_FISHER_SPEC, ModelSpec("pnbc"), ModelSpec("mnb"))
        for view in VIEWS
    ],
    ids=str,
)
def test_the_replay_of_a_view_equals_the_stepwise_replay_and_reads_that_view_alone(
    spec: ModelSpec,
) -> None:
    tokenizer = Tokenizer(TokenizerConfig(osb=True, char_ngrams=True, char_ngram_chars=60))
    batch, is_target = synthetic_stream(60, seed=9, tokenizer=tokenizer)
    assert_replays_agree(batch, is_target, spec)
    view = VIEWS.index(str(spec.view))
    alone = select_entries(batch, views_of(batch.keys) == view)
    assert len(alone.keys) < len(batch.keys)
    np.testing.assert_array_equal(
        replay_scores(batch, is_target, spec),
        replay_scores(alone, is_target, replace(spec, view=None)),
    )


@pytest.mark.parametrize("block_entries", [1, 7, 100])
@pytest.mark.parametrize("spec", [ROBINSON_FISHER_SPEC, *SOME_SPECS[::7]], ids=str)
def test_a_replay_in_blocks_equals_the_stepwise_replay(
    stream: tuple[DocBatch, BoolArray], spec: ModelSpec, block_entries: int
) -> None:
    # blocks of one document (1 entry), a few and many; the stream has 150 documents of ≈8 tokens
    batch, is_target = stream
    assert_replays_agree(batch, is_target, spec, block_entries=block_entries)


words = st.sampled_from(["free", "win", "cash", "meet", "noon", "bob", "the", "a", "€5"])
docs = st.lists(words, min_size=0, max_size=10)  # empty documents and repeated tokens
streams = st.lists(st.tuples(docs, st.booleans()), min_size=0, max_size=25)


@settings(max_examples=40, deadline=None)
@given(streams, st.sampled_from(LAZY_SPECS), st.integers(1, 40))
def test_replay_equals_the_stepwise_replay_on_small_streams(
    items: list[tuple[list[str], bool]], spec: ModelSpec, block_entries: int
) -> None:
    batch = encode([tokens for tokens, _ in items], Statistics().hasher)
    assert_replays_agree(
        batch, np.array([spam for _, spam in items], dtype=bool), spec, block_entries=block_entries
    )


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.02, 0.6), st.sampled_from(LAZY_SPECS))
@example(
    2069, 0.5, ModelSpec("mnb", {}, Selection.parse("local:5:mi"))
)  # MI ties equal only up to the last bit
def test_replay_equals_the_stepwise_replay_on_seeded_streams(
    seed: int, spam: float, spec: ModelSpec
) -> None:
    batch, is_target = synthetic_stream(60, seed, spam)
    assert_replays_agree(batch, is_target, spec)


def test_messages_before_both_classes_score_zero_and_then_mnb_by_hand() -> None:
    batch = encode(
        [["free", "cash"], ["free"], ["noon"], [], ["free", "noon"]], Statistics().hasher
    )
    scores = replay_scores(batch, np.array([True, True, False, False, True]), ModelSpec("mnb"))
    assert (scores[:3] == 0).all()
    assert scores[3] == pytest.approx(np.log(2 / 1))  # an empty message: the prior odds alone
    # spam: free 2, cash 1 (N_c 3); ham: noon 1 (N_c 1); V = 3; α = 1
    free = np.log(3 / 6) - np.log(1 / 4)
    noon = np.log(1 / 6) - np.log(2 / 4)
    assert scores[4] == pytest.approx(np.log(2 / 2) + free + noon)
    assert (replay_scores(batch, np.ones(5, dtype=bool), ModelSpec("mnb")) == 0).all()


def test_the_replay_is_the_immediate_feedback_protocol() -> None:
    """Scoring message i after learning 0..i-1 by hand gives the replay's score."""
    batch, is_target = synthetic_stream(80, seed=1)
    spec = ModelSpec("pnbc", selection=Selection.parse("local:6:alo"))
    scores = replay_scores(batch, is_target, spec)
    for i in (10, 47, 79):
        stats = Statistics(["spam", "not spam"])
        stats.update(
            select_docs(batch, np.arange(i)), ["spam" if t else "not spam" for t in is_target[:i]]
        )
        alone = (
            Model.build(stats, spec, "spam").score(select_docs(batch, np.array([i]))).binary()[0]
        )
        assert scores[i] == pytest.approx(alone, abs=1e-9)


def test_specs_that_need_the_whole_vocabulary_replay_step_by_step(
    stream: tuple[DocBatch, BoolArray],
) -> None:
    batch, is_target = stream
    for spec in (
        ModelSpec("twcnb"),
        ModelSpec("centroid"),
        ModelSpec("mnb", selection=Selection.parse("global:20")),
    ):
        with pytest.raises(ValueError, match="whole vocabulary"):
            replay_scores(batch, is_target, spec)
        assert np.array_equal(
            online_scores(batch, is_target, spec), stepwise_scores(batch, is_target, spec)
        )


@settings(max_examples=40, deadline=None)
@given(
    streams, st.booleans(), st.sampled_from([TOKEN_STATISTICS, {"DF"}, {"N", "DF"}, {"T", "DF"}])
)
def test_replay_columns_hold_the_statistics_as_of_before_each_message(
    items: list[tuple[list[str], bool]], set_of_words: bool, statistics: set[Statistic]
) -> None:
    """Every statistic computed, T included (no lazy estimator reads it), as `Statistics.counts`
    gives it; the others None (N is DF in set-of-words mode)."""
    batch = encode([tokens for tokens, _ in items], Statistics().hasher)
    is_target = np.array([spam for _, spam in items], dtype=bool)
    in_class = (np.arange(2).reshape(-1, 1) == np.where(is_target, 0, 1)).astype(np.int64)
    history = _History.of(batch, in_class, statistics)
    computed = statistics | {"DF"} | ({"N"} if set_of_words else set())
    spec = ModelSpec("mnb", set_of_words=set_of_words)
    stats = Statistics(["spam", "not spam"])
    for i in range(len(batch)):
        entries = np.arange(batch.indptr[i], batch.indptr[i + 1])
        ids = stats.vocab.lookup(batch.keys[entries])
        seen = ids >= 0
        replayed = history.counts(("spam", "not spam"), np.full(len(entries), i), spec, entries)
        assert (replayed.DF[:, ~seen] == 0).all()  # tokens never learned
        expected = stats.counts("spam", ids[seen], set_of_words)
        for name in ("N", "DF", "T"):  # per token
            if name in computed:
                assert np.array_equal(getattr(replayed, name)[:, seen], getattr(expected, name)), (
                    name
                )
            else:
                assert getattr(replayed, name) is None, name
        for name in (
            "D",
            "Nc",
            "U",
            "V",
        ):  # class aggregates, the same in every column of message i
            got = getattr(replayed, name)
            assert np.array_equal(got, np.broadcast_to(getattr(expected, name), got.shape)), name
        stats.update(select_docs(batch, np.array([i])), ["spam" if is_target[i] else "not spam"])


# --- what the replay computes: the statistics the spec reads -----------------------------------

# every estimator, with the parameters that change what it reads
DECLARED = [
    *ESTIMATORS,
    ("pnbc", {"smoothing": "laplace"}),
    ("centroid", {"norm": "l2"}),
    ("wcnb", {}),
    ("twcnb", {}),
]


@pytest.mark.parametrize("variant, params", DECLARED, ids=str)
def test_an_estimator_reads_only_the_statistics_it_declares(
    stream: tuple[DocBatch, BoolArray], variant: str, params: dict[str, Any]
) -> None:
    """The weights from the declared statistics alone (the others None) are the weights
    from all; an estimator declares it ranks its own clues exactly when its weights have a
    strength."""
    batch, is_target = stream
    stats = Statistics(["spam", "not spam"])
    stats.update(batch, ["spam" if t else "not spam" for t in is_target])
    counts = stats.counts("spam")
    declared = reads_of(variant)
    # the statistics it does not declare it reads, None (keywords of `Counts`, typed each)
    undeclared: dict[str, Any] = dict.fromkeys(TOKEN_STATISTICS - declared.statistics)
    alone = replace(counts, **undeclared)
    full, partial = (estimators.ESTIMATORS[variant](c, **params) for c in (counts, alone))
    for name in ("W", "b", "known", "idf", "strength"):
        np.testing.assert_array_equal(getattr(partial, name), getattr(full, name), err_msg=name)
    assert declared.ranks_clues == (full.strength is not None)


def test_the_replay_computes_only_what_the_spec_reads() -> None:
    assert statistics_read(ROBINSON_FISHER_SPEC) == {"DF"}  # Robinson–Fisher ranks its own clues
    assert statistics_read(
        ModelSpec("robinson_fisher", selection=Selection.parse("local:5:alo"))
    ) == {"DF"}
    assert statistics_read(ModelSpec("mnb")) == {"N", "DF"}
    assert statistics_read(ModelSpec("mnb", set_of_words=True)) == {"DF"}  # N is DF
    assert statistics_read(ModelSpec("centroid", {"norm": "l1"}, Selection.parse("ir"))) == {
        "N",
        "DF",
    }


def test_an_undeclared_estimator_gets_every_statistic_and_a_wrong_declaration_fails(
    stream: tuple[DocBatch, BoolArray], monkeypatch: pytest.MonkeyPatch
) -> None:
    batch, is_target = stream

    # new functions around the estimators, so that they carry no declaration of their own
    def undeclared(c: Counts) -> Weights:
        return estimators.twcnb(c)

    def wrong(c: Counts) -> Weights:
        return estimators.mnb(c)

    def unranked(c: Counts) -> Weights:
        return estimators.robinson_fisher(c)

    monkeypatch.setitem(estimators.ESTIMATORS, "undeclared", undeclared)
    assert statistics_read(ModelSpec("undeclared")) == TOKEN_STATISTICS
    assert statistics_read(
        ModelSpec("robinson_fisher", selection=Selection.parse("local:5:alo"))
    ) == {"DF"}
    monkeypatch.setitem(estimators.ESTIMATORS, "wrong", reads("DF")(wrong))
    with pytest.raises((TypeError, AttributeError), match="NoneType"):
        replay_scores(batch, is_target, ModelSpec("wrong"))
    # one that does not declare it ranks its own clues gets what the selection's ranking reads too
    monkeypatch.setitem(estimators.ESTIMATORS, "unranked", reads("DF")(unranked))
    assert statistics_read(ModelSpec("unranked", selection=Selection.parse("local:5:alo"))) == {
        "N",
        "DF",
    }


def test_replaying_many_specs_gives_each_ones_own_replay() -> None:
    tokenizer = Tokenizer(TokenizerConfig(osb=True, char_ngrams=True, char_ngram_chars=60))
    batch, is_target = synthetic_stream(80, seed=4, tokenizer=tokenizer)
    specs = [
        ROBINSON_FISHER_SPEC,
        replace(ROBINSON_FISHER_SPEC, view="chars"),
        ModelSpec("pnbc", selection=Selection.parse("local:3:alo"), view="chars"),
        ModelSpec("mnb", set_of_words=True, view="pairs"),
        ModelSpec("twcnb"),  # the whole vocabulary: stepwise
        ModelSpec("mnb", view="chars"),
    ]
    seen: list[int] = []

    def progress(docs: Iterable[int]) -> Iterator[int]:
        for i in docs:
            seen.append(i)
            yield i

    together = replay_many(batch, is_target, specs, progress=progress)
    assert seen == list(range(len(batch)))  # the first spec's pass alone
    for i, spec in enumerate(specs):
        np.testing.assert_array_equal(together[:, i], online_scores(batch, is_target, spec))


# --- labels that arrive late ---------------------------------------------------------------


def late(n: int, draws: list[int]) -> np.ndarray:
    """A non-decreasing v with v_i ≤ i from `draws` (how far behind each document is)."""
    visible = np.maximum(np.arange(n) - np.resize(np.asarray(draws or [0]), n), 0)
    return np.minimum(np.maximum.accumulate(visible), np.arange(n)).astype(np.int64)


@settings(max_examples=40, deadline=None)
@given(streams, st.sampled_from(LAZY_SPECS), st.integers(1, 40), st.lists(st.integers(0, 8)))
def test_a_replay_with_late_labels_equals_the_stepwise_replay_with_them(
    items: list[tuple[list[str], bool]], spec: ModelSpec, block_entries: int, draws: list[int]
) -> None:
    batch = encode([tokens for tokens, _ in items], Statistics().hasher)
    is_target = np.array([spam for _, spam in items], dtype=bool)
    visible = late(len(items), draws)
    stepwise = stepwise_scores(batch, is_target, spec, visible=visible)
    replayed = replay_scores(batch, is_target, spec, block_entries=block_entries, visible=visible)
    np.testing.assert_allclose(replayed, stepwise, rtol=0, atol=1e-9, err_msg=str(spec))


@pytest.mark.parametrize("spec", SOME_SPECS[::5], ids=str)
def test_late_labels_on_a_synthetic_stream_and_at_once_the_fast_path(
    stream: tuple[DocBatch, BoolArray], spec: ModelSpec
) -> None:
    batch, is_target = stream
    visible = late(len(is_target), [0, 3, 11, 40])
    np.testing.assert_allclose(
        replay_scores(batch, is_target, spec, visible=visible),
        stepwise_scores(batch, is_target, spec, visible=visible),
        rtol=0,
        atol=1e-9,
    )
    # v_i = i is immediate feedback: the general path agrees with the one that assumes it
    at_once = np.arange(len(is_target), dtype=np.int64)
    np.testing.assert_array_equal(
        replay_scores(batch, is_target, spec, visible=at_once),
        replay_scores(batch, is_target, spec),
    )


def test_late_labels_are_not_yet_evidence() -> None:
    # "win" is spam twice, then a ham; with labels 3 documents late the last "win" is scored on
    # the first document alone, at once it is scored on all three before it
    batch = encode([["win"], ["hi"], ["win"], ["win"], ["hi"], ["win"]], Statistics().hasher)
    is_target = np.array([True, False, True, False, False, True])
    spec = ModelSpec("mnb")
    visible = np.array([0, 0, 0, 0, 1, 2], dtype=np.int64)
    delayed = replay_scores(batch, is_target, spec, visible=visible)
    assert delayed[:5].tolist() == [0.0] * 5  # both classes are learned only from document 5 on
    stats = Statistics(["spam", "not spam"])
    stats.update(select_docs(batch, np.arange(2)), ["spam", "not spam"])
    alone = Model.build(stats, spec, "spam").score(select_docs(batch, np.array([5])))
    assert delayed[5] == pytest.approx(alone.binary()[0])
    assert delayed[5] != pytest.approx(replay_scores(batch, is_target, spec)[5])
