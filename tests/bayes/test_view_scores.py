"""Several models of one view scored from one table (filterd.bayes.view_scores) agree with each
model's own path."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from filterd.bayes import fusion
from filterd.bayes.features import DocBatch, encode, only_view
from filterd.bayes.logistic import learn_steps
from filterd.bayes.model import FUSION, Model, ModelSpec
from filterd.bayes.selection import Selection
from filterd.bayes.statistics import Statistics
from filterd.bayes.view_scores import ViewScores, segment_sums, supports

SPECS = (
    ModelSpec("robinson_fisher", {"s": 0.025}, Selection.parse("local:1000000:alo:0.18")),
    ModelSpec("robinson_fisher", {"s": 0.45, "x": 0.5}, Selection.parse("local:3:alo")),
    ModelSpec("robinson_fisher"),
    ModelSpec("pnbc", selection=Selection.parse("local:2:alo")),
    ModelSpec("pnbc", selection=Selection.parse("local:4:mi:0.01")),
    ModelSpec("mnb"),
    ModelSpec("mnb", set_of_words=True),
    ModelSpec("mnb", selection=Selection.parse("global:5")),
    ModelSpec("cnb"),
    ModelSpec("wmnb", selection=Selection.parse("local:3:or")),
)
WORDS = [f"w{i}" for i in range(12)] + [f"c4:g{i}" for i in range(8)] + ["p a", "p b", "p c"]

documents = st.lists(st.lists(st.sampled_from(WORDS), max_size=14), min_size=1, max_size=12)


def learned(docs: list[list[str]], labels: list[str]) -> Statistics:
    stats = Statistics(["spam", "ham"], seed=5)
    stats.update(encode(docs, stats.hasher), labels)
    return stats


@settings(max_examples=150, deadline=None)
@given(
    documents,
    st.lists(st.booleans(), min_size=12, max_size=12),
    documents.map(lambda docs: [*docs, [], ["never seen", "w1", "w1"]]),
    st.sampled_from([None, 0, 1, 2]),
)
def test_the_table_gives_each_models_own_decision_scores(
    train: list[list[str]], spam: list[bool], test: list[list[str]], view: int | None
) -> None:
    stats = learned(train, ["spam" if s else "ham" for s, _ in zip(spam * 2, train)])
    models = [
        Model.build(stats, ModelSpec(s.variant, s.params, s.selection, s.set_of_words), "spam")
        for s in SPECS
    ]
    models = [m for m in models if supports(m)]
    batch = only_view(encode(test, stats.hasher), view)
    ids = models[0].columns_of(batch)
    together = ViewScores(models).scores(batch, ids)
    for i, model in enumerate(models):
        alone = model.score_columns_of(batch, ids).binary()
        np.testing.assert_allclose(together[:, i], alone, rtol=1e-9, atol=1e-12)


def test_what_a_table_cannot_take_is_refused() -> None:
    stats = learned([["w1", "w2"], ["w3"]], ["spam", "ham"])
    twcnb = Model.build(stats, ModelSpec("twcnb"), "spam")
    lazy = Model.build(stats, ModelSpec("mnb"), "spam", lazy=True)
    assert not supports(twcnb) and not supports(lazy)
    assert supports(Model.build(stats, ModelSpec("mnb"), "spam"))


def test_the_fusion_scores_each_component_as_it_would_alone() -> None:
    rng = np.random.default_rng(3)
    docs = [list(rng.choice(WORDS, size=rng.integers(0, 30))) for _ in range(300)]
    labels = ["spam" if rng.random() < 0.4 else "ham" for _ in range(200)]
    stats = Statistics(["spam", "ham"], seed=5)
    seen = encode(docs[:200], stats.hasher)  # learned with the logistic component's steps
    stats.update(seen, labels, steps=learn_steps(stats, seen, labels, "spam"))
    model = fusion.build_model(stats, ModelSpec(FUSION), "spam")
    assert isinstance(model, fusion.FusionModel)
    batch = encode(docs[200:], stats.hasher)
    np.testing.assert_allclose(
        model.score(batch).components, model.score_each(batch), rtol=1e-9, atol=1e-12
    )


def test_segment_sums_skip_empty_documents_at_either_end() -> None:
    values = np.array([[1.0, 2.0, 3.0], [10.0, 20.0, 30.0]])
    sums = segment_sums(values, np.array([0, 0, 1, 3, 3]))
    assert sums.tolist() == [[0.0, 0.0], [1.0, 10.0], [5.0, 50.0], [0.0, 0.0]]
    assert segment_sums(np.zeros((2, 0)), np.array([0, 0])).tolist() == [[0.0, 0.0]]


def test_an_empty_batch_scores_nothing() -> None:
    stats = learned([["w1", "w2"], ["w3"]], ["spam", "ham"])
    models = [Model.build(stats, spec, "spam") for spec in SPECS[:2]]
    empty = DocBatch(np.zeros(1, dtype=np.int64), np.empty(0, np.int64), np.empty(0, np.int64))
    assert ViewScores(models).scores(empty, np.empty(0, np.int64)).shape == (0, 2)
