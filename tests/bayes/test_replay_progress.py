"""The online replay reports its progress: the `progress` callable sees every document, in order,
and a document's score is ready once the replay has moved past it (so that the bar of
`filterd evaluate --protocol online` moves with the replay)."""

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pytest

from filterd.bayes.arrays import BoolArray, FloatArray
from filterd.bayes.features import DocBatch, encode
from filterd.bayes.model import ROBINSON_FISHER_SPEC, ModelSpec
from filterd.bayes.replay import online_scores
from filterd.bayes.statistics import Statistics

WORDS = ["free", "win", "cash", "meet", "noon", "bob", "prize", "lunch"]


def stream(n: int) -> tuple[DocBatch, BoolArray]:
    rng = np.random.default_rng(0)
    docs = [list(rng.choice(WORDS, size=4)) for _ in range(n)]
    return encode(docs, Statistics().hasher), rng.random(n) < 0.3


class Recorder:
    """A progress callable that remembers the documents it yielded."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    def __call__(self, documents: Iterable[int]) -> Iterator[int]:
        for i in documents:
            self.seen.append(i)
            yield i


# the default (replayed vectorized), a whole-vocabulary spec (stepwise), both with tiny blocks
@pytest.mark.parametrize(
    "spec", [ROBINSON_FISHER_SPEC, ModelSpec("mnb"), ModelSpec("wcnb")], ids=str
)
@pytest.mark.parametrize("n", [0, 1, 40])
def test_the_progress_callable_sees_every_document_in_order(spec: ModelSpec, n: int) -> None:
    batch, is_target = stream(n)
    progress = Recorder()
    scores = online_scores(batch, is_target, spec, progress=progress)
    assert progress.seen == list(range(n))
    np.testing.assert_array_equal(scores, online_scores(batch, is_target, spec))


def test_the_vectorized_replay_scores_a_block_as_progress_reaches_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from filterd.bayes import replay

    batch, is_target = stream(30)
    scored_when: list[int] = []
    real = replay._block_scores

    def block_scores(*args: Any) -> FloatArray:
        scored_when.append(len(progress.seen))
        return real(*args)

    monkeypatch.setattr(replay, "_block_scores", block_scores)
    progress = Recorder()
    # blocks of about two documents (four tokens each): scored one by one as progress advances
    replay.replay_scores(batch, is_target, ModelSpec("mnb"), block_entries=8, progress=progress)
    assert len(scored_when) > 5 and scored_when == sorted(scored_when) and scored_when[0] < 30
