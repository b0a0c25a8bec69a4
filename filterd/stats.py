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
        np.add.at(self.N, (rows, ids), sign * counts)
        np.add.at(self.DF, (rows, ids), sign)
        np.add.at(self.T, (rows, ids), sign * t)
        np.add.at(self.D, doc_class, sign)

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
            self.D = np.append(self.D, 0)
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

    # --- reading --------------------------------------------------------------------------

    @property
    def n_tokens(self) -> int:
        """V: distinct tokens with any statistic > 0."""
        return int(np.count_nonzero(self.DF[:, : len(self.vocab)].sum(axis=0)))

    def counts(self) -> Counts:
        """The statistics as floats for the estimators, one column per vocabulary id."""
        v = len(self.vocab)
        return Counts(
            labels=tuple(self.labels),
            N=self.N[:, :v].astype(np.float64),
            DF=self.DF[:, :v].astype(np.float64),
            T=self.T[:, :v] / T_SCALE,
            D=self.D.astype(np.float64),
        )

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
    """Statistics as floats, as the estimators read them: rows are classes, columns vocabulary ids."""

    labels: tuple[str, ...]
    N: np.ndarray  # (C, V) N[c,w]; DF[c,w] in set-of-words mode
    DF: np.ndarray  # (C, V)
    T: np.ndarray  # (C, V)
    D: np.ndarray  # (C,)

    @property
    def known(self) -> np.ndarray:
        """(V,) tokens seen in any learned document; the others carry no evidence."""
        return self.DF.sum(axis=0) > 0

    @property
    def V(self) -> int:
        return int(np.count_nonzero(self.known))

    @property
    def Nc(self) -> np.ndarray:
        """(C,) N_c = Σ_w N[c,w]."""
        return self.N.sum(axis=1)

    def complement(self, a: np.ndarray) -> np.ndarray:
        """Row c̄ of a per-class array: the sum over all classes but c."""
        return a.sum(axis=0, keepdims=True) - a

    def binary(self, target: str) -> Counts:
        """Two rows: `target` and all other classes together (its complement)."""
        if target not in self.labels:
            raise KeyError(f"unknown class {target!r}; classes are {', '.join(self.labels)}")
        t = self.labels.index(target)
        pick = lambda a: np.stack([a[t], a.sum(axis=0) - a[t]])  # noqa: E731
        return Counts((target, f"not {target}"), pick(self.N), pick(self.DF), pick(self.T), pick(self.D))

    def set_of_words(self) -> Counts:
        """Kołcz's set-of-words mode: a document is the set of its tokens, so N becomes DF."""
        return Counts(self.labels, self.DF, self.DF, self.T, self.D)


def _fixed_point_log_tf(batch: DocBatch) -> np.ndarray:
    """t_dw = log(1+f_dw) / ‖log(1+f_d·)‖₂ per entry, in fixed point."""
    log_tf = np.log1p(batch.counts.astype(np.float64))
    doc = batch.doc_of_entry
    norms = np.sqrt(np.bincount(doc, weights=log_tf * log_tf, minlength=len(batch)))
    return np.rint(log_tf / norms[doc] * T_SCALE).astype(np.int64)
