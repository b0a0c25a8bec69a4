"""A scoring model: weights computed once per statistics version, applied to batches.

Scoring a batch: token keys → vocabulary ids → drop unknown tokens → transform the
counts (x_w) → keep the selected tokens (local top-N) → combine:
    linear  s_c(x) = b_c + Σ_w x_w W[c,w]
    fisher  S = 1 − Q(−2Σ ln(1−f(w)); 2n), H = 1 − Q(−2Σ ln f(w); 2n) over the n clues
            (Q the chi-square survival function, as SpamBayes), p = (1+S−H)/2, class scores
            (L/2, −L/2) with L = logit p, computed in log space (`chi2_log_tails`)
The decision score for a target class t is s(x) = s_t(x) − max_{c≠t} s_c(x)
(the log-odds for two linear classes; logit p = log((1+S−H)/(1−S+H)) for Robinson–Fisher).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from filterd.bayes.arrays import BoolArray, FloatArray, Int64Array
from filterd.bayes.estimators import (
    ESTIMATORS,
    Weights,
    check_class_count,
    check_params,
    format_value,
    idf,
    parse_value,
)
from filterd.bayes.features import DocBatch, encode, only_view
from filterd.bayes.selection import STRENGTH_DECIMALS, Selection, global_top, local_top, strength
from filterd.bayes.statistics import Counts, Statistics
from filterd.bayes.vocab import VIEWS, Vocabulary, VocabularySnapshot

# Not an estimator: a logistic combination of several (`filterd.bayes.fusion`), a variant to
# every interface that names one.
FUSION = "fusion"


@dataclass(frozen=True)
class ModelSpec:
    """What to build: an estimator (docs/methods.md name) with parameters, a selection,
    set-of-words mode.

    The product's default is `DEFAULT_SPEC` (the fusion); `parse` reads a spec from its text
    form (CLI options, the configuration's `[model]`). A spec is valid once built: an unknown
    variant is a ValueError, a parameter the variant does not take or a value out of its range a
    `ParamError` naming it (`filterd.bayes.estimators.check_params`); per-class parameters are
    checked against the classes where a model is built (`check_classes`).
    """

    variant: str
    params: Mapping[str, Any] = field(default_factory=dict)
    selection: Selection = field(default_factory=Selection)
    set_of_words: bool = False
    view: str | None = None  # the tokens of one view alone (`VIEWS`), or None: every token

    def __post_init__(self) -> None:
        if self.variant == FUSION:
            if self.params or self.selection.kind != "none" or self.set_of_words or self.view:
                raise ValueError(
                    "fusion takes no parameters, selection, +sow or view: it combines fixed "
                    "components (filterd.bayes.fusion.COMPONENTS)"
                )
            return
        if self.view is not None and self.view not in VIEWS:
            raise ValueError(f"unknown view {self.view!r}: the views are {', '.join(VIEWS)}")
        # the values as the estimator takes them (numbers as floats); raises for an unknown variant
        object.__setattr__(self, "params", check_params(self.variant, self.params))

    def __str__(self) -> str:
        params = ",".join(f"{k}={format_value(v)}" for k, v in sorted(self.params.items()))
        name = (
            self.variant + (f"({params})" if params else "") + ("+sow" if self.set_of_words else "")
        )
        name = name if self.selection.kind == "none" else f"{name}+{self.selection}"
        return name if self.view is None else f"{name}@{self.view}"

    @property
    def view_id(self) -> int | None:
        """The number of the view in token keys (`filterd.bayes.vocab.views_of`), or None."""
        return None if self.view is None else VIEWS.index(self.view)

    @classmethod
    def parse(
        cls, variant: str, params: Mapping[str, Any] | None = None, selection: str = "none"
    ) -> ModelSpec:
        """A spec from text: a variant name (with "+sow" for set-of-words), parameters as text or
        values, a selection; ValueError says what is wrong.

        >>> str(ModelSpec.parse("twcnb+sow", {"alpha": "0.5"}, "local:6"))
        'twcnb(alpha=0.5)+sow+local:6:alo'
        >>> str(ModelSpec.parse(
        ...     "robinson_fisher", {"s": 0.025, "x": 0.52}, "local:1000000:alo:0.18"
        ... ))
        'robinson_fisher(s=0.025,x=0.52)+local:1000000:alo:0.18'
        >>> ModelSpec.parse("pcn", {"A": "foo"})  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        filterd.bayes.estimators.ParamError: invalid value for pcn parameter 'A': 'foo'
        (must be a number > 0 or min)
        """
        values = {k: parse_value(v) if isinstance(v, str) else v for k, v in (params or {}).items()}
        return cls(
            variant.removesuffix("+sow"),
            values,
            Selection.parse(selection),
            variant.endswith("+sow"),
        )

    def check_classes(self, labels: Sequence[str]) -> None:
        """Raises a `ParamError` unless every per-class parameter (UNB's λ) fits `labels`: one
        value, or one per class in their order.

        >>> spec = ModelSpec.parse("unb", {"lam": "1,2,3"})
        >>> spec.check_classes(("spam", "not spam"))  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        filterd.bayes.estimators.ParamError: invalid value for unb parameter 'lam': 3 values for
        2 classes (spam, not spam): give one value, or one per class in that order
        """
        if self.variant != FUSION:
            check_class_count(self.variant, self.params, labels)

    @property
    def needs_whole_vocabulary(self) -> bool:
        """Whether the weights need sums over the whole vocabulary (no per-batch column subsets)."""
        l2_centroid = self.variant == "centroid" and self.params.get("norm", "l2") == "l2"
        return self.variant in ("wcnb", "twcnb") or l2_centroid or self.selection.kind == "global"


# filterd's Robinson–Fisher: s = 0.025, x = 0.52, over every clue of strength |f − 0.5| ≥ 0.18,
# chosen across the shared corpora against the peers (bench/peers; docs/benchmarks.md, "Which
# default model, measured on all corpora?"). The fusion's first component, which decides alone
# until the fusion's first weights; what `filterd tune` tunes and `filterd model create` takes
# parameters for unless told another variant.
ROBINSON_FISHER_SPEC = ModelSpec(
    "robinson_fisher", {"s": 0.025, "x": 0.52}, Selection("local", 1_000_000, "alo", 0.18)
)
# What `filterd run` (`[model]`), `filterd evaluate` and `filterd model create` use unless told
# otherwise: the fusion, which learns from the deployment's own labels how to weigh its
# components (docs/benchmarks.md, "Which components does the fusion combine?").
DEFAULT_SPEC = ModelSpec(FUSION)


@dataclass(frozen=True)
class Compiled:
    """Weights and token strength for some columns (`Counts`), as `spec` asks for them."""

    weights: Weights
    strength: FloatArray | None  # set for every spec that ranks clues (see `ranking_strength`)
    _selected: dict[float, BoolArray] = field(default_factory=dict, compare=False, repr=False)

    @property
    def ranking_strength(self) -> FloatArray:
        """The token strength that ranks clues: `compile_weights` sets it for a local or global
        selection and for a rule that ranks its own clues (Robinson–Fisher)."""
        if self.strength is None:
            raise ValueError("these weights rank no clues: no local or global selection")
        return self.strength

    def selected(self, min_strength: float) -> BoolArray:
        """(m + 1,) mask of the columns whose tokens carry evidence with strength ≥ `min_strength`;
        the last entry (False) answers for id −1, a token without a column. Computed once."""
        mask = self._selected.get(min_strength)
        if mask is None:
            mask = np.append(self.weights.known & (self.ranking_strength >= min_strength), False)
            self._selected[min_strength] = mask
        return mask


def compile_weights(counts: Counts, spec: ModelSpec, keys: Int64Array) -> Compiled:
    """The estimator's weights on `counts` with the selection's strength (global top-N
    applied); `keys` are the columns' token keys, to break ties."""
    weights = ESTIMATORS[spec.variant](counts, **spec.params)
    if spec.set_of_words and weights.transform == "counts":
        weights = replace(weights, transform="binary")
    if spec.selection.kind == "ir" and weights.idf is None:
        weights = replace(weights, idf=idf(counts))
    token_strength = weights.strength
    if token_strength is None and spec.selection.kind in ("local", "global"):
        if len(counts.labels) != 2:
            raise ValueError(
                "local and global selection rank tokens for a target class: give a target"
            )
        token_strength = strength(counts, spec.selection.ranking)
    if token_strength is not None:
        # Equal strengths must tie wherever they are computed: numpy may sum in another order for
        # the whole vocabulary than for a batch's columns, and a last-bit difference would then
        # decide between two tokens that the key should (the lazy model, the full one and the
        # replay would differ). This covers a rule's own ranking (Robinson–Fisher) too.
        token_strength = np.round(token_strength, STRENGTH_DECIMALS)
    if spec.selection.kind == "global":
        assert token_strength is not None  # computed above for every local or global selection
        keep = global_top(token_strength, keys, spec.selection.n)
        weights = replace(weights, W=np.where(keep, weights.W, 0.0), known=weights.known & keep)
    return Compiled(weights, token_strength)


class Model:
    """Scores documents with the weights of one statistics version.

    Built in full (the default), the weights of the whole vocabulary are computed once and
    the model stays valid while the statistics keep learning. Built lazily, weights are
    computed per batch for the batch's tokens only: cheap when statistics change after
    every document (the online replay) or when classes are many; such a model refuses to
    score once its statistics have changed.
    """

    def __init__(
        self,
        spec: ModelSpec,
        target: str | None,
        stats: Statistics,
        lazy: bool,
        vocab: VocabularySnapshot | None = None,
    ) -> None:
        self.spec = spec
        self.target_class = target
        self.hasher = stats.hasher
        self.version = stats.version
        self._stats = stats
        # Lazy: the live vocabulary and no weights (computed per batch); in full: the vocabulary
        # as of the weights, which stay valid while the statistics learn on.
        self._vocab: Vocabulary | VocabularySnapshot
        self._compiled: Compiled | None
        self.labels: tuple[str, ...]
        if lazy:
            if spec.needs_whole_vocabulary:
                raise ValueError(f"{spec} needs the whole vocabulary: build it in full, not lazily")
            self._vocab = stats.vocab
            self._compiled = None
            self.labels = (target, f"not {target}") if target is not None else tuple(stats.labels)
        else:
            view = spec.view_id
            self._vocab = stats.vocab.snapshot(view) if vocab is None else vocab
            keys = (
                stats.vocab.keys.copy()
                if view is None
                else stats.vocab.keys[stats.view_columns(view)]
            )
            self._compiled = compile_weights(
                stats.counts(target, None, spec.set_of_words, view), spec, keys
            )
            self.labels = self._compiled.weights.labels

    @classmethod
    def build(
        cls,
        stats: Statistics,
        spec: ModelSpec,
        target: str | None = None,
        lazy: bool = False,
        vocab: VocabularySnapshot | None = None,
    ) -> Model:
        """A model of `spec` on `stats`; with `target`, on the target-vs-rest view. `vocab`:
        `stats.vocab.snapshot(spec.view_id)` where models of one view share it (full models)."""
        return cls(spec, target, stats, lazy, vocab)

    @property
    def weights(self) -> Weights:
        """The weights of the whole vocabulary (full models only)."""
        return self.compiled.weights

    @property
    def compiled(self) -> Compiled:
        """The weights and token strength of the whole vocabulary (full models only)."""
        if self._compiled is None:
            raise ValueError("a lazy model computes weights per batch")
        return self._compiled

    @property
    def target(self) -> str:
        """The target class of a target-vs-rest model (row 0)."""
        return self.labels[0]

    # --- scoring ----------------------------------------------------------------------------

    def score_tokens(self, docs: Sequence[Sequence[str]]) -> Scores:
        """Score documents given as token lists."""
        return self.score(encode(docs, self.hasher))

    def score(self, batch: DocBatch) -> Scores:
        """Class scores of every document of `batch`, with what each decision rested on (the
        tokens of the spec's view alone, if it names one)."""
        batch = only_view(batch, self.spec.view_id)
        return self.score_columns_of(batch, self.columns_of(batch))

    def columns_of(self, batch: DocBatch) -> Int64Array:
        """The column of each entry of `batch` (−1: none), as `score_columns_of` takes them; the
        same for every full model of one view and statistics version."""
        return self._vocab.lookup(batch.keys)

    def score_columns_of(self, batch: DocBatch, ids: Int64Array) -> Scores:
        """`score(batch)` of a batch of this model's view whose entries' columns are `ids`
        (`columns_of`): one lookup serves the models that share a view."""
        compiled = self._compiled
        if compiled is None:  # a lazy model
            ids = ids.copy()
            if self._stats.version != self.version:
                raise ValueError(
                    "the statistics changed since this lazy model was built: build a new one"
                )
            columns, ids[ids >= 0] = np.unique(ids[ids >= 0], return_inverse=True)
            counts = self._stats.counts(
                self.target_class, columns, self.spec.set_of_words, self.spec.view_id
            )
            compiled = compile_weights(counts, self.spec, self._stats.vocab.keys[columns])
        return score_columns(compiled, self.spec.selection, self.labels, batch, ids)


def score_columns(
    compiled: Compiled,
    selection: Selection,
    labels: tuple[str, ...],
    batch: DocBatch,
    ids: Int64Array,
) -> Scores:
    """Class scores of every document of `batch`, entry e scored with column `ids[e]` of
    `compiled` (−1: a token without a column). Tokens that carry no evidence are dropped, the
    document transformed, the local top-N (or Robinson–Fisher's clues) kept, then combined.
    A bias of shape (C, len(batch)) gives each document its own."""
    w = compiled.weights
    transform = "idf_l2" if selection.kind == "ir" else w.transform
    ranked = selection.kind == "local" or w.combine == "fisher"
    if ranked and transform in ("counts", "binary") and _threshold_only(selection, batch):
        # The default's path: the clues are the tokens of the columns above the minimum strength,
        # found by one look at a mask of the columns, faster than ranking the entries. Same
        # entries, in the same order, as below.
        entry = np.flatnonzero(compiled.selected(selection.min_strength)[ids])
        ranked = False
    else:
        usable = ids >= 0
        usable[usable] = w.known[ids[usable]]
        entry = np.flatnonzero(usable)
    ids, doc = ids[entry], batch.doc_of_entry[entry]
    x = _transformed(transform, w.idf, batch.counts[entry].astype(np.float64), ids, doc, len(batch))
    if ranked:
        n = selection.n if selection.kind == "local" else len(entry)
        strength_of = compiled.ranking_strength[ids]
        keep = local_top(doc, strength_of, batch.keys[entry], n, selection.min_strength)
        entry, ids, doc, x = entry[keep], ids[keep], doc[keep], x[keep]
    if w.combine == "fisher":
        class_scores = _fisher(w.W[0, ids], doc, len(batch))
    else:
        class_scores = _linear(w.W, w.b, ids, x, doc, len(batch))
    return Scores(labels, w, batch, class_scores, entry, ids, doc, x)


def _threshold_only(selection: Selection, batch: DocBatch) -> bool:
    """Whether the clues kept (`local_top`) are simply those of strength ≥ the minimum: no
    document has more tokens than the local top-N keeps (Robinson–Fisher alone keeps them all)."""
    if selection.kind != "local":
        return True
    return (
        len(batch.keys) <= selection.n or int(np.diff(batch.indptr).max(initial=0)) <= selection.n
    )


def _transformed(
    transform: str,
    idf_: FloatArray | None,
    f: FloatArray,
    ids: Int64Array,
    doc: Int64Array,
    n_docs: int,
) -> FloatArray:
    """x_w of the test document: raw counts, presence, or (log-TF·)IDF with L2 norm per document."""
    if transform == "counts":
        return f
    if transform == "binary":
        return np.ones_like(f)
    # the IDF transforms: twcnb's weights carry their IDF, and compile_weights adds it for "ir"
    assert idf_ is not None
    x = idf_[ids] * (np.log1p(f) if transform == "log_tf_idf" else 1.0)
    norms = np.sqrt(np.bincount(doc, weights=x * x, minlength=n_docs))
    normalized: FloatArray = x / np.where(norms > 0, norms, 1.0)[doc]
    return normalized


def _linear(
    W: FloatArray, b: FloatArray, ids: Int64Array, x: FloatArray, doc: Int64Array, n_docs: int
) -> FloatArray:
    """(n_docs, C) b_c + Σ_w x_w W[c,w]; b is (C, 1), or (C, n_docs) with a bias per document."""
    C = len(W)
    contributions = W[:, ids] * x  # (C, m)
    flat = (doc[None, :] * C + np.arange(C)[:, None]).ravel()
    sums = np.bincount(flat, weights=contributions.ravel(), minlength=n_docs * C).reshape(n_docs, C)
    scores: FloatArray = sums + b.T
    return scores


def _fisher(f: FloatArray, doc: Int64Array, n_docs: int) -> FloatArray:
    """(n_docs, 2) class scores (L/2, −L/2), L = logit p, p = (1 + S − H)/2 (module docstring).

    With S = C(x_s), H = C(x_h) the χ² distribution functions of the two statistics and
    Q = 1 − C their survival functions, 1 + S − H = S + Q(x_h) and 1 − S + H = Q(x_s) + H, so
    L = log(S + Q(x_h)) − log(Q(x_s) + H): in log space (`chi2_log_tails`) both ends keep
    distinct values where S − H itself rounds to ±1. A document without clues scores 0."""
    f = np.clip(f, 1e-12, 1 - 1e-12)
    n = np.bincount(doc, minlength=n_docs)
    half_spam = -np.bincount(doc, weights=np.log1p(-f), minlength=n_docs).astype(np.float64)
    half_ham = -np.bincount(doc, weights=np.log(f), minlength=n_docs).astype(np.float64)
    logit = fisher_logit(n, half_spam, half_ham)
    return np.stack([logit / 2, -logit / 2], axis=1)


def fisher_logit(n: Int64Array, half_spam: FloatArray, half_ham: FloatArray) -> FloatArray:
    """L = logit p of documents with n clues and x_s/2 = −Σ ln(1 − f), x_h/2 = −Σ ln f over
    them (see `_fisher`); 0 for a document without clues.

    >>> f = 0.9  # one clue: p = f
    >>> logit = fisher_logit(np.array([0, 1]), -np.log1p(-np.array([f, f])), -np.log([f, f]))
    >>> logit.round(4).tolist(), round(float(np.log(f / (1 - f))), 4)
    ([0.0, 2.1972], 2.1972)
    """
    some = n > 0
    log_q_s, log_c_s = chi2_log_tails(half_spam[some], n[some])
    log_q_h, log_c_h = chi2_log_tails(half_ham[some], n[some])
    logit = np.zeros(len(n))
    logit[some] = np.logaddexp(log_c_s, log_q_h) - np.logaddexp(log_q_s, log_c_h)
    return logit


_UNDERFLOW = -600.0  # below e^−600 ≈ 1e−261 a tail is summed in log space, not taken from scipy
_SERIES_TERMS = 256


def chi2_log_tails(m: FloatArray, n: Int64Array) -> tuple[FloatArray, FloatArray]:
    """(log Q, log C): the log survival and distribution functions of χ² with 2n degrees of
    freedom at 2m (n ≥ 1, m > 0), each exact in relative terms however small it is.

    Both are Poisson tails: Q = P(Poisson(m) < n), C = P(Poisson(m) ≥ n). They are scipy's
    regularized incomplete gamma functions Γ(n, m)/Γ(n) and γ(n, m)/Γ(n) unless below e^−600,
    where they are summed in log space from their largest term outwards (`_log_poisson_tail`):

        Q = e^(−m) m^(n−1)/(n−1)! · Σ_{j<n} Π_{i<j} (n−1−i)/m           (tiny only when m ≫ n)
        C = e^(−m) m^n/n! · Σ_{j≥0} Π_{i≤j} m/(n+i)                      (tiny only when m ≪ n)

    >>> from scipy.stats import chi2
    >>> log_q, log_c = chi2_log_tails(np.array([3.0, 900.0]), np.array([4, 10]))
    >>> bool(np.isclose(log_q[0], chi2.logsf(6.0, 8)) and np.isclose(log_c[0], chi2.logcdf(6.0, 8)))
    True
    >>> round(float(log_q[1]), 3), float(log_c[1])  # Q ≈ e^−851.6: chi2.logsf says −inf
    (-851.57, 0.0)
    """
    # scipy.special on first use: the commands that score no Fisher model start without it
    from scipy.special import gammainc, gammaincc, gammaln

    m = np.asarray(m, dtype=np.float64)
    n = np.asarray(n, dtype=np.int64)
    with np.errstate(divide="ignore"):
        log_q, log_c = np.log(gammaincc(n, m)), np.log(gammainc(n, m))
    log_m = np.log(m)
    low = log_q < _UNDERFLOW
    if low.any():
        k = n[low] - 1  # the largest term, m^k/k! with k = n − 1; then factors (k − i)/m
        i = np.arange(_SERIES_TERMS)
        ratios = np.where(i < k[:, None], np.log(np.maximum(k[:, None] - i, 1)), -np.inf)
        log_q[low] = (
            -m[low] + k * log_m[low] - gammaln(k + 1) + _log_poisson_tail(ratios - log_m[low, None])
        )
    low = log_c < _UNDERFLOW
    if low.any():
        k = n[low]  # the largest term, m^n/n!; then factors m/(n + i)
        i = np.arange(1, _SERIES_TERMS + 1)
        log_c[low] = (
            -m[low]
            + k * log_m[low]
            - gammaln(k + 1)
            + _log_poisson_tail(log_m[low, None] - np.log(k[:, None] + i))
        )
    return log_q, log_c


def _log_poisson_tail(log_ratios: FloatArray) -> FloatArray:
    """log Σ_{j≥0} Π_{i<j} r_i for each row of log r (decreasing ratios below 1), the terms
    beyond the last bounded by a geometric series in the last ratio."""
    log_terms = np.concatenate(
        [np.zeros((len(log_ratios), 1)), np.cumsum(log_ratios, axis=1)], axis=1
    )
    last_ratio = np.exp(log_ratios[:, -1])
    with np.errstate(divide="ignore"):
        rest = log_terms[:, -1] + np.log(last_ratio) - np.log1p(-np.minimum(last_ratio, 0.999))
    total = np.logaddexp.reduce(log_terms[:, :-1], axis=1)
    result: FloatArray = np.logaddexp(total, np.logaddexp(log_terms[:, -1], rest))
    return result


@dataclass(frozen=True)
class Scores:
    """Class scores of a batch (n × C) and the selected tokens they rest on."""

    labels: tuple[str, ...]
    weights: Weights  # the weights the batch was scored with (ids below index their columns)
    batch: DocBatch
    class_scores: FloatArray
    _entry: Int64Array
    _ids: Int64Array
    _doc: Int64Array
    _x: FloatArray

    def binary(self, target: str | None = None) -> FloatArray:
        """(n,) decision scores s_t(x) − max_{c≠t} s_c(x) for `target` (default: the model's
        row 0)."""
        t = 0 if target is None else self.labels.index(target)
        others = np.delete(self.class_scores, t, axis=1)
        decision: FloatArray = self.class_scores[:, t] - others.max(axis=1)
        return decision

    def predict(self) -> list[str]:
        """The highest-scoring class of each document."""
        return [self.labels[i] for i in self.class_scores.argmax(axis=1)]

    def explain(self, i: int, target: str | None = None) -> list[tuple[str, float]]:
        """Document i's selected tokens with their signed contribution to its decision score,
        strongest first: x_w·(W[t,w] − W[c*,w]) against its best competing class c*
        (log(f/(1−f)) for Robinson–Fisher)."""
        lo, hi = np.searchsorted(self._doc, [i, i + 1])
        contribution = self._contributions(lo, hi, target)
        order = np.argsort(-np.abs(contribution), kind="stable")
        return [(self.batch.token(int(self._entry[lo + j])), float(contribution[j])) for j in order]

    def explanations(
        self, limit: int, target: str | None = None, decimals: int | None = None
    ) -> list[list[tuple[str, float]]]:
        """`explain(i)[:limit]` of every document, computed for the whole batch at once
        (contributions rounded to `decimals` if given). The batch must carry its token strings."""
        if self.batch.token_index is None:
            raise ValueError("this batch carries no token strings")
        contribution = self._contributions(0, len(self._entry), target)
        order = np.lexsort((-np.abs(contribution), self._doc))  # by document, strongest first
        starts = np.searchsorted(self._doc, np.arange(len(self.batch)))
        rank = np.arange(len(order)) - starts[self._doc[order]]
        keep = order[rank < limit]
        kept = contribution[keep] if decimals is None else contribution[keep].round(decimals)
        index = self.batch.token_index[self._entry[keep]].tolist()
        pairs = list(zip(map(self.batch.tokens.__getitem__, index), kept.tolist()))
        bounds = np.searchsorted(self._doc[keep], np.arange(len(self.batch) + 1)).tolist()
        return [pairs[lo:hi] for lo, hi in zip(bounds, bounds[1:])]

    def _contributions(self, lo: int, hi: int, target: str | None) -> FloatArray:
        """Signed contributions of the selected entries lo:hi (see `explain`)."""
        ids, x, W = self._ids[lo:hi], self._x[lo:hi], self.weights.W
        if self.weights.combine == "fisher":
            f = np.clip(W[0, ids], 1e-12, 1 - 1e-12)
            log_odds: FloatArray = np.log(f) - np.log1p(-f)
            return log_odds
        t = 0 if target is None else self.labels.index(target)
        rivals = self.class_scores.copy()
        rivals[:, t] = -np.inf
        rival = rivals.argmax(axis=1)[self._doc[lo:hi]]
        against: FloatArray = x * (W[t, ids] - W[rival, ids])
        return against
