"""The store learns of a long message what memory learns of it (`filterd.bayes.features.learned`),
and the logistic replay steps on the same tokens."""

import numpy as np
import pytest

from filterd.bayes import features
from filterd.bayes.features import encode
from filterd.bayes.logistic import LogisticScorer, learn_steps, replay_logistic
from filterd.bayes.model import ModelSpec
from filterd.bayes.statistics import Statistics
from filterd.store.handle import Store
from filterd.store.labels import LabelledTokens
from filterd.tokenize import Tokenizer, TokenizerConfig

TOKENIZER = Tokenizer(TokenizerConfig(osb=True, char_ngrams=True, char_ngram_chars=40))


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(features, "LEARNED_PER_VIEW", 4)


STREAM = [
    (TOKENIZER({"text": text}).tokens, label)
    for text, label in [
        ("win a free cash prize now from the lucky draw", "spam"),
        ("lunch at noon with bob and the team tomorrow", "ham"),
        ("claim your free prize today, cash waiting", "spam"),
        ("the meeting notes from noon are attached here", "ham"),
    ]
    * 3
]


def test_the_store_learns_what_memory_learns_and_the_replay_steps_on_it(
    small_limit: None, store: Store
) -> None:
    model = store.create_model("default", ModelSpec.parse("fusion"), seed=5)
    items = [LabelledTokens(f"m{i}", label, tokens) for i, (tokens, label) in enumerate(STREAM)]
    model.learn(items[:5], holdout_fraction=0.0, target="spam")
    model.learn(items[5:], holdout_fraction=0.0, target="spam")
    stored, _ = model.load()
    in_memory = Statistics(seed=stored.hasher.seed)
    labels = [label for _, label in STREAM]
    batch = encode([tokens for tokens, _ in STREAM], in_memory.hasher)
    in_memory.update(batch, labels, steps=learn_steps(in_memory, batch, labels, "spam"))
    assert stored.canonical() == in_memory.canonical()
    assert stored.logistic_weights() == in_memory.logistic_weights()
    everything = np.full(len(STREAM), len(STREAM), dtype=np.int64)
    is_spam = np.array([label == "spam" for label in labels])
    after, _ = replay_logistic(batch, is_spam, visible=everything)
    np.testing.assert_allclose(LogisticScorer(stored).score(batch), after, rtol=0, atol=1e-9)
