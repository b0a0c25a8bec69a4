"""The logistic component's weights in the store (`filterd.bayes.logistic`): each labelled
message's step, taken in commit order on the weights the store holds, equals the replay's to
the last bit; a relabel takes the old step back exactly; syncs carry the weights; models of
other variants, and a learn without a target, take no steps."""

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from filterd.bayes.features import encode
from filterd.bayes.logistic import LogisticScorer, learn_steps, replay_logistic
from filterd.bayes.model import ModelSpec
from filterd.bayes.statistics import Statistics
from filterd.evaluation.synth import SynthConfig, generate
from filterd.store.handle import ModelStore, Store
from filterd.store.labels import LabelledTokens

STREAM = generate(SynthConfig(n_messages=240, signal=0.3, mean_length=8, seed=11))


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    """A migrated SQLite store (the agreement test reads PostgreSQL's weights too)."""
    opened = Store.open(f"sqlite:///{tmp_path / 'filterd.db'}")
    opened.upgrade()
    yield opened
    opened.close()


def learned(store: Store, variant: str, batches: int, target: str | None) -> ModelStore:
    model = store.create_model("default", ModelSpec.parse(variant), seed=5)
    items = [LabelledTokens(r["id"], r["label"], r["text"].split()) for r in STREAM]
    for part in np.array_split(np.arange(len(items)), batches):
        model.learn([items[i] for i in part], holdout_fraction=0.0, target=target)
    return model


def replica(seed: int) -> tuple[Statistics, list[int]]:
    """The stream learned in memory, one message after another, with its steps."""
    stats = Statistics(seed=seed)
    labels = [r["label"] for r in STREAM]
    batch = encode([r["text"].split() for r in STREAM], stats.hasher)
    steps = learn_steps(stats, batch, labels, "spam")
    stats.update(batch, labels, steps=steps)
    return stats, steps.tolist()


def test_the_stores_steps_are_the_replays_to_the_last_bit(store: Store) -> None:
    model = learned(store, "fusion", batches=7, target="spam")
    stats, _ = model.load()
    bias, weights = stats.logistic_weights()
    assert bias != 0 and len(weights) > 10
    in_memory, _ = replica(stats.hasher.seed)
    assert in_memory.logistic_weights() == (bias, weights)  # the integers, every one
    # the scorer's z of each message after the stream: the online replay's once every label
    # is visible
    batch = encode([r["text"].split() for r in STREAM], stats.hasher)
    is_spam = np.array([r["label"] == "spam" for r in STREAM])
    everything = np.full(len(STREAM), len(STREAM), dtype=np.int64)
    after, _ = replay_logistic(batch, is_spam, visible=everything)
    np.testing.assert_allclose(LogisticScorer(stats).score(batch), after, rtol=0, atol=1e-9)


def test_a_relabel_takes_the_old_step_back_exactly(sqlite_store: Store) -> None:
    model = learned(sqlite_store, "fusion", batches=3, target="spam")
    first = STREAM[0]
    flipped = "ham" if first["label"] == "spam" else "spam"
    model.learn([LabelledTokens(first["id"], flipped, first["text"].split())], 0.0, target="spam")
    stats, _ = model.load()
    # in memory: the first message's recorded step taken back, then a step for its new label
    in_memory, steps = replica(stats.hasher.seed)
    one = encode([first["text"].split()], in_memory.hasher)
    in_memory.update(one, [first["label"]], -1, steps=np.array(steps[:1]))
    in_memory.update(one, [flipped], steps=learn_steps(in_memory, one, [flipped], "spam"))
    assert stats.logistic_weights() == in_memory.logistic_weights()
    assert stats.canonical() == in_memory.canonical()


def test_a_message_learned_and_relabelled_in_one_batch_learns_its_last_label(
    sqlite_store: Store,
) -> None:
    model = sqlite_store.create_model("default", ModelSpec.parse("fusion"), seed=5)
    items = [LabelledTokens(r["id"], r["label"], r["text"].split()) for r in STREAM]
    first = STREAM[0]
    flipped = "ham" if first["label"] == "spam" else "spam"
    again = LabelledTokens(first["id"], flipped, first["text"].split())
    model.learn([*items, again], holdout_fraction=0.0, target="spam")
    stats, _ = model.load()
    # in memory: the other messages in order, then the first with its last label
    in_memory = Statistics(seed=stats.hasher.seed)
    labels = [*(r["label"] for r in STREAM[1:]), flipped]
    texts = [r["text"].split() for r in [*STREAM[1:], first]]
    batch = encode(texts, in_memory.hasher)
    in_memory.update(batch, labels, steps=learn_steps(in_memory, batch, labels, "spam"))
    assert stats.logistic_weights() == in_memory.logistic_weights()
    assert stats.canonical() == in_memory.canonical()


@pytest.mark.parametrize(("variant", "target"), [("mnb", "spam"), ("fusion", None)])
def test_no_steps_for_other_variants_or_without_a_target(
    sqlite_store: Store, variant: str, target: str | None
) -> None:
    model = learned(sqlite_store, variant, batches=2, target=target)
    stats, _ = model.load()
    assert stats.logistic_weights() == (0, {})
    assert stats.D.sum() == len(STREAM)


def test_a_sync_carries_the_weights(sqlite_store: Store) -> None:
    model = learned(sqlite_store, "fusion", batches=2, target="spam")
    stats, since = model.load()
    late = generate(SynthConfig(n_messages=40, signal=0.3, mean_length=8, seed=12))
    model.learn(
        [LabelledTokens("late-" + r["id"], r["label"], r["text"].split()) for r in late],
        0.0,
        target="spam",
    )
    model.sync(stats, since)
    assert stats.logistic_weights() == model.load()[0].logistic_weights()
