"""What learning one message adds is bounded (`filterd.bayes.features.learned`): at most
LEARNED_PER_VIEW distinct tokens of each view, the smallest keys — a sample the model's seed
picks — in memory and in both replays, which still score a message on all of it (the store:
tests/store/test_learning_limit.py)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from filterd.bayes import features
from filterd.bayes.features import encode, learned, learned_entries
from filterd.bayes.model import ModelSpec
from filterd.bayes.replay import replay_scores, stepwise_scores
from filterd.bayes.statistics import Statistics
from filterd.bayes.vocab import VIEWS, views_of
from filterd.tokenize import Tokenizer, TokenizerConfig
from tests.bayes.test_replay import LAZY_SPECS

LIMIT = 4
TOKENIZER = Tokenizer(TokenizerConfig(osb=True, char_ngrams=True, char_ngram_chars=40))


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(features, "LEARNED_PER_VIEW", LIMIT)


def test_a_long_message_teaches_each_views_smallest_keys(small_limit: None) -> None:
    tokens = TOKENIZER({"text": "win a free cash prize now from the lucky draw today"}).tokens
    stats = Statistics(seed=3)
    stats.learn(tokens, "spam")
    batch = encode([tokens], stats.hasher)
    views = views_of(batch.keys)
    for view in range(len(VIEWS)):
        keys = np.sort(batch.keys[views == view])
        assert len(keys) > LIMIT
        known = stats.vocab.lookup(keys) >= 0
        assert known.tolist() == [True] * LIMIT + [False] * (len(keys) - LIMIT)
    other = Statistics(seed=4)  # another seed, another sample
    other.learn(tokens, "spam")
    assert sorted(stats.canonical()["spam"][1]) != sorted(other.canonical()["spam"][1])
    stats.unlearn(tokens, "spam")  # the same sample taken back
    assert stats.D.sum() == 0 and not any(stats.canonical()["spam"][1].values())


def test_a_message_within_the_limit_is_learned_whole() -> None:
    batch = encode([[f"w{i}" for i in range(features.LEARNED_PER_VIEW)]], Statistics().hasher)
    assert learned_entries(batch) is None and learned(batch) is batch
    longer = encode([[f"w{i}" for i in range(features.LEARNED_PER_VIEW + 1)]], Statistics().hasher)
    assert len(learned(longer).keys) == features.LEARNED_PER_VIEW


word = st.sampled_from(["free", "win", "cash", "meet", "noon", "bob", "the", "a", "€5", "x"])
streams = st.lists(
    st.tuples(st.lists(word, min_size=0, max_size=10), st.booleans()), min_size=0, max_size=25
)


@settings(max_examples=40, deadline=None)
@given(streams, st.sampled_from(LAZY_SPECS), st.integers(1, 40), st.lists(st.integers(0, 8)))
def test_the_replay_of_long_messages_equals_the_stepwise_replay(
    items: list[tuple[list[str], bool]], spec: ModelSpec, block_entries: int, draws: list[int]
) -> None:
    with pytest.MonkeyPatch.context() as patch:  # a fixture's would outlive one example
        patch.setattr(features, "LEARNED_PER_VIEW", LIMIT)
        batch = encode([tokens for tokens, _ in items], Statistics().hasher)
        is_target = np.array([spam for _, spam in items], dtype=bool)
        visible = np.minimum(
            np.maximum.accumulate(np.resize(np.array(draws or [0]), len(items))),
            np.arange(len(items)),
        ).astype(np.int64)
        for seen in (None, visible):
            np.testing.assert_allclose(
                replay_scores(batch, is_target, spec, block_entries=block_entries, visible=seen),
                stepwise_scores(batch, is_target, spec, visible=seen),
                rtol=0,
                atol=1e-9,
                err_msg=str(spec),
            )
