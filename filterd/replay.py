"""The online replay (TREC immediate feedback) of a two-class stream.

Contract: `online_scores(batch, is_target, spec, target)` gives document i of `batch` the
decision score of a model of `spec` built on documents 0..i-1 (target vs the rest, each
learned with its label) — 0 until both classes have a document — as if each document were
scored and then learned, one at a time (`stepwise_scores`, which does exactly that).

Specs whose weights need only their own columns (`not spec.needs_whole_vocabulary`) are
replayed vectorized (`replay_scores`): every entry e = (document i, token w) becomes one
column of a `Counts` holding the statistics of w as of before document i,
    N[c,e], DF[c,e], T[c,e]   sums over the earlier documents of class c that contain w
    D_c, N_c, U_c, V          the class aggregates before document i, per column
so that one estimator call weighs every token of a block of documents, and `score_columns`
(the pipeline of `Model.score`) scores them all. The bias b of each document comes from the same
estimator on columns without statistics, since b depends on the class aggregates only.
Sums are integer (T in fixed point, as `Statistics` keeps it), so the columns hold the very
numbers the stepwise replay reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import numpy as np

from filterd.estimators import ESTIMATORS
from filterd.features import DocBatch, select_docs
from filterd.model import Model, ModelSpec, compile_weights, score_columns
from filterd.stats import Counts, Statistics, fixed_point_log_tf

Progress = Callable[[Iterable], Iterable]

# Entries (document, token) that the vectorized replay weighs at once. Blocks bound the memory
# of its temporaries, and small ones stay in memory already touched: the SpamAssassin corpus
# (1.36 million entries) replays in 0.68 s with 2**16, 0.93 s in one block (new processes, measured).
BLOCK_ENTRIES = 1 << 16


def online_scores(batch: DocBatch, is_target: np.ndarray, spec: ModelSpec, target: str = "spam",
                  progress: Progress = iter) -> np.ndarray:  # fmt: skip
    """(n,) decision scores of the replay of `batch` in its order (see the module docstring);
    vectorized where the spec allows, else document by document (`progress` wraps that loop)."""
    if spec.needs_whole_vocabulary:
        return stepwise_scores(batch, is_target, spec, target, progress)
    return replay_scores(batch, is_target, spec, target)


def stepwise_scores(batch: DocBatch, is_target: np.ndarray, spec: ModelSpec, target: str = "spam",
                    progress: Progress = iter) -> np.ndarray:  # fmt: skip
    """The replay as it reads: score document i with a model of everything learned, learn it."""
    labels = [target if t else f"not {target}" for t in is_target]
    stats = Statistics([target, f"not {target}"])  # learns keys from `batch`: the hasher's seed plays no part
    scores = np.zeros(len(batch))
    lazy = not spec.needs_whole_vocabulary  # weights for the document's own tokens only
    for i in progress(range(len(batch))):
        one = select_docs(batch, np.array([i]))
        if stats.D.min() > 0:  # until both classes have a document there is nothing to score with
            scores[i] = Model.build(stats, spec, target, lazy=lazy).score(one).binary()[0]
        stats.update(one, [labels[i]])
    return scores


def replay_scores(batch: DocBatch, is_target: np.ndarray, spec: ModelSpec, target: str = "spam",
                  block_entries: int = BLOCK_ENTRIES) -> np.ndarray:  # fmt: skip
    """The replay vectorized, a block of about `block_entries` entries at a time (specs that
    weigh columns on their own only)."""
    if spec.needs_whole_vocabulary:
        raise ValueError(f"{spec} needs the whole vocabulary: replay it with stepwise_scores")
    scores = np.zeros(len(batch))
    y = np.where(np.asarray(is_target, dtype=bool), 0, 1)  # row per document: 0 the target, 1 the rest
    in_class = (np.arange(2).reshape(-1, 1) == y).astype(np.int64)  # (2, n) one-hot
    ready = np.flatnonzero(_before(in_class).min(axis=0) > 0)  # both classes seen: a suffix of the stream
    if len(ready) == 0:
        return scores
    history = _History.of(batch, in_class)
    labels = (target, f"not {target}")
    for docs in _blocks(batch, ready, block_entries):
        scores[docs] = _block_scores(batch, history, labels, spec, docs)
    return scores


def _block_scores(batch: DocBatch, history: _History, labels: tuple[str, ...], spec: ModelSpec,
                  docs: np.ndarray) -> np.ndarray:  # fmt: skip
    """Scores of the consecutive documents `docs`: a column for each of their entries whose token
    was seen before (the others carry no evidence), weighed and scored at once."""
    lo, hi = batch.indptr[docs[0]], batch.indptr[docs[-1] + 1]
    columns = lo + np.flatnonzero(history.DF[:, lo:hi].sum(axis=0) > 0)
    doc_of_column = np.searchsorted(batch.indptr, columns, side="right") - 1
    compiled = compile_weights(history.counts(labels, doc_of_column, spec, columns), spec, batch.keys[columns])
    compiled = replace(compiled, weights=replace(compiled.weights, b=_bias(history, labels, docs, spec)))
    ids = np.full(hi - lo, -1, dtype=np.int64)  # the column of each entry of `docs`
    ids[columns - lo] = np.arange(len(columns))
    return score_columns(compiled, spec.selection, labels, select_docs(batch, docs), ids).binary()


def _blocks(batch: DocBatch, docs: np.ndarray, entries: int) -> list[np.ndarray]:
    """`docs` (consecutive) cut into runs of about `entries` entries each (a run starts at each
    document whose first entry passes another multiple of `entries`)."""
    block = (batch.indptr[docs] - batch.indptr[docs[0]]) // entries
    return np.split(docs, np.flatnonzero(np.diff(block)) + 1)


def _bias(history: _History, labels: tuple[str, ...], docs: np.ndarray, spec: ModelSpec) -> np.ndarray:
    """(2, len(docs)) b of each document: the estimator on one column without statistics per
    document, with that document's aggregates (b depends on the aggregates only)."""
    with np.errstate(divide="ignore", invalid="ignore"):  # weights of empty columns may be 0/0: discarded
        return ESTIMATORS[spec.variant](history.counts(labels, docs, spec), **spec.params).b


def _before(per_doc: np.ndarray) -> np.ndarray:
    """Exclusive running sums along the last axis: what came before each position."""
    return np.cumsum(per_doc, axis=-1) - per_doc


def _per_doc(per_entry: np.ndarray, batch: DocBatch) -> np.ndarray:
    """(..., n) sums of entry values over each document's entries (exact for integers)."""
    running = np.cumsum(per_entry, axis=-1)
    total = np.concatenate([np.zeros(per_entry.shape[:-1] + (1,), per_entry.dtype), running], axis=-1)
    return total[..., batch.indptr[1:]] - total[..., batch.indptr[:-1]]


def _token_before(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """(..., nnz) per entry: the sum of `values` over the entries of the same token in earlier
    documents (entries are in document order, and a document holds each token once)."""
    order = np.argsort(keys, kind="stable")  # by token, then document
    sorted_keys = keys[order]
    start = np.ones(len(order), dtype=bool)
    start[1:] = sorted_keys[1:] != sorted_keys[:-1]
    group_start = np.maximum.accumulate(np.where(start, np.arange(len(order)), 0))
    out = np.empty_like(values)
    # One row at a time: the temporaries of one row are reused from the allocator, where those
    # of all rows at once were fresh memory, slow to touch (the replay of the SpamAssassin
    # corpus in a new process: 1.2 → 0.9 s, measured).
    for row in np.ndindex(values.shape[:-1]):
        in_order = values[row][order]
        running = np.cumsum(in_order)
        running -= in_order
        running -= running[group_start]
        out[row][order] = running
    return out


@dataclass(frozen=True)
class _History:
    """Integer statistics as of before each document, target row 0 and the rest row 1."""

    N: np.ndarray  # (2, nnz) per entry (document i, token w): N[c,w] before i
    DF: np.ndarray  # (2, nnz)
    T: np.ndarray  # (2, nnz) fixed point
    D: np.ndarray  # (2, n) per document
    Nc: np.ndarray  # (2, n)
    DFc: np.ndarray  # (2, n) Σ_w DF[c,w]
    U: np.ndarray  # (2, n)
    V: np.ndarray  # (n,)

    @classmethod
    def of(cls, batch: DocBatch, in_class: np.ndarray) -> _History:
        doc = batch.doc_of_entry
        own = in_class.take(doc, axis=1)  # (2, nnz): 1 in the row of the entry's class; C order
        N, DF, T = _token_before(batch.keys, np.stack([own * batch.counts, own, own * fixed_point_log_tf(batch)]))
        first_in_class = own * (DF == 0)  # the token's first document of this class
        first_at_all = (DF.sum(axis=0) == 0).astype(np.int64)
        return cls(N, DF, T, _before(in_class), _before(in_class * _per_doc(batch.counts, batch)),
                   _before(in_class * np.diff(batch.indptr)), _before(_per_doc(first_in_class, batch)),
                   _before(_per_doc(first_at_all, batch)))  # fmt: skip

    def counts(self, labels: tuple[str, ...], doc: np.ndarray, spec: ModelSpec,
               columns: np.ndarray | None = None) -> Counts:  # fmt: skip
        """Columns with the aggregates of documents `doc`: the entries `columns`, or without
        columns one empty column (no statistics) per document."""
        if columns is None:
            N = DF = T = np.zeros((2, len(doc)), dtype=np.int64)
        else:
            N, DF, T = self.N[:, columns], self.DF[:, columns], self.T[:, columns]
        return Counts.from_integers(labels, N, DF, T, self.D[:, doc], self.Nc[:, doc], self.DFc[:, doc],
                                    self.U[:, doc], self.V[doc].reshape(1, -1), spec.set_of_words, full=False)  # fmt: skip
