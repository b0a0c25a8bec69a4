"""Sufficient statistics of METHODS.md, learned and unlearned a document at a time.

Per (class c, token w):
    N[c,w]  = Σ_{d∈c} f_dw                       term counts
    DF[c,w] = |{d ∈ c : f_dw > 0}|               document frequencies
    T[c,w]  = Σ_{d∈c} t_dw,  t_dw = log(1+f_dw) / ‖log(1+f_d·)‖₂   length-normalized log-TF
and per class D[c] = documents learned. Every estimator is a function of these, so learning
is `+=` of one document's contribution and unlearning is `-=` of the same contribution.

T is kept in fixed point (units of 2⁻²⁴), so that unlearning restores the statistics
exactly and the result of learning a stream does not depend on its order; float sums
would do neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from filterd.features import DocBatch, encode
from filterd.vocab import TokenHasher, Vocabulary

T_SCALE = float(1 << 24)


@dataclass(frozen=True)
class Delta:
    """Current values of every token row changed after some version: applying it is idempotent."""

    version: int
    labels: tuple[str, ...]
    D: np.ndarray  # (C,) documents per class
    keys: np.ndarray  # (k,) token keys
    N: np.ndarray  # (C, k)
    DF: np.ndarray  # (C, k)
    T: np.ndarray  # (C, k) fixed point


class Statistics:
    """Token statistics for any number of classes (labels are strings), dense per class."""

    def __init__(self, labels: Sequence[str] = (), seed: int = 0) -> None:
        self.hasher = TokenHasher(seed)
        self.vocab = Vocabulary()
        self.labels: list[str] = []
        self._label_ids: dict[str, int] = {}
        self.N = np.zeros((0, 0), dtype=np.int64)
        self.DF = np.zeros((0, 0), dtype=np.int64)
        self.T = np.zeros((0, 0), dtype=np.int64)
        self.D = np.zeros(0, dtype=np.int64)
        # whole-vocabulary aggregates, kept up to date so that views of a few columns stay cheap
        self.Nc = np.zeros(0, dtype=np.int64)  # Σ_w N[c,w]
        self.DFc = np.zeros(0, dtype=np.int64)  # Σ_w DF[c,w]
        self.U = np.zeros(0, dtype=np.int64)  # distinct tokens of each class
        self.V = 0  # distinct tokens with any statistic > 0
        self.version = 0
        self._changed_at = np.zeros(0, dtype=np.int64)  # per token: the version of its last change
        for label in labels:
            self.class_id(label)

    # --- learning -------------------------------------------------------------------------

    def learn(self, tokens: Sequence[str], label: str) -> None:
        """Add one document's contribution to class `label`."""
        self.update(encode([tokens], self.hasher), [label], +1)

    def unlearn(self, tokens: Sequence[str], label: str) -> None:
        """Remove one document's contribution from class `label` (exact inverse of `learn`)."""
        self.update(encode([tokens], self.hasher), [label], -1)

    def update(self, batch: DocBatch, labels: Sequence[str], sign: int = +1) -> None:
        """Learn (`sign=+1`) or unlearn (`sign=-1`) every document of `batch` with its label.

        Unlearning what was never learned would drive counts below zero; that raises
        ValueError and leaves the statistics as they were.
        """
        if len(labels) != len(batch):
            raise ValueError(f"{len(batch)} documents but {len(labels)} labels")
        if len(batch) == 0:
            return
        if sign < 0 and (unknown := set(labels) - set(self._label_ids)):
            raise ValueError(f"cannot unlearn documents of classes not learned: {', '.join(sorted(unknown))}")
        doc_class = np.array([self.class_id(label) for label in labels], dtype=np.int64)
        ids = self.vocab.add(batch.keys)
        self._reserve(len(self.vocab))
        rows = doc_class[batch.doc_of_entry]
        t = _fixed_point_log_tf(batch)
        self._add(rows, ids, batch.counts, t, doc_class, sign)
        if sign < 0 and (self.D.min() < 0 or (len(ids) and self.N[rows, ids].min() < 0)):
            self._add(rows, ids, batch.counts, t, doc_class, -sign)
            raise ValueError("cannot unlearn documents that were not learned with these labels")
        self.version += 1
        self._changed_at[ids] = self.version

    def _add(self, rows, ids, counts, t, doc_class, sign: int) -> None:
        touched = np.unique(ids)
        seen_before = self.DF[:, touched] > 0
        np.add.at(self.N, (rows, ids), sign * counts)
        np.add.at(self.DF, (rows, ids), sign)
        np.add.at(self.T, (rows, ids), sign * t)
        np.add.at(self.D, doc_class, sign)
        seen_after = self.DF[:, touched] > 0
        C = len(self.labels)
        self.Nc += np.bincount(rows, weights=counts, minlength=C).astype(np.int64) * sign
        self.DFc += np.bincount(rows, minlength=C) * sign
        self.U += seen_after.sum(axis=1) - seen_before.sum(axis=1)
        self.V += int(seen_after.any(axis=0).sum() - seen_before.any(axis=0).sum())

    # --- classes and capacity -------------------------------------------------------------

    def class_id(self, label: str) -> int:
        """The row of `label`, adding a class the first time a label is seen."""
        cid = self._label_ids.get(label)
        if cid is None:
            cid = len(self.labels)
            self.labels.append(label)
            self._label_ids[label] = cid
            grow = lambda a: np.vstack([a, np.zeros((1, a.shape[1]), dtype=a.dtype)])  # noqa: E731
            self.N, self.DF, self.T = grow(self.N), grow(self.DF), grow(self.T)
            self.D, self.Nc, self.DFc, self.U = (np.append(a, 0) for a in (self.D, self.Nc, self.DFc, self.U))
        return cid

    def _reserve(self, size: int) -> None:
        capacity = self.N.shape[1]
        if size <= capacity:
            return
        new_capacity = max(size, 2 * capacity, 1024)
        widen = lambda a: np.pad(a, ((0, 0), (0, new_capacity - capacity)))  # noqa: E731
        self.N, self.DF, self.T = widen(self.N), widen(self.DF), widen(self.T)
        self._changed_at = np.pad(self._changed_at, (0, new_capacity - capacity))

    # --- sync -----------------------------------------------------------------------------

    def export_delta(self, since: int = 0) -> Delta:
        """Every token row changed after version `since`, with its current values."""
        ids = np.flatnonzero(self._changed_at[: len(self.vocab)] > since)
        return Delta(
            self.version, tuple(self.labels), self.D.copy(), self.vocab.keys[ids].copy(),
            self.N[:, ids], self.DF[:, ids], self.T[:, ids],
        )  # fmt: skip

    def apply_delta(self, delta: Delta) -> None:
        """Bring the rows named by `delta` to its values (idempotent)."""
        rows = np.array([self.class_id(label) for label in delta.labels], dtype=np.int64)
        ids = self.vocab.add(delta.keys)
        self._reserve(len(self.vocab))
        index = np.ix_(rows, ids)
        self.N[index], self.DF[index], self.T[index] = delta.N, delta.DF, delta.T
        self.D[rows] = delta.D
        self.version = max(self.version + 1, delta.version)
        self._changed_at[ids] = self.version
        self._recount()

    def _recount(self) -> None:
        v = len(self.vocab)
        self.Nc, self.DFc = self.N[:, :v].sum(axis=1), self.DF[:, :v].sum(axis=1)
        self.U = np.count_nonzero(self.DF[:, :v], axis=1)
        self.V = int(np.count_nonzero(self.DF[:, :v].sum(axis=0)))

    # --- reading --------------------------------------------------------------------------

    def counts(self, target: str | None = None, columns: np.ndarray | None = None,
               set_of_words: bool = False) -> Counts:  # fmt: skip
        """The statistics as the estimators read them.

        target        rows [target, the rest together] instead of one row per class
        columns       only these vocabulary ids (class aggregates still cover the whole vocabulary)
        set_of_words  Kołcz's mode: a document is the set of its tokens, so N becomes DF
        """
        cols = slice(0, len(self.vocab)) if columns is None else columns
        N, DF, T = self.N[:, cols], self.DF[:, cols], self.T[:, cols]
        D, Nc, U = self.D, (self.DFc if set_of_words else self.Nc), self.U
        labels = tuple(self.labels)
        if target is not None:
            if target not in self._label_ids:
                raise KeyError(f"unknown class {target!r}; classes are {', '.join(self.labels)}")
            t = self._label_ids[target]
            N, DF, T, D, Nc = (_target_and_rest(a, t) for a in (N, DF, T, D, Nc))
            U = np.array([U[t], self._distinct_outside(t)])
            labels = (target, f"not {target}")
        if set_of_words:
            N = DF
        return Counts(labels, N.astype(np.float64), DF.astype(np.float64), T / T_SCALE, D.astype(np.float64),
                      Nc.astype(np.float64), U, self.V, full=columns is None)  # fmt: skip

    def _distinct_outside(self, t: int) -> int:
        """Distinct tokens of all classes but t together."""
        if len(self.labels) == 2:
            return int(self.U[1 - t])
        others = np.delete(self.DF[:, : len(self.vocab)], t, axis=0)
        return int(np.count_nonzero(others.sum(axis=0)))

    def canonical(self) -> dict[str, tuple]:
        """Label → (D, {key: (N, DF, T)}) for the nonzero rows: equal for equal statistics,
        whatever the order of learning or of first appearance of labels and tokens."""
        v = len(self.vocab)
        keys = self.vocab.keys
        out = {}
        for label, c in self._label_ids.items():
            nz = np.flatnonzero(self.DF[c, :v])
            rows = {int(keys[i]): (int(self.N[c, i]), int(self.DF[c, i]), int(self.T[c, i])) for i in nz}
            out[label] = (int(self.D[c]), rows)
        return out


@dataclass(frozen=True)
class Counts:
    """Statistics as floats, as the estimators read them: rows are classes, columns vocabulary ids.

    The columns may be a subset of the vocabulary (`full` is False); the class aggregates
    always describe the whole vocabulary, so that weights computed for a subset of columns
    equal the same columns computed for all. Estimators that need other sums over the whole
    vocabulary (WCNB's normalizer, the L2 centroid) require a full view.
    """

    labels: tuple[str, ...]
    N: np.ndarray  # (C, m) N[c,w]; DF[c,w] in set-of-words mode
    DF: np.ndarray  # (C, m)
    T: np.ndarray  # (C, m)
    D: np.ndarray  # (C,) D_c
    Nc: np.ndarray  # (C,) N_c = Σ_w N[c,w] over the whole vocabulary
    U: np.ndarray  # (C,) distinct tokens of each class
    V: int  # distinct tokens with any statistic > 0
    full: bool = True

    @property
    def known(self) -> np.ndarray:
        """(m,) tokens seen in any learned document; the others carry no evidence."""
        return self.DF.sum(axis=0) > 0

    def complement(self, a: np.ndarray) -> np.ndarray:
        """Row c̄ of a per-class array: the sum over all classes but c."""
        return a.sum(axis=0, keepdims=True) - a

    def require_full(self, what: str) -> None:
        if not self.full:
            raise ValueError(f"{what} needs the whole vocabulary, not a subset of columns")


def _target_and_rest(a: np.ndarray, t: int) -> np.ndarray:
    return np.stack([a[t], a.sum(axis=0) - a[t]])


def _fixed_point_log_tf(batch: DocBatch) -> np.ndarray:
    """t_dw = log(1+f_dw) / ‖log(1+f_d·)‖₂ per entry, in fixed point."""
    log_tf = np.log1p(batch.counts.astype(np.float64))
    doc = batch.doc_of_entry
    norms = np.sqrt(np.bincount(doc, weights=log_tf * log_tf, minlength=len(batch)))
    return np.rint(log_tf / norms[doc] * T_SCALE).astype(np.int64)
