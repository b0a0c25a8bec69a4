"""The logistic component: online logistic regression on the presence of a message's tokens.

    z(x) = b + Σ_{w ∈ x} w_w,      b = Σ_c B[c],  w_w = Σ_c W[c,w]
    s_d  = η (y_d − σ(z(d))),      y_d = 1 for a document of the target class, else 0

Every labelled document takes one step of stochastic gradient ascent on the log-likelihood,
w_w ← w_w + s_d for each distinct token w of d and b ← b + s_d, on the weights as they are
when it is learned: in the order of learning, as the TREC spam track's logistic filters did
(Goodman & Yih, CEAS 2006; Cormack, TREC 2007). The steps are kept per class beside the
counts (`filterd.bayes.statistics`: W[c,w] = Σ_{d∈c, w∈d} s_d, B[c] = Σ_{d∈c} s_d), so that
one store, one ledger and one sync serve them, and a document's step is recorded with its
label: unlearning it (a relabel) removes exactly the step it took. Unlike the naive-Bayes
statistics, the weights depend on the order of learning.

Where the naive-Bayes estimators weigh each token by its own counts, the steps fit the tokens
jointly: evidence that one token already carries (a fine amount bin that always means fraud,
the same phrase in every 4-gram of it) is not counted again by the next. The fusion reads z as
one more component (`filterd.bayes.fusion`).

Fixed point: z and the steps in units of 2⁻²⁴ (`SCALE`), every sum over integers, so that the
store's weights and a replay's are equal to the last bit whatever the order of the additions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from filterd.bayes.arrays import BoolArray, FloatArray, Int64Array
from filterd.bayes.features import DocBatch, learned, learned_entries
from filterd.bayes.statistics import T_SCALE, Statistics
from filterd.bayes.view_scores import segment_sums
from filterd.bayes.vocab import VIEWS

SCALE = T_SCALE  # weights, bias and steps in units of 2⁻²⁴
# η: chosen by leaving one corpus out (docs/benchmarks.md, "The logistic component")
RATE = 0.05


def sigmoid(z: float) -> float:
    """σ(z) = 1 / (1 + e^−z), without overflow for any z.

    >>> sigmoid(0.0), sigmoid(-1000.0)
    (0.5, 0.0)
    """
    return 0.5 * (1.0 + math.tanh(z / 2.0))


def step(z: int, target: bool, rate: float = RATE) -> int:
    """s = η (y − σ(z)) in fixed point, for z in fixed point.

    >>> step(0, True) == round(0.025 * SCALE), step(0, False) == -round(0.025 * SCALE)
    (True, True)
    >>> step(50 * int(SCALE), True)  # already sure: no step
    0
    """
    return round(rate * ((1.0 if target else 0.0) - sigmoid(z / SCALE)) * SCALE)


def sequential_steps(
    batch: DocBatch,
    is_target: BoolArray,
    weights: Int64Array,
    bias: int,
    recorded: Sequence[int | None] | None = None,
    rate: float = RATE,
) -> Int64Array:
    """(n,) the steps s_d of the documents of `batch` learned one after another, from the
    weights before the batch: `weights[k]` of the token at position k (the batch's keys are
    positions in `weights`; it is updated in place) and `bias`. A token in several documents
    carries the steps of the earlier ones. A document whose `recorded` step is not None is
    being unlearned (a relabel's old contribution): its step is taken back, and returned as it
    is.

    >>> batch = DocBatch(np.array([0, 1, 2]), np.array([0, 0]), np.array([1, 1]))
    >>> s = sequential_steps(batch, np.array([True, True]), np.zeros(1, np.int64), 0)
    >>> bool(s[0] > s[1] > 0)  # the second learns from weights the first moved
    True
    >>> back = sequential_steps(
    ...     batch, np.array([True, True]), np.zeros(1, np.int64), 0, recorded=[900_000, None]
    ... )
    >>> int(back[0]), bool(back[1] > s[0])  # taken back first: the second starts lower
    (900000, True)
    """
    steps = np.zeros(len(batch), dtype=np.int64)
    for d in range(len(batch)):
        tokens = batch.keys[batch.indptr[d] : batch.indptr[d + 1]]
        taken = None if recorded is None else recorded[d]
        if taken is None:
            s = step(bias + int(weights[tokens].sum()), bool(is_target[d]), rate)
            steps[d] = s
        else:
            steps[d], s = taken, -taken
        weights[tokens] += s
        bias += s
    return steps


def by_position(batch: DocBatch) -> tuple[Int64Array, DocBatch]:
    """(the batch's distinct keys, sorted; the batch with each key replaced by its position
    among them): what `sequential_steps` takes.

    >>> keys, at = by_position(DocBatch(np.array([0, 2, 3]), np.array([9, 4, 9]), np.ones(3)))
    >>> keys.tolist(), at.keys.tolist()
    ([4, 9], [1, 0, 1])
    """
    keys, positions = np.unique(batch.keys, return_inverse=True)
    return keys, DocBatch(batch.indptr, positions.astype(np.int64), batch.counts)


def learn_steps(stats: Statistics, batch: DocBatch, labels: list[str], target: str) -> Int64Array:
    """(n,) the steps of `batch`'s documents learned in order after what `stats` holds
    (`sequential_steps` from its weights), each document as learning adds it
    (`filterd.bayes.features.learned`)."""
    keys, at = by_position(learned(batch))
    ids = stats.vocab.lookup(keys)
    known = ids >= 0
    weights = np.zeros(len(keys), dtype=np.int64)
    weights[known] = stats.logistic_columns(ids[known])
    is_target = np.array([label == target for label in labels], dtype=bool)
    return sequential_steps(at, is_target, weights, int(stats.B.sum()))


def replay_logistic(
    batch: DocBatch,
    is_target: BoolArray,
    visible: Int64Array | None = None,
    rate: float = RATE,
) -> tuple[FloatArray, FloatArray]:
    """(decision, arrival), each (n,): z of message t with the labels of the messages before
    it learned (of the first v_t, with `visible`), and z of each message when its label is
    learned (the step's own z; for messages never learned, z after every label), both in
    units of 1 (not fixed point). The online protocol of `sequential_steps`, one label at a
    time in the stream's order.

    >>> batch = DocBatch(np.arange(5), np.array([7, 8, 7, 8]), np.ones(4, np.int64))
    >>> decision, arrival = replay_logistic(batch, np.array([True, False, True, False]))
    >>> decision.tolist() == arrival.tolist(), bool(decision[2] > 0 > decision[3])
    (True, True)
    """
    keys, at = by_position(batch)
    inverse = at.keys
    # the positions of the tokens each message's step adds to (`features.learned`)
    kept = learned_entries(batch)
    taught = inverse if kept is None else np.where(kept, inverse, len(keys))
    weights = np.zeros(len(keys) + 1, dtype=np.int64)  # the last: a token not learned, kept 0
    bias, done, n = 0, 0, len(batch)
    indptr = batch.indptr
    decision, arrival = np.zeros(n), np.zeros(n)
    for t in range(n + 1):
        upto = n if t == n else (t if visible is None else int(visible[t]))
        while done < upto:
            tokens = taught[indptr[done] : indptr[done + 1]]
            z = bias + int(weights[tokens].sum())
            # the message's score reads all of it, its step what learning it adds
            whole = (
                z
                if kept is None
                else bias + int(weights[inverse[indptr[done] : indptr[done + 1]]].sum())
            )
            arrival[done] = whole / SCALE
            s = step(z, bool(is_target[done]), rate)
            weights[tokens] += s
            weights[-1] = 0
            bias += s
            done += 1
        if t < n:
            decision[t] = (bias + int(weights[inverse[indptr[t] : indptr[t + 1]]].sum())) / SCALE
    return decision, arrival


class LogisticScorer:
    """z of a batch with the weights of one statistics version (copied: later learning does
    not change them)."""

    def __init__(self, stats: Statistics) -> None:
        self._vocab = stats.vocab.snapshot()
        self._weights = stats.logistic_columns(slice(0, len(stats.vocab))).astype(np.float64)
        self._weights /= SCALE
        # each view's weights in the order of its own ids (`Vocabulary.snapshot(view)`)
        self._of_view = {
            view: self._weights[stats.view_columns(view)] for view in range(len(VIEWS))
        }
        self.bias = float(stats.B.sum()) / SCALE

    def score(self, batch: DocBatch) -> FloatArray:
        """(n,) z(x) of every document of `batch` (tokens not in the vocabulary weigh 0)."""
        z: FloatArray = self.bias + _sums(self._weights, batch, self._vocab.lookup(batch.keys))
        return z

    def view_sums(self, batch: DocBatch, ids: Int64Array, view: int) -> FloatArray:
        """(n,) Σ_{w ∈ x} w_w over the tokens of one view, for a batch of that view's tokens
        whose ids in the view's snapshot are `ids` (−1: none), as the fusion's components of the
        view look them up: the sums of every view and the bias are `score`'s z."""
        return _sums(self._of_view[view], batch, ids)


def _sums(weights: FloatArray, batch: DocBatch, ids: Int64Array) -> FloatArray:
    """(n,) the sum of each document's weights (an entry's `weights[id]`, 0 for id −1)."""
    values = np.where(ids >= 0, weights[np.maximum(ids, 0)], 0.0)
    summed: FloatArray = segment_sums(values[None, :], batch.indptr)[:, 0]
    return summed
