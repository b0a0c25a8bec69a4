"""Sufficient statistics of docs/methods.md, learned and unlearned a document at a time.

Per (class c, token w):
    N[c,w]  = Σ_{d∈c} f_dw                       term counts
    DF[c,w] = |{d ∈ c : f_dw > 0}|               document frequencies
    T[c,w]  = Σ_{d∈c} t_dw,  t_dw = log(1+f_dw) / ‖log(1+f_d·)‖₂   length-normalized log-TF
    W[c,w]  = Σ_{d∈c, f_dw>0} s_d                  the logistic weights' steps
and per class D[c] = documents learned and B[c] = Σ_{d∈c} s_d. Every estimator is a function
of N, DF, T and D, so learning is `+=` of one document's contribution and unlearning is `-=`
of the same contribution. s_d is the step of online logistic regression the document took
when it was learned (`filterd.bayes.logistic`), given with it and recorded with its label, so
that unlearning it removes exactly what learning it added; W and B are the only statistics
whose values depend on the order of learning (each step on the weights before it).

T, W and B are kept in fixed point (units of 2⁻²⁴), so that unlearning restores the
statistics exactly and N, DF, T and D do not depend on the order of learning; float sums
would do neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from filterd.bayes.arrays import BoolArray, FloatArray, Int64Array, IntArray
from filterd.bayes.features import DocBatch, encode, learned
from filterd.bayes.matrix import DenseMatrix, SparseMatrix
from filterd.bayes.vocab import VIEWS, TokenHasher, Vocabulary, next_capacity, views_of

T_SCALE = float(1 << 24)
# `Statistics.canonical()`: label → (D, {token key: (N, DF, T)})
Canonical = dict[str, tuple[int, dict[int, tuple[int, int, int]]]]


@dataclass(frozen=True)
class Delta:
    """Current values of every token row changed after some version: applying it is idempotent."""

    version: int
    labels: tuple[str, ...]
    D: Int64Array  # (C,) documents per class
    keys: Int64Array  # (k,) token keys
    N: Int64Array  # (C, k)
    DF: Int64Array  # (C, k)
    T: Int64Array  # (C, k) fixed point
    W: Int64Array  # (C, k) fixed point
    B: Int64Array  # (C,) fixed point


class Statistics:
    """Token statistics for any number of classes (labels are strings).

    Dense storage by default; `sparse=True` keeps only the (token, class) pairs that occur,
    for many classes (see `filterd.bayes.matrix`). Both behave identically.
    """

    def __init__(self, labels: Sequence[str] = (), seed: int = 0, sparse: bool = False) -> None:
        self.hasher = TokenHasher(seed)
        self.vocab = Vocabulary()
        self.storage: DenseMatrix | SparseMatrix = SparseMatrix() if sparse else DenseMatrix()
        self.labels: list[str] = []
        self._label_ids: dict[str, int] = {}
        self.D: Int64Array = np.zeros(0, dtype=np.int64)
        self.B: Int64Array = np.zeros(0, dtype=np.int64)  # Σ_{d∈c} s_d, fixed point
        # Aggregates over each view's tokens (`filterd.bayes.vocab.VIEWS`), kept up to date so
        # that a few columns stay cheap to read; (views, C) and (views,)
        self.Nc_of_view: Int64Array = np.zeros((len(VIEWS), 0), dtype=np.int64)  # Σ_w N[c,w]
        self.DFc_of_view: Int64Array = np.zeros((len(VIEWS), 0), dtype=np.int64)  # Σ_w DF[c,w]
        self.U_of_view: Int64Array = np.zeros((len(VIEWS), 0), dtype=np.int64)  # distinct, per c
        self.V_of_view: Int64Array = np.zeros(len(VIEWS), dtype=np.int64)  # distinct, any class
        self._total()
        self.version = 0
        # per token: the version of its last change
        self._changed_at: Int64Array = np.zeros(0, dtype=np.int64)
        for label in labels:
            self.class_id(label)

    # --- learning -------------------------------------------------------------------------

    def learn(self, tokens: Sequence[str], label: str) -> None:
        """Add one document's contribution to class `label`."""
        self.update(encode([tokens], self.hasher), [label], +1)

    def unlearn(self, tokens: Sequence[str], label: str) -> None:
        """Remove one document's contribution from class `label` (exact inverse of `learn`)."""
        self.update(encode([tokens], self.hasher), [label], -1)

    def update(
        self,
        batch: DocBatch,
        labels: Sequence[str],
        sign: int = +1,
        steps: Int64Array | None = None,
    ) -> None:
        """Learn (`sign=+1`) or unlearn (`sign=-1`) every document of `batch` with its label,
        as learning adds it (`filterd.bayes.features.learned`: at most LEARNED_PER_VIEW tokens
        of each view), and its logistic step s_d (`steps`, fixed point; None: 0, the weights
        unchanged).

        Unlearning what was never learned would drive counts below zero; that raises
        ValueError and leaves the statistics as they were.
        """
        batch = learned(batch)
        if len(labels) != len(batch):
            raise ValueError(f"{len(batch)} documents but {len(labels)} labels")
        if steps is not None and len(steps) != len(batch):
            raise ValueError(f"{len(batch)} documents but {len(steps)} steps")
        if len(batch) == 0:
            return
        if sign < 0 and (unknown := set(labels) - set(self._label_ids)):
            raise ValueError(
                f"cannot unlearn documents of classes not learned: {', '.join(sorted(unknown))}"
            )
        doc_class = np.array([self.class_id(label) for label in labels], dtype=np.int64)
        ids = self.vocab.add(batch.keys)
        self._reserve(len(self.vocab))
        doc = batch.doc_of_entry
        rows = np.repeat(doc_class, np.diff(batch.indptr))  # doc_class[doc], without the gather
        # N, DF, T and W increments as arrays, the ones of DF a broadcast: no (4, n) copy of them
        lengths = np.diff(batch.indptr)
        increments = (
            batch.counts,
            np.broadcast_to(np.int64(1), doc.shape),
            fixed_point_log_tf(batch, doc),
            np.broadcast_to(np.int64(0), doc.shape)
            if steps is None
            else np.repeat(np.asarray(steps, dtype=np.int64), lengths),
        )
        touched = _distinct_ids(ids, len(self.vocab))
        docs = np.bincount(doc_class, minlength=len(self.labels))
        before = self.storage.columns(touched)
        self.storage.add(rows, ids, increments if sign > 0 else tuple(-a for a in increments))
        after = self.storage.columns(touched)
        if sign < 0 and ((docs > self.D).any() or after[:3].min(initial=0) < 0):
            self.storage.add(rows, ids, increments)
            raise ValueError("cannot unlearn documents that were not learned with these labels")
        self.D += sign * docs
        if steps is not None:
            stepped = np.bincount(doc_class, weights=steps, minlength=len(self.labels))
            self.B += sign * np.rint(stepped).astype(np.int64)
        self._account(before, after, views_of(self.vocab.keys[touched]))
        self.version += 1
        self._changed_at[touched] = self.version

    # --- aggregates -----------------------------------------------------------------------

    def _account(self, before: Int64Array, after: Int64Array, views: Int64Array) -> None:
        """Move the aggregates by the change of some columns, (3, C, m) values before and after,
        the columns of `views` (m,)."""
        self.Nc_of_view += _by_view(after[0] - before[0], views)
        self.DFc_of_view += _by_view(after[1] - before[1], views)
        seen_before, seen_after = before[1] > 0, after[1] > 0
        seen = seen_after.astype(np.int64) - seen_before
        self.U_of_view += _by_view(seen, views)
        any_seen = seen_after.any(axis=0).astype(np.int64) - seen_before.any(axis=0)
        self.V_of_view += _by_view(any_seen[None, :], views)[:, 0]
        self._total()

    def _total(self) -> None:
        """The aggregates over every token: the sums of the views'."""
        self.Nc: Int64Array = self.Nc_of_view.sum(axis=0)  # Σ_w N[c,w]
        self.DFc: Int64Array = self.DFc_of_view.sum(axis=0)  # Σ_w DF[c,w]
        self.U: Int64Array = self.U_of_view.sum(axis=0)  # distinct tokens of each class
        self.V = int(self.V_of_view.sum())  # distinct tokens with any statistic > 0

    # --- classes and capacity -------------------------------------------------------------

    def class_id(self, label: str) -> int:
        """The row of `label`, adding a class the first time a label is seen."""
        cid = self._label_ids.get(label)
        if cid is None:
            cid = len(self.labels)
            self.storage.add_class()
            self.labels.append(label)
            self._label_ids[label] = cid
            self.D = np.append(self.D, 0)
            self.B = np.append(self.B, 0)
            self.Nc_of_view, self.DFc_of_view, self.U_of_view = (
                np.pad(a, ((0, 0), (0, 1)))
                for a in (self.Nc_of_view, self.DFc_of_view, self.U_of_view)
            )
            self._total()
        return cid

    def _reserve(self, size: int) -> None:
        self.storage.reserve(size)
        if size > len(self._changed_at):
            grown = next_capacity(size, len(self._changed_at))
            self._changed_at = np.pad(self._changed_at, (0, grown - len(self._changed_at)))

    # --- sync -----------------------------------------------------------------------------

    def export_delta(self, since: int = 0) -> Delta:
        """Every token row changed after version `since`, with its current values."""
        ids = np.flatnonzero(self._changed_at[: len(self.vocab)] > since)
        N, DF, T, W = self.storage.columns(ids)
        keys = self.vocab.keys[ids].copy()
        labels, D, B = tuple(self.labels), self.D.copy(), self.B.copy()
        return Delta(self.version, labels, D, keys, N, DF, T, W, B)

    def apply_delta(self, delta: Delta) -> None:
        """Bring the rows named by `delta` to its values (idempotent)."""
        rows = np.array([self.class_id(label) for label in delta.labels], dtype=np.int64)
        ids = self.vocab.add(delta.keys)
        self._reserve(len(self.vocab))
        before = self.storage.columns(ids)
        self.storage.set_columns(rows, ids, np.stack([delta.N, delta.DF, delta.T, delta.W]))
        self._account(before, self.storage.columns(ids), views_of(delta.keys))
        self.D[rows] = delta.D
        self.B[rows] = delta.B
        self.version = max(self.version + 1, delta.version)
        self._changed_at[ids] = self.version

    def _recount(self) -> None:
        rows, ids, values = self.storage.entries(len(self.vocab))
        C = len(self.labels)
        cell = views_of(self.vocab.keys[ids]) * C + rows  # (view, class) of each entry

        def per_view(weights: Int64Array | None) -> Int64Array:
            sums = np.bincount(cell, weights=weights, minlength=len(VIEWS) * C)
            return sums.astype(np.int64).reshape(len(VIEWS), C)

        self.Nc_of_view, self.DFc_of_view = per_view(values[0]), per_view(values[1])
        self.U_of_view = per_view(None)
        distinct = np.unique(ids)
        self.V_of_view = np.bincount(
            views_of(self.vocab.keys[distinct]), minlength=len(VIEWS)
        ).astype(np.int64)
        self._total()

    # --- reading --------------------------------------------------------------------------

    def counts(
        self,
        target: str | None = None,
        columns: Int64Array | None = None,
        set_of_words: bool = False,
        view: int | None = None,
    ) -> Counts:
        """The statistics as the estimators read them.

        target        rows [target, the rest together] instead of one row per class
        columns       only these vocabulary ids (class aggregates still cover the whole vocabulary,
                      or the whole view)
        set_of_words  Kołcz's mode: a document is the set of its tokens, so N becomes DF
        view          the tokens of one view alone (`filterd.bayes.vocab.VIEWS`): the aggregates
                      are the view's, and without `columns` the columns are its tokens
                      (`view_columns`), in vocabulary order
        """
        whole = columns is None
        if view is not None:
            aggregates = (
                self.D,
                self.Nc_of_view[view],
                self.DFc_of_view[view],
                self.U_of_view[view],
            )
            V: int = int(self.V_of_view[view])
            columns = self.view_columns(view) if columns is None else columns
        else:
            aggregates, V = (self.D, self.Nc, self.DFc, self.U), self.V
        cols = slice(0, len(self.vocab)) if columns is None else columns
        N, DF, T, _ = self.storage.columns(cols)
        D, Nc, DFc, U = (aggregate.reshape(-1, 1) for aggregate in aggregates)
        labels = tuple(self.labels)
        if target is not None:
            if target not in self._label_ids:
                raise KeyError(f"unknown class {target!r}; classes are {', '.join(self.labels)}")
            t = self._label_ids[target]
            N, DF, T, D, Nc, DFc = (_target_and_rest(a, t) for a in (N, DF, T, D, Nc, DFc))
            U = np.array([[U[t, 0]], [self._distinct_outside(t, view)]])
            labels = (target, f"not {target}")
        return Counts.from_integers(labels, N, DF, T, D, Nc, DFc, U, V, set_of_words, full=whole)

    def view_columns(self, view: int) -> Int64Array:
        """The vocabulary ids of the tokens of `view`, ascending."""
        return np.flatnonzero(views_of(self.vocab.keys) == view)

    def _distinct_outside(self, t: int, view: int | None = None) -> int:
        """Distinct tokens (of `view`, or every token) of all classes but t together."""
        if len(self.labels) == 2:
            U = self.U if view is None else self.U_of_view[view]
            return int(U[1 - t])
        rows, ids, _ = self.storage.entries(len(self.vocab))
        outside = ids[rows != t]
        if view is not None:
            outside = outside[views_of(self.vocab.keys[outside]) == view]
        return len(np.unique(outside))

    def logistic_columns(self, columns: Int64Array | slice) -> Int64Array:
        """(m,) w = Σ_c W[c,w] of the given vocabulary ids: a token's logistic weight, fixed
        point."""
        summed: Int64Array = self.storage.columns(columns)[3].sum(axis=0)
        return summed

    def logistic_weights(self) -> tuple[int, dict[int, int]]:
        """(bias Σ_c B[c], {key: Σ_c W[c,w]}) for the tokens whose weight is not 0, fixed point."""
        _, ids, values = self.storage.entries(len(self.vocab))
        weights: dict[int, int] = {}
        for key, w in zip(self.vocab.keys[ids].tolist(), values[3].tolist()):
            weights[key] = weights.get(key, 0) + w
        return int(self.B.sum()), {k: w for k, w in weights.items() if w}

    def canonical(self) -> Canonical:
        """Label → (D, {key: (N, DF, T)}) for the nonzero rows: equal for equal statistics,
        whatever the order of learning, of first appearance of labels and tokens, or the storage
        (the logistic weights, which depend on the order, are `logistic_weights`)."""
        rows, ids, values = self.storage.entries(len(self.vocab))
        keys = self.vocab.keys[ids]
        out: dict[str, tuple[int, dict[int, tuple[int, int, int]]]] = {
            label: (int(self.D[c]), {}) for label, c in self._label_ids.items()
        }
        for r, key, (n, df, t) in zip(rows.tolist(), keys.tolist(), values[:3].T.tolist()):
            out[self.labels[r]][1][key] = (n, df, t)
        return out


def not_ready(labels: Sequence[str], docs: Sequence[int], min_docs: int) -> str | None:
    """Why a model should not decide yet (fewer than two classes, or a class with fewer than
    `min_docs` learned documents), or None when it is ready."""
    if len(labels) < 2:
        return (
            f"needs at least two classes with {min_docs} learned documents each; "
            f"has {len(labels)} class(es)"
        )
    short = [f"{label!r} has {int(d)}" for label, d in zip(labels, docs) if d < min_docs]
    if short:
        return f"needs {min_docs} learned documents per class: " + ", ".join(short)
    return None


@dataclass(frozen=True)
class Counts:
    """Statistics as floats, as the estimators read them: rows are classes, columns tokens.

    The columns may be a subset of the vocabulary (`full` is False); the class aggregates
    always describe the whole vocabulary, so that weights computed for a subset of columns
    equal the same columns computed for all. Estimators that need other sums over the whole
    vocabulary (WCNB's normalizer, the L2 centroid) require a full view.

    The class aggregates broadcast against the (C, m) token columns: D, N_c and U are (C, 1)
    when one set of statistics holds for every column (a model), or (C, m) when each column
    has its own (the online replay, filterd.bayes.replay, where a column is a token of message i
    as of before message i); V is a scalar or (1, m) alike. Estimators write formulas once,
    for both. The replay leaves N and T out (None) for an estimator that declares it does not
    read them (`filterd.bayes.estimators.reads`): estimators read them through `statistic`.
    """

    labels: tuple[str, ...]
    N: FloatArray | None  # (C, m) N[c,w]; DF[c,w] in set-of-words mode; None where not computed
    DF: FloatArray  # (C, m)
    T: FloatArray | None  # (C, m); None where not computed
    D: FloatArray  # (C, 1) or (C, m) D_c
    Nc: FloatArray  # (C, 1) or (C, m) N_c = Σ_w N[c,w] over the whole vocabulary
    U: Int64Array  # (C, 1) or (C, m) distinct tokens of each class
    V: int | Int64Array  # scalar or (1, m) distinct tokens with any statistic > 0
    full: bool = True

    @classmethod
    def from_integers(
        cls,
        labels: tuple[str, ...],
        N: IntArray | None,
        DF: IntArray,
        T: IntArray | None,
        D: Int64Array,
        Nc: Int64Array,
        DFc: Int64Array,
        U: Int64Array,
        V: int | Int64Array,
        set_of_words: bool = False,
        full: bool = True,
    ) -> Counts:
        """Counts from the integer statistics as `Statistics` keeps them (T in fixed point,
        DFc = Σ_w DF[c,w]); N or T None where not computed. Set-of-words mode (Kołcz): a
        document is the set of its tokens, so N becomes DF and N_c becomes DFc."""
        if set_of_words:
            N, Nc = DF, DFc
        return cls(
            labels,
            None if N is None else N.astype(np.float64),
            DF.astype(np.float64),
            None if T is None else T / T_SCALE,
            D.astype(np.float64),
            Nc.astype(np.float64),
            U,
            V,
            full,
        )

    def statistic(self, name: Literal["N", "T"]) -> FloatArray:
        """The per-token statistic `name` (`N` or `T`) for an estimator that reads it; TypeError
        where it was not computed (None: the estimator does not declare that it reads it)."""
        values = self.N if name == "N" else self.T
        if values is None:
            raise TypeError(
                f"Counts.{name} is None (NoneType): not computed, as the estimator does not"
                f" declare that it reads {name} (filterd.bayes.estimators.reads)"
            )
        return values

    @property
    def known(self) -> BoolArray:
        """(m,) tokens seen in any learned document; the others carry no evidence."""
        seen: BoolArray = self.DF.sum(axis=0) > 0
        return seen

    def complement(self, a: FloatArray) -> FloatArray:
        """Row c̄ of a per-class array: the sum over all classes but c."""
        total: FloatArray = a.sum(axis=0, keepdims=True)
        return total - a

    def require_full(self, what: str) -> None:
        if not self.full:
            raise ValueError(f"{what} needs the whole vocabulary, not a subset of columns")


def _by_view(a: Int64Array, views: Int64Array) -> Int64Array:
    """(views, C) the sums of the (C, m) columns `a` over the columns of each view."""
    C = len(a)
    cell = (views[None, :] * C + np.arange(C)[:, None]).ravel()
    sums = np.bincount(cell, weights=a.ravel(), minlength=len(VIEWS) * C)
    return np.rint(sums).astype(np.int64).reshape(len(VIEWS), C)


def _target_and_rest(a: Int64Array, t: int) -> Int64Array:
    if len(a) == 2:  # the rest is the other row (integers: the same as summing)
        return a[[t, 1 - t]]
    return np.stack([a[t], a.sum(axis=0) - a[t]])


def fixed_point_log_tf(batch: DocBatch, doc: Int64Array | None = None) -> Int64Array:
    """t_dw = log(1+f_dw) / ‖log(1+f_d·)‖₂ per entry, in fixed point (`doc`: batch.doc_of_entry,
    if the caller has it)."""
    # in place, and the norms repeated rather than gathered: the same operations, fewer copies
    log_tf = batch.counts.astype(np.float64)
    np.log1p(log_tf, out=log_tf)
    doc = batch.doc_of_entry if doc is None else doc
    norms = np.sqrt(np.bincount(doc, weights=log_tf * log_tf, minlength=len(batch)))
    t: FloatArray = np.divide(log_tf, np.repeat(norms, np.diff(batch.indptr)), out=log_tf)
    t *= T_SCALE
    return np.rint(t, out=t).astype(np.int64)


def _distinct_ids(ids: Int64Array, size: int) -> Int64Array:
    """The sorted distinct values of `ids`, each in [0, size)."""
    if len(ids) * 16 < size:  # a few documents in a large vocabulary (the daemon's learner)
        return np.unique(ids)
    # a mask of the vocabulary: much faster than np.unique for many entries
    seen = np.zeros(size, dtype=bool)
    seen[ids] = True
    return np.flatnonzero(seen)
