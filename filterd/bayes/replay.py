"""The online replay (TREC immediate feedback) of a two-class stream.

Contract: `online_scores(batch, is_target, spec, target)` gives document i of `batch` the
decision score of a model of `spec` built on documents 0..i-1 (target vs the rest, each
learned with its label) — 0 until both classes have a document — as if each document were
scored and then learned, one at a time (`stepwise_scores`, which does exactly that). With
labels that arrive late, `visible` (non-decreasing, v_i ≤ i: `filterd.evaluation.label_delay`)
says how many documents are learned when document i is scored: the model is built on documents
0..v_i − 1.

Specs whose weights need only their own columns (`not spec.needs_whole_vocabulary`) are
replayed vectorized (`replay_scores`): every entry e = (document i, token w) becomes one
column of a `Counts` holding the statistics of w as of before document i,
    N[c,e], DF[c,e], T[c,e]   sums over the earlier documents of class c that contain w
    D_c, N_c, U_c, V          the class aggregates before document i, per column
so that one estimator call weighs every token of a block of documents, and `score_columns`
(the pipeline of `Model.score`) scores them all. The bias b of each document comes from the same
estimator on columns without statistics, since b depends on the class aggregates only.
Sums are integer (T in fixed point, as `Statistics` keeps it), so the columns hold the very
numbers the stepwise replay reads. With late labels every column holds the statistics as of
before document v_i instead (the documents learned are a prefix, in order). Of N, DF and T only
those the spec reads are summed (`statistics_read`, from the estimators' declarations:
Robinson–Fisher, the default, reads DF alone); the others are None, on which an estimator that
reads them fails.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from filterd.bayes.arrays import BoolArray, FloatArray, Int64Array, IntArray
from filterd.bayes.estimators import ESTIMATORS, TOKEN_STATISTICS, Statistic, reads_of
from filterd.bayes.features import DocBatch, learned_entries, only_view, select_docs
from filterd.bayes.model import Model, ModelSpec, compile_weights, score_columns
from filterd.bayes.statistics import Counts, Statistics, fixed_point_log_tf
from filterd.bayes.vocab import key_runs

# wraps the loop over the documents of the replay (a progress bar), yielding them on; both
# replays iterate over every document through it, in order, as they are scored
Progress = Callable[[Iterable[int]], Iterable[int]]

# Entries (document, token) that the vectorized replay weighs at once. Blocks bound the memory
# of its temporaries, and small ones stay in memory already touched: faster, and with a lower
# peak of memory, than one block for a whole corpus.
BLOCK_ENTRIES = 1 << 16


def online_scores(
    batch: DocBatch,
    is_target: BoolArray,
    spec: ModelSpec,
    target: str = "spam",
    progress: Progress = iter,
    visible: Int64Array | None = None,
) -> FloatArray:
    """(n,) decision scores of the replay of `batch` in its order (see the module docstring);
    vectorized where the spec allows, else document by document (`progress` sees every
    document either way)."""
    if spec.needs_whole_vocabulary:
        return stepwise_scores(batch, is_target, spec, target, progress, visible)
    return replay_scores(batch, is_target, spec, target, progress=progress, visible=visible)


def stepwise_scores(
    batch: DocBatch,
    is_target: BoolArray,
    spec: ModelSpec,
    target: str = "spam",
    progress: Progress = iter,
    visible: Int64Array | None = None,
) -> FloatArray:
    """The replay as it reads: learn the documents whose labels have arrived (all before
    document i, or the first v_i), score document i with a model of them."""
    batch = only_view(batch, spec.view_id)
    labels = [target if t else f"not {target}" for t in is_target]
    # learns keys from `batch`: the hasher's seed plays no part
    stats = Statistics([target, f"not {target}"])
    scores = np.zeros(len(batch))
    lazy = not spec.needs_whole_vocabulary  # weights for the document's own tokens only
    learned = 0
    for i in progress(range(len(batch))):
        upto = i if visible is None else int(visible[i])
        if upto > learned:
            stats.update(select_docs(batch, np.arange(learned, upto)), labels[learned:upto])
            learned = upto
        if stats.D.min() > 0:  # until both classes have a document there is nothing to score with
            one = select_docs(batch, np.array([i]))
            scores[i] = Model.build(stats, spec, target, lazy=lazy).score(one).binary()[0]
    return scores


def replay_scores(
    batch: DocBatch,
    is_target: BoolArray,
    spec: ModelSpec,
    target: str = "spam",
    block_entries: int = BLOCK_ENTRIES,
    progress: Progress = iter,
    visible: Int64Array | None = None,
) -> FloatArray:
    """The replay vectorized, a block of about `block_entries` entries at a time (specs that
    weigh columns on their own only); a block is scored when `progress` reaches its last
    document."""
    if spec.needs_whole_vocabulary:
        raise ValueError(f"{spec} needs the whole vocabulary: replay it with stepwise_scores")
    view = _ViewReplay.of(
        only_view(batch, spec.view_id), is_target, statistics_read(spec), block_entries, visible
    )
    return view.scores(spec, target, progress)


def replay_many(
    batch: DocBatch,
    is_target: BoolArray,
    specs: Sequence[ModelSpec],
    target: str = "spam",
    progress: Progress = iter,
    visible: Int64Array | None = None,
) -> FloatArray:
    """(n, k) `online_scores` of each of `specs` (`progress` sees the first one's pass): the
    vectorized specs of one view share the history of its entries, sorted by token once."""
    seen_by = [progress if i == 0 else iter for i in range(len(specs))]
    out = np.zeros((len(batch), len(specs)))
    by_view: dict[int | None, list[int]] = {}
    for i, spec in enumerate(specs):
        if spec.needs_whole_vocabulary:
            out[:, i] = stepwise_scores(batch, is_target, spec, target, seen_by[i], visible)
        else:
            by_view.setdefault(spec.view_id, []).append(i)
    for view, members in by_view.items():
        read = frozenset().union(*(statistics_read(specs[i]) for i in members))
        replay = _ViewReplay.of(only_view(batch, view), is_target, read, visible=visible)
        for i in members:
            out[:, i] = replay.scores(specs[i], target, seen_by[i])
    return out


@dataclass(frozen=True)
class _ViewReplay:
    """The documents of one view, cut into blocks, and their history: what every vectorized
    spec of the view replays from."""

    batch: DocBatch
    blocks: dict[int, Int64Array]  # the documents of a block, by its last one
    history: _History | None  # None without blocks (one class never seen)

    @classmethod
    def of(
        cls,
        batch: DocBatch,
        is_target: BoolArray,
        statistics: Collection[Statistic],
        block_entries: int = BLOCK_ENTRIES,
        visible: Int64Array | None = None,
    ) -> _ViewReplay:
        y = np.where(np.asarray(is_target, dtype=bool), 0, 1)  # row per document: 0 the target
        in_class = (np.arange(2).reshape(-1, 1) == y).astype(np.int64)  # (2, n) one-hot
        learned = _before(in_class) if visible is None else _before(in_class)[:, visible]
        ready = np.flatnonzero(learned.min(axis=0) > 0)  # both classes learned: a suffix
        blocks = (
            {int(docs[-1]): docs for docs in _blocks(batch, ready, block_entries)}
            if len(ready)
            else {}
        )
        history = _History.of(batch, in_class, statistics, visible) if blocks else None
        return cls(batch, blocks, history)

    def scores(self, spec: ModelSpec, target: str, progress: Progress) -> FloatArray:
        """(n,) the replay of `spec` (its statistics among the history's)."""
        scores = np.zeros(len(self.batch))
        labels = (target, f"not {target}")
        for i in progress(range(len(self.batch))):
            docs = self.blocks.get(i)
            if docs is not None:
                assert self.history is not None  # made whenever there are blocks
                scores[docs] = _block_scores(self.batch, self.history, labels, spec, docs)
        return scores


def statistics_read(spec: ModelSpec) -> frozenset[Statistic]:
    """The per-token statistics that weighing columns for `spec` reads (`compile_weights`), the
    ones the replay sums: its estimator's (`reads_of`), DF (which tokens were seen), and MNB's
    for a local or global selection ranked by ALO unless the estimator ranks its own clues
    (`filterd.bayes.selection.strength`; MI, OR and IDF read DF only). N is DF in set-of-words
    mode."""
    declared = reads_of(spec.variant)
    read: set[Statistic] = {*declared.statistics, "DF"}
    if (
        spec.selection.kind in ("local", "global")
        and spec.selection.ranking == "alo"
        and not declared.ranks_clues
    ):
        read |= reads_of("mnb").statistics
    if spec.set_of_words:
        read.discard("N")
    return frozenset(read)


def _block_scores(
    batch: DocBatch, history: _History, labels: tuple[str, ...], spec: ModelSpec, docs: Int64Array
) -> FloatArray:
    """Scores of the consecutive documents `docs`: a column for each of their entries whose token
    was seen before (the others carry no evidence), weighed and scored at once."""
    lo, hi = batch.indptr[docs[0]], batch.indptr[docs[-1] + 1]
    seen = np.flatnonzero(history.DF[:, lo:hi].sum(axis=0) > 0)
    columns = lo + seen
    doc_of_column = np.repeat(docs, np.diff(batch.indptr[docs[0] : docs[-1] + 2]))[seen]
    compiled = compile_weights(
        history.counts(labels, doc_of_column, spec, columns), spec, batch.keys[columns]
    )
    compiled = replace(
        compiled, weights=replace(compiled.weights, b=_bias(history, labels, docs, spec))
    )
    ids = np.full(hi - lo, -1, dtype=np.int64)  # the column of each entry of `docs`
    ids[columns - lo] = np.arange(len(columns))
    return score_columns(compiled, spec.selection, labels, select_docs(batch, docs), ids).binary()


def _blocks(batch: DocBatch, docs: Int64Array, entries: int) -> list[Int64Array]:
    """`docs` (consecutive) cut into runs of about `entries` entries each (a run starts at each
    document whose first entry passes another multiple of `entries`)."""
    block = (batch.indptr[docs] - batch.indptr[docs[0]]) // entries
    return np.split(docs, np.flatnonzero(np.diff(block)) + 1)


def _bias(
    history: _History, labels: tuple[str, ...], docs: Int64Array, spec: ModelSpec
) -> FloatArray:
    """(2, len(docs)) b of each document: the estimator on one column without statistics per
    document, with that document's aggregates (b depends on the aggregates only)."""
    # weights of empty columns may be 0/0: discarded
    with np.errstate(divide="ignore", invalid="ignore"):
        return ESTIMATORS[spec.variant](history.counts(labels, docs, spec), **spec.params).b


def _before(per_doc: Int64Array) -> Int64Array:
    """Exclusive running sums along the last axis: what came before each position."""
    return np.cumsum(per_doc, axis=-1) - per_doc


def _per_doc(per_entry: IntArray | BoolArray, batch: DocBatch) -> Int64Array:
    """(n,) sums of entry values over each document's entries (exact for integers)."""
    running = np.zeros(len(per_entry) + 1, dtype=np.int64)
    np.cumsum(per_entry, out=running[1:])
    return running[batch.indptr[1:]] - running[batch.indptr[:-1]]


def _token_before(
    values: IntArray, group_start: Int64Array, learned_end: Int64Array | None = None
) -> IntArray:
    """(nnz,) per entry in token order: the sum of `values` (in token order) over the earlier
    entries of the same token, whose first entry is at `group_start` — or, with `learned_end`,
    over its entries from `group_start` up to (not including) `learned_end`."""
    if learned_end is not None:
        total = np.zeros(len(values) + 1, dtype=values.dtype)
        np.cumsum(values, dtype=values.dtype, out=total[1:])
        ended: IntArray = total[learned_end] - total[group_start]
        return ended
    running = np.cumsum(values, dtype=values.dtype)
    running -= values
    running -= running[group_start]
    return running


def _learned_end(
    batch: DocBatch, order: Int64Array, starts: Int64Array, visible: Int64Array
) -> Int64Array:
    """(nnz,) per entry in token order (`order`, runs of one token from `starts`, each in
    document order): where the entries of its token end that belong to the documents learned
    when its document d is scored (those before v_d)."""
    n = len(batch)
    doc = np.repeat(np.arange(n, dtype=np.int64), np.diff(batch.indptr))[order]
    run = np.repeat(np.arange(len(starts), dtype=np.int64), np.diff(starts, append=len(order)))
    # (run, document) in one sortable int64: sorted already, in token order
    at = run * (n + 1)
    ends: Int64Array = np.searchsorted(at + doc, at + visible[doc], side="left")
    return ends


def _document_frequency(
    owners: tuple[IntArray, IntArray], order: Int64Array, group_start: Int64Array
) -> IntArray:
    """(2, nnz) per entry (document i, token w): DF[c,w] over the documents before i, from
    `owners`: per entry, 1 where its document taught the token to the target (row 0) or to
    the rest (row 1)."""
    DF = np.empty((2, len(order)), dtype=np.int32)
    for c, own in enumerate(owners):
        DF[c][order] = _token_before(own[order], group_start)
    return DF


@dataclass(frozen=True)
class _History:
    """Integer statistics as of before each document, target row 0 and the rest row 1; of
    the per-token ones, N and T only if asked for (None otherwise)."""

    DF: IntArray  # (2, nnz) int32 per entry (document i, token w): DF[c,w] before i
    N: Int64Array | None  # (2, nnz)
    T: Int64Array | None  # (2, nnz) fixed point
    D: Int64Array  # (2, n) per document
    Nc: Int64Array  # (2, n)
    DFc: Int64Array  # (2, n) Σ_w DF[c,w]
    U: Int64Array  # (2, n)
    V: Int64Array  # (n,)

    @classmethod
    def of(
        cls,
        batch: DocBatch,
        in_class: Int64Array,
        statistics: Collection[Statistic] = TOKEN_STATISTICS,
        visible: Int64Array | None = None,
    ) -> _History:
        """The history of `batch` (`in_class`: (2, n) one-hot) with DF, and N and T if in
        `statistics` (for Robinson–Fisher, DF alone: less time than all three); with `visible`,
        as of before document v_i for document i. A document teaches the entries that learning
        adds (`filterd.bayes.features.learned`), and is scored on all of them."""
        order, _, starts = key_runs(batch.keys, exact=True)  # by token, then document
        group_start = np.repeat(starts, np.diff(starts, append=len(order)))  # in token order
        learned_end = None if visible is None else _learned_end(batch, order, starts, visible)
        # per entry: 1 in the target class
        in_t = np.repeat(in_class[0].astype(np.int32), np.diff(batch.indptr))
        kept = learned_entries(batch)  # None (the rule): every entry taught
        # per entry: 1 where its document taught the token to the target, to the rest
        owners = (in_t, 1 - in_t) if kept is None else (in_t * kept, (1 - in_t) * kept)
        # DF (the entries) always: U, V and which tokens were seen
        summed: dict[str, Int64Array | None] = {"DF": None}
        if "N" in statistics:
            summed["N"] = batch.counts
        if "T" in statistics:
            summed["T"] = fixed_point_log_tf(batch)
        per_token: dict[str, IntArray] = {}
        for name, values in summed.items():
            # DF fits int32 (it counts documents): half the memory to touch
            out = per_token[name] = np.empty(
                (2, len(order)), dtype=np.int32 if values is None else np.int64
            )
            for c, own in enumerate(owners):  # a row at a time: temporaries are reused
                out[c][order] = _token_before(
                    (own if values is None else own * values)[order], group_start, learned_end
                )
        # U and V count, as each document is learned, the tokens it brings: DF as of then
        DF = per_token["DF"] if visible is None else _document_frequency(owners, order, group_start)
        new_to_class = np.where(in_t, DF[0], DF[1]) == 0
        new_to_all = (DF[0] == 0) & (DF[1] == 0)
        counts, entries = batch.counts, np.diff(batch.indptr)
        if kept is not None:  # what a document brings is what it taught
            new_to_class &= kept
            new_to_all &= kept
            counts, entries = counts * kept, _per_doc(kept, batch)
        U = in_class * _per_doc(new_to_class, batch)  # tokens new to the document's class
        V = _per_doc(new_to_all, batch)  # tokens new to every class
        aggregates = [
            _before(a)
            for a in (in_class, in_class * _per_doc(counts, batch), in_class * entries, U, V)
        ]
        if visible is not None:
            aggregates = [a[..., visible] for a in aggregates]
        D, Nc, DFc, U_before, V_before = aggregates
        return cls(
            per_token["DF"], per_token.get("N"), per_token.get("T"), D, Nc, DFc, U_before, V_before
        )

    def counts(
        self,
        labels: tuple[str, ...],
        doc: Int64Array,
        spec: ModelSpec,
        columns: Int64Array | None = None,
    ) -> Counts:
        """Columns with the aggregates of documents `doc`: the entries `columns`, or without
        columns one empty column (no statistics) per document. A statistic not computed is
        None (N is DF in set-of-words mode)."""
        # take, not a[:, i] (numpy's general fancy indexing): faster
        DF: IntArray
        if columns is None:
            DF = np.zeros((2, len(doc)), dtype=np.int64)
            N, T = (None if a is None else DF for a in (self.N, self.T))
        else:
            DF = self.DF.take(columns, axis=1)
            N, T = (None if a is None else a.take(columns, axis=1) for a in (self.N, self.T))
        D, Nc, DFc, U = (a.take(doc, axis=1) for a in (self.D, self.Nc, self.DFc, self.U))
        return Counts.from_integers(
            labels,
            N,
            DF,
            T,
            D,
            Nc,
            DFc,
            U,
            self.V.take(doc).reshape(1, -1),
            spec.set_of_words,
            full=False,
        )
