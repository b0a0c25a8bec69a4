"""The decision scores of several models of one token view, in one pass over its entries.

The fusion scores a message with a dozen components, most of them reading the same view. Each
one's own path (`Model.score_columns_of`) makes about ten numpy passes over the view's entries;
here the components' per-token quantities sit side by side in one table, built with the
models, and a batch costs one gather and one sum per document for all of them:

    table[w] = (q_1(w), …, q_K(w)),   sums[d] = Σ_{e ∈ d} x_e^(k) · table[id(e)]

with, for each component, its quantities:
    Robinson–Fisher   1, ln(1 − f(w)), ln f(w) over its clues: n, −x_s/2, −x_h/2 of
                      `filterd.bayes.model.fisher_logit`
    linear            W[t,w] − W[t̄,w], times the entry's count for the counts transform:
                      s(x) = b_t − b_t̄ + Σ_w x_w (W[t,w] − W[t̄,w])
each zero where the token is no clue of that component (unknown, or weaker than its
minimum strength). A component with a local top-N that some document outgrows also drops, in
that batch, the entries its `local_top` does not keep.

`ViewScores.scores` agrees with the reference, `Model.score_columns_of(...).binary()` of each
model, up to the rounding of sums taken in another order (tests/bayes/test_view_scores.py).
Models it cannot take (`supports`) are scored by their own path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from filterd.bayes.arrays import BoolArray, FloatArray, Int64Array
from filterd.bayes.features import DocBatch
from filterd.bayes.model import Model, fisher_logit
from filterd.bayes.selection import local_top

_FISHER_COLUMNS = 3  # n, Σ ln(1 − f), Σ ln f


def supports(model: Model) -> bool:
    """Whether `ViewScores` can score `model`: a full two-class model whose clues are all its
    selected tokens or a local top-N of them (no IDF transform)."""
    try:
        weights = model.weights
    except ValueError:  # a lazy model: its weights come with each batch
        return False
    selection = model.spec.selection
    return (
        len(weights.labels) == 2
        and weights.b.shape[1] == 1
        and weights.transform in ("counts", "binary")
        and selection.kind in ("none", "local", "global")
    )


@dataclass(frozen=True)
class _Part:
    """One model's place in the table."""

    fisher: bool
    first: int  # its first quantity (a row of the table)
    weighted: bool  # its quantity is multiplied by the entry's count
    bias: float  # b_t − b_t̄ (linear)
    top: int | None  # a local top-N, else None
    min_strength: float
    strength: FloatArray | None  # (V + 1,) the ranking strength, NaN where no clue (top-N)


class ViewScores:
    """The models of one view and statistics version (each `supports`ed), as one table."""

    def __init__(self, models: Sequence[Model]) -> None:
        columns: list[FloatArray] = []
        parts: list[_Part] = []
        for model in models:
            if not supports(model):
                raise ValueError(f"{model.spec} cannot be scored from a table (see supports)")
            parts.append(self._add(model, columns))
        self._parts = tuple(parts)
        # (K, V + 1): a component's column is a contiguous row here, and so is its gather; the
        # last column, all zeros, answers for id −1 (a token without a column)
        self._table = (
            np.hstack([np.vstack(columns), np.zeros((len(columns), 1))]) if columns else None
        )

    @staticmethod
    def _add(model: Model, columns: list[FloatArray]) -> _Part:
        weights, selection = model.weights, model.spec.selection
        first = len(columns)
        local = selection.kind == "local"
        min_strength = selection.min_strength if local else 0.0
        if local or weights.combine == "fisher":
            clue = model.compiled.selected(min_strength)[:-1]
        else:
            clue = weights.known
        if weights.combine == "fisher":
            f = np.clip(weights.W[0], 1e-12, 1 - 1e-12)
            columns += [
                np.where(clue, 1.0, 0.0),
                np.where(clue, np.log1p(-f), 0.0),
                np.where(clue, np.log(f), 0.0),
            ]
            bias = 0.0
        else:
            columns.append(np.where(clue, weights.W[0] - weights.W[1], 0.0))
            bias = float(weights.b[0, 0] - weights.b[1, 0])
        strength = None
        if local:
            ranking = model.compiled.ranking_strength
            strength = np.append(np.where(clue, ranking, np.nan), np.nan)
        return _Part(
            fisher=weights.combine == "fisher",
            first=first,
            weighted=weights.combine != "fisher" and weights.transform == "counts",
            bias=bias,
            top=selection.n if local else None,
            min_strength=min_strength,
            strength=strength,
        )

    def scores(self, batch: DocBatch, ids: Int64Array) -> FloatArray:
        """(n, k) the decision score of each model for each document of `batch` (of this view;
        `ids` its entries' columns, −1 for none, as `Model.columns_of` gives them)."""
        n_docs = len(batch)
        out = np.zeros((n_docs, len(self._parts)))
        if self._table is None:
            return out
        rows = np.where(ids >= 0, ids, self._table.shape[1] - 1)
        values = np.take(self._table, rows, axis=1)
        longest = int(np.diff(batch.indptr).max(initial=0))
        doc: Int64Array | None = None
        for part in self._parts:
            if part.weighted:
                values[part.first] *= batch.counts
            if part.top is not None and part.top < longest:
                assert part.strength is not None
                doc = batch.doc_of_entry if doc is None else doc
                keep = local_top(doc, part.strength[rows], batch.keys, part.top, part.min_strength)
                kept = np.zeros(len(rows))
                kept[keep] = 1.0
                values[part.first : part.first + self._width(part)] *= kept
        self._finish(segment_sums(values, batch.indptr), out)
        return out

    @staticmethod
    def _width(part: _Part) -> int:
        return _FISHER_COLUMNS if part.fisher else 1

    def _finish(self, sums: FloatArray, out: FloatArray) -> None:
        fisher = [i for i, p in enumerate(self._parts) if p.fisher]
        if fisher:
            firsts = np.array([self._parts[i].first for i in fisher])
            n = sums[:, firsts].T.ravel().round().astype(np.int64)
            half_spam = -sums[:, firsts + 1].T.ravel()
            half_ham = -sums[:, firsts + 2].T.ravel()
            logit = fisher_logit(n, half_spam, half_ham)
            out[:, fisher] = logit.reshape(len(fisher), len(sums)).T
        for i, part in enumerate(self._parts):
            if not part.fisher:
                out[:, i] = part.bias + sums[:, part.first]


def segment_sums(values: FloatArray, indptr: Int64Array) -> FloatArray:
    """(n, K) the sums of the columns `indptr[d]:indptr[d + 1]` of `values` (K, m) for each d.

    >>> segment_sums(np.array([[1.0, 2.0, 4.0]]), np.array([0, 2, 2, 3])).tolist()
    [[3.0], [0.0], [4.0]]
    """
    n = len(indptr) - 1
    out = np.zeros((n, values.shape[0]))
    nonempty: BoolArray = indptr[1:] > indptr[:-1]
    if nonempty.any():
        # from each non-empty document's first entry to the next one's: its entries alone
        out[nonempty] = np.add.reduceat(values, indptr[:-1][nonempty], axis=1).T
    return out
