"""A scoring model: weights computed once per statistics version, applied to batches.

Scoring a batch: token keys → vocabulary ids → drop unknown tokens → transform the
counts (x_w) → keep the selected tokens (local top-N) → combine:
    linear  s_c(x) = b_c + Σ_w x_w W[c,w]
    fisher  S = 1 − Q(−2Σ ln(1−f(w)); 2n), H = 1 − Q(−2Σ ln f(w); 2n) over the n clues
            (Q the chi-square survival function, as SpamBayes), p = (1+S−H)/2, class scores (p, 1−p)
The decision score for a target class t is s(x) = s_t(x) − max_{c≠t} s_c(x)
(the log-odds for two linear classes; S − H for Robinson–Fisher).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy.special import chdtr

from filterd.estimators import ESTIMATORS, Weights, idf
from filterd.features import DocBatch, encode
from filterd.select import Selection, global_top, local_top, strength
from filterd.stats import Statistics
from filterd.vocab import TokenHasher


@dataclass(frozen=True)
class ModelSpec:
    """What to build: an estimator (METHODS.md name) with parameters, a selection, set-of-words mode."""

    variant: str = "mnb"
    params: Mapping[str, Any] = field(default_factory=dict)
    selection: Selection = Selection()
    set_of_words: bool = False

    def __post_init__(self) -> None:
        if self.variant not in ESTIMATORS:
            raise ValueError(f"unknown variant {self.variant!r}; choose from {', '.join(ESTIMATORS)}")

    def __str__(self) -> str:
        params = ",".join(f"{k}={_format(v)}" for k, v in sorted(self.params.items()))
        name = self.variant + (f"({params})" if params else "") + ("+sow" if self.set_of_words else "")
        return name if self.selection.kind == "none" else f"{name}+{self.selection}"


def _format(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(_format(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


class Model:
    """Weights and selection for one statistics version. Immutable; build a new one to update."""

    def __init__(self, weights: Weights, spec: ModelSpec, hasher: TokenHasher, vocab, token_keys: np.ndarray,
                 token_strength: np.ndarray | None, version: int) -> None:  # fmt: skip
        self.weights = weights
        self.spec = spec
        self.hasher = hasher
        self.version = version
        self._vocab = vocab
        self._token_keys = token_keys
        self._strength = token_strength
        self._transform = "idf_l2" if spec.selection.kind == "ir" else weights.transform

    @classmethod
    def build(cls, stats: Statistics, spec: ModelSpec = ModelSpec(), target: str | None = None) -> Model:
        """Compute the weights of `spec` from `stats`; with `target`, on the target-vs-rest view."""
        counts = stats.counts()
        if spec.set_of_words:
            counts = counts.set_of_words()
        view = counts.binary(target) if target is not None else counts
        weights = ESTIMATORS[spec.variant](view, **spec.params)
        if spec.set_of_words and weights.transform == "counts":
            weights = replace(weights, transform="binary")
        if spec.selection.kind == "ir" and weights.idf is None:
            weights = replace(weights, idf=idf(view))
        token_strength = weights.strength
        if token_strength is None and spec.selection.kind in ("local", "global"):
            if len(view.labels) != 2:
                raise ValueError("local and global selection rank tokens for a target class: give a target")
            token_strength = strength(view, spec.selection.ranking)
        keys = stats.vocab.keys.copy()
        if spec.selection.kind == "global":
            keep = global_top(token_strength, keys, spec.selection.n)
            weights = replace(weights, W=np.where(keep, weights.W, 0.0), known=weights.known & keep)
        return cls(weights, spec, stats.hasher, stats.vocab.snapshot(), keys, token_strength, stats.version)

    @property
    def labels(self) -> tuple[str, ...]:
        return self.weights.labels

    @property
    def target(self) -> str:
        """The target class of a target-vs-rest model (row 0)."""
        return self.labels[0]

    # --- scoring ----------------------------------------------------------------------------

    def score_tokens(self, docs: Sequence[Sequence[str]]) -> Scores:
        """Score documents given as token lists."""
        return self.score(encode(docs, self.hasher))

    def score(self, batch: DocBatch) -> Scores:
        """Class scores of every document of `batch`, with what each decision rested on."""
        w = self.weights
        ids = self._vocab.lookup(batch.keys)
        usable = ids >= 0
        usable[usable] = w.known[ids[usable]]
        entry = np.flatnonzero(usable)
        ids, doc = ids[entry], batch.doc_of_entry[entry]
        x = self._transformed(batch.counts[entry].astype(np.float64), ids, doc, len(batch))
        if self.spec.selection.kind == "local" or w.combine == "fisher":
            n = self.spec.selection.n if self.spec.selection.kind == "local" else len(entry)
            keep = local_top(doc, self._strength[ids], batch.keys[entry], n, self.spec.selection.min_strength)
            entry, ids, doc, x = entry[keep], ids[keep], doc[keep], x[keep]
        if w.combine == "fisher":
            class_scores = _fisher(w.W[0, ids], doc, len(batch))
        else:
            class_scores = _linear(w.W, w.b, ids, x, doc, len(batch))
        return Scores(self, batch, class_scores, entry, ids, doc, x)

    def _transformed(self, f: np.ndarray, ids: np.ndarray, doc: np.ndarray, n_docs: int) -> np.ndarray:
        t = self._transform
        if t == "counts":
            return f
        if t == "binary":
            return np.ones_like(f)
        x = self.weights.idf[ids] * (np.log1p(f) if t == "log_tf_idf" else 1.0)
        norms = np.sqrt(np.bincount(doc, weights=x * x, minlength=n_docs))
        return x / np.where(norms > 0, norms, 1.0)[doc]


def _linear(W: np.ndarray, b: np.ndarray, ids: np.ndarray, x: np.ndarray, doc: np.ndarray, n_docs: int) -> np.ndarray:
    C = len(b)
    contributions = W[:, ids] * x  # (C, m)
    flat = (doc[None, :] * C + np.arange(C)[:, None]).ravel()
    sums = np.bincount(flat, weights=contributions.ravel(), minlength=n_docs * C).reshape(n_docs, C)
    return sums + b


def _fisher(f: np.ndarray, doc: np.ndarray, n_docs: int) -> np.ndarray:
    f = np.clip(f, 1e-12, 1 - 1e-12)
    n = np.bincount(doc, minlength=n_docs)
    spam_stat = -2.0 * np.bincount(doc, weights=np.log1p(-f), minlength=n_docs)
    ham_stat = -2.0 * np.bincount(doc, weights=np.log(f), minlength=n_docs)
    dof = np.maximum(2 * n, 1)
    S = np.where(n > 0, chdtr(dof, spam_stat), 0.0)
    H = np.where(n > 0, chdtr(dof, ham_stat), 0.0)
    p = (1.0 + S - H) / 2.0
    return np.stack([p, 1.0 - p], axis=1)


@dataclass(frozen=True)
class Scores:
    """Class scores of a batch (n × C) and the selected tokens they rest on."""

    model: Model
    batch: DocBatch
    class_scores: np.ndarray
    _entry: np.ndarray
    _ids: np.ndarray
    _doc: np.ndarray
    _x: np.ndarray

    @property
    def labels(self) -> tuple[str, ...]:
        return self.model.labels

    def binary(self, target: str | None = None) -> np.ndarray:
        """(n,) decision scores s_t(x) − max_{c≠t} s_c(x) for `target` (default: the model's row 0)."""
        t = 0 if target is None else self.labels.index(target)
        others = np.delete(self.class_scores, t, axis=1)
        return self.class_scores[:, t] - others.max(axis=1)

    def predict(self) -> list[str]:
        """The highest-scoring class of each document."""
        return [self.labels[i] for i in self.class_scores.argmax(axis=1)]

    def explain(self, i: int, target: str | None = None) -> list[tuple[str, float]]:
        """Document i's selected tokens with their signed contribution to its decision score,
        strongest first: x_w·(W[t,w] − W[c*,w]) against its best competing class c*
        (log(f/(1−f)) for Robinson–Fisher)."""
        lo, hi = np.searchsorted(self._doc, [i, i + 1])
        ids, x = self._ids[lo:hi], self._x[lo:hi]
        W = self.model.weights.W
        if self.model.weights.combine == "fisher":
            f = np.clip(W[0, ids], 1e-12, 1 - 1e-12)
            contribution = np.log(f) - np.log1p(-f)
        else:
            t = 0 if target is None else self.labels.index(target)
            rivals = self.class_scores[i].copy()
            rivals[t] = -np.inf
            contribution = x * (W[t, ids] - W[int(rivals.argmax()), ids])
        order = np.argsort(-np.abs(contribution), kind="stable")
        return [(self.batch.token(int(self._entry[lo + j])), float(contribution[j])) for j in order]
