"""The estimators of docs/methods.md: pure functions from statistics (`Counts`) to `Weights`.

A linear model scores class c as  s_c(x) = b_c + Σ_w x_w W[c,w],  where x is the test
document after its `transform` (raw counts f_w, binary presence, or log-TF·IDF with L2
norm). Robinson–Fisher is the one non-linear rule: it combines per-token probabilities
with Fisher's chi-square method (`combine="fisher"`).

Tokens with no statistics carry no evidence: their weights are 0 in every estimator.
The bias b depends on the class aggregates only (the online replay relies on it), and
takes their shape: (C, 1), or (C, m) where every column has aggregates of its own.
Each estimator declares the per-token statistics it reads (`reads`): the online replay
computes only those, and gives the others as None, on which any arithmetic fails.
Names follow docs/methods.md: N, DF, T, D, N_c, V, θ̃ (theta_c for the complement), λ, γ.
"""

from __future__ import annotations

import inspect
import math
import numbers
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypeVar, get_args

import numpy as np

from filterd.bayes.arrays import BoolArray, FloatArray
from filterd.bayes.statistics import Counts

Transform = Literal["counts", "binary", "log_tf_idf"]
Combine = Literal["linear", "fisher"]
Statistic = Literal["N", "DF", "T"]  # the per-token statistics of `Counts`
TOKEN_STATISTICS: frozenset[Statistic] = frozenset(("N", "DF", "T"))


@dataclass(frozen=True)
class Weights:
    labels: tuple[str, ...]
    W: FloatArray  # (C, V); for "fisher", W[0] = f(w) of the target class, W[1] = 1 − f(w)
    b: FloatArray  # (C, 1) b_c; (C, n) for n documents that each have their own (the online replay)
    known: BoolArray  # (V,) tokens that carry evidence
    transform: Transform = "counts"
    combine: Combine = "linear"
    idf: FloatArray | None = None  # (V,) for the log_tf_idf transform
    strength: FloatArray | None = None  # (V,) a rule's own clue ranking (Robinson–Fisher)


def _log(a: FloatArray | float) -> FloatArray:
    with np.errstate(divide="ignore"):
        out: FloatArray = np.log(a)
    return out


def _weights(c: Counts, W: FloatArray, b: FloatArray) -> Weights:
    known = c.known
    W = np.where(known, W, 0.0)
    return Weights(c.labels, W, np.asarray(b, dtype=np.float64), known)


def _log_prior(c: Counts) -> FloatArray:
    """b_c = log(D_c / D)."""
    return _log(c.D / c.D.sum(axis=0, keepdims=True))


def _log_prior_odds(c: Counts) -> FloatArray:
    """b_c = log(D_c / D_c̄)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        odds: FloatArray = _log(c.D) - _log(c.complement(c.D))
    return odds


def _no_prior(c: Counts) -> FloatArray:
    """b_c = 0."""
    return np.zeros_like(c.D)


def _safe_divide(a: FloatArray, b: FloatArray) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1.0), 0.0)


# --- what an estimator reads --------------------------------------------------------------------


@dataclass(frozen=True)
class Reads:
    """What weighing with an estimator reads of the per-token statistics (`known` reads DF)."""

    statistics: frozenset[Statistic] = TOKEN_STATISTICS
    # its weights rank their own clues (`Weights.strength`): selection reads no more
    ranks_clues: bool = False


Estimator = TypeVar("Estimator", bound=Callable[..., Weights])
_READS: dict[Callable[..., Weights], Reads] = {}


def reads(*statistics: Statistic, ranks_clues: bool = False) -> Callable[[Estimator], Estimator]:
    """Declares what the estimator it decorates reads (`reads_of`); an estimator without a
    declaration reads every statistic."""

    def declare(estimator: Estimator) -> Estimator:
        _READS[estimator] = Reads(frozenset(statistics), ranks_clues)
        return estimator

    return declare


# --- what an estimator's parameters may be -----------------------------------------------------

ParamValue = float | str | list[float]  # a checked parameter value (`check_params`)


@dataclass(frozen=True)
class Param:
    """The values an estimator parameter takes: finite numbers within the bounds given (> gt,
    ≥ ge, < lt, ≤ le), one of `words`, or both; a `per_class` parameter also takes a list of such
    numbers, one per class (their count is checked where the classes are known,
    `check_class_count`).

    >>> Param(gt=0, le=1).describe(), Param(gt=0, words=("min",)).describe()
    ('a number > 0 and ≤ 1', 'a number > 0 or min')
    >>> Param(ge=0, per_class=True).check([0.5, 1]), Param(gt=0).check(-1.0) is None
    ([0.5, 1.0], True)
    """

    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    words: tuple[str, ...] = ()
    numbers: bool = True
    per_class: bool = False

    def check(self, value: object) -> ParamValue | None:
        """`value` as the estimator takes it (a number as float, a list of them as list), or
        None if the parameter cannot take it."""
        if isinstance(value, str):
            return value if value in self.words else None
        if isinstance(value, (list, tuple)):
            checked = [self._number(v) for v in value]
            if not self.per_class or not checked or any(v is None for v in checked):
                return None
            return [v for v in checked if v is not None]
        return self._number(value)

    def _number(self, value: object) -> float | None:
        # bool is an int to Python, never a parameter's number
        if not self.numbers or isinstance(value, bool) or not isinstance(value, numbers.Real):
            return None
        x = float(value)
        within = math.isfinite(x) and all(test(x, bound) for _, test, bound in self._bounds())
        return x if within else None

    def _bounds(self) -> list[tuple[str, Callable[[float, float], bool], float]]:
        given = (
            (">", operator.gt, self.gt),
            ("≥", operator.ge, self.ge),
            ("<", operator.lt, self.lt),
            ("≤", operator.le, self.le),
        )
        return [(sign, test, bound) for sign, test, bound in given if bound is not None]

    def describe(self) -> str:
        """What the parameter takes, in words (the end of `ParamError`'s message)."""
        bounds = " and ".join(f"{sign} {bound:g}" for sign, _, bound in self._bounds())
        kinds = [f"a number {bounds}".strip()] if self.numbers else []
        kinds += self.words
        text = ", ".join(kinds[:-1]) + " or " + kinds[-1] if len(kinds) > 1 else kinds[0]
        return text + (", or a list of one per class" if self.per_class else "")


class ParamError(ValueError):
    """An estimator parameter that the variant does not have, or a value it cannot take; `name`
    names the parameter (the configuration reports it as model.params.NAME)."""

    def __init__(self, message: str, name: str) -> None:
        super().__init__(message)
        self.name = name


_PARAMS: dict[Callable[..., Weights], dict[str, Param]] = {}


def takes(**params: Param) -> Callable[[Estimator], Estimator]:
    """Declares the values each parameter of the estimator it decorates takes (`check_params`);
    the declaration must name every parameter of its signature, and no other."""

    def declare(estimator: Estimator) -> Estimator:
        named = list(inspect.signature(estimator).parameters)[1:]  # after the statistics
        if sorted(named) != sorted(params):
            raise TypeError(f"{estimator.__name__}: declare exactly its parameters {named}")
        _PARAMS[estimator] = params
        return estimator

    return declare


# Lidstone's α (MNB and its complements): 0 would leave the tokens a class has not seen at log 0
ALPHA = Param(gt=0)


# --- 1–2. MNB and per-class normalization ----------------------------------------------------


def log_theta(c: Counts, alpha: float = 1.0) -> FloatArray:
    """log θ[c,w] = log(N[c,w]+α) − log(N_c+αV)."""
    return _log(c.statistic("N") + alpha) - _log(c.Nc + alpha * c.V)


@reads("N", "DF")
@takes(alpha=ALPHA)
def mnb(c: Counts, alpha: float = 1.0) -> Weights:
    """MNB with Lidstone smoothing: W[c,w] = log(N[c,w]+α) − log(N_c+αV), b_c = log(D_c/D)."""
    return _weights(c, log_theta(c, alpha), _log_prior(c))


@reads("N", "DF")
@takes(A=Param(gt=0, words=("min",)))
def pcn(c: Counts, A: float | str = 1.0) -> Weights:
    """MNB-PCN (Frank & Bouckaert): N[c,·] → A·N[c,·]/N_c, then MNB with α=1.

    A = 1 (default), "min" (min_c N_c over the classes with tokens, "PCN-min") or any positive
    value.
    """
    Nc = c.Nc
    amount: FloatArray | float | str = A
    if A == "min":
        smallest = np.where(Nc > 0, Nc, np.inf).min(axis=0, keepdims=True)
        amount = np.where(np.isfinite(smallest), smallest, 1.0)
    scale = _safe_divide(np.broadcast_to(np.asarray(amount, dtype=np.float64), Nc.shape), Nc)
    return mnb(replace(c, N=c.statistic("N") * scale, Nc=Nc * scale), alpha=1.0)


# --- 3. centroid -------------------------------------------------------------------------------


Norm = Literal["l1", "l2"]


@reads("N", "DF")
@takes(norm=Param(words=get_args(Norm), numbers=False))
def centroid(c: Counts, norm: Norm = "l2") -> Weights:
    """Centroid: W[c,w] = N[c,w]/‖N[c,·]‖ (L2, or L1 = /N_c), b_c = 0."""
    if norm not in ("l1", "l2"):
        raise ValueError(f"norm must be l1 or l2, not {norm!r}")
    if norm == "l2":
        c.require_full("the L2 centroid")
    N = c.statistic("N")
    length = c.Nc if norm == "l1" else np.sqrt((N * N).sum(axis=1, keepdims=True))
    return _weights(c, _safe_divide(N, length), _no_prior(c))


# --- 4. complement NB family ----------------------------------------------------------------


def complement_log_theta(c: Counts, alpha: float = 1.0) -> FloatArray:
    """log θ̃[c,w] = log(N[c̄,w]+α) − log(N_c̄+αV), estimated from every class but c."""
    return log_theta(replace(c, N=c.complement(c.statistic("N")), Nc=c.complement(c.Nc)), alpha)


@reads("N", "DF")
@takes(alpha=ALPHA)
def cnb(c: Counts, alpha: float = 1.0) -> Weights:
    """CNB (Rennie): W[c,w] = −log θ̃[c,w]; b_c = 0 (Rennie drops the prior)."""
    return _weights(c, -complement_log_theta(c, alpha), _no_prior(c))


@reads("N", "DF")
@takes(alpha=ALPHA)
def wcnb(c: Counts, alpha: float = 1.0) -> Weights:
    """WCNB: CNB with each class's weights divided by Σ_w |log θ̃[c,w]| first."""
    c.require_full("WCNB's normalization")
    log_theta_bar = complement_log_theta(c, alpha)
    total = np.where(c.known, np.abs(log_theta_bar), 0.0).sum(axis=1, keepdims=True)
    return _weights(c, -_safe_divide(log_theta_bar, total), _no_prior(c))


def idf(c: Counts) -> FloatArray:
    """IDF per token: log(D / DF[w]) (0 for unknown tokens)."""
    df = c.DF.sum(axis=0)
    return np.where(df > 0, _log(c.D.sum(axis=0) / np.maximum(df, 1)), 0.0)


@reads("T", "DF")
@takes(alpha=ALPHA)
def twcnb(c: Counts, alpha: float = 1.0) -> Weights:
    """TWCNB: WCNB on T[c,w]·IDF(w); the test document becomes log(1+f)·IDF, L2-normalized.

    (choice, docs/methods.md) IDF is applied when weights are computed, not when documents are
    learned, so that learning and unlearning stay exact.
    """
    i = idf(c)
    N = c.statistic("T") * i
    w = wcnb(replace(c, N=N, Nc=N.sum(axis=1, keepdims=True)), alpha)
    return replace(w, transform="log_tf_idf", idf=i)


@reads("N", "DF")
@takes(alpha=ALPHA)
def ova(c: Counts, alpha: float = 1.0) -> Weights:
    """One-vs-all-but-one: W[c,w] = log θ[c,w] − log θ̃[c,w], b_c = log(D_c/D_c̄)."""
    return _weights(c, log_theta(c, alpha) - complement_log_theta(c, alpha), _log_prior_odds(c))


# --- 5. regularized universal-set NB ------------------------------------------------------------


def likelihood_ratio(
    f_nu: FloatArray | float,
    n_nu: FloatArray | float,
    f_de: FloatArray | float,
    n_de: FloatArray | float,
    lam: FloatArray | float,
    smoothed: bool = True,
) -> FloatArray | float:
    """Kikuchi & Ozono's regularized likelihood ratio r̃.

    smoothed:   (f_nu+1)/(n_nu+2) · ((f_de+1)/(n_de+2) + λ)⁻¹   (what UNB-R uses)
    unsmoothed: (f_nu/n_nu) · (f_de/n_de + λ)⁻¹                   (the paper's Table I)
    """
    if smoothed:
        return (f_nu + 1) / (n_nu + 2) / ((f_de + 1) / (n_de + 2) + lam)
    return (f_nu / n_nu) / (f_de / n_de + lam)


@reads("N", "DF")
@takes(lam=Param(ge=0, per_class=True))
def unb(c: Counts, lam: float | Sequence[float] = 0.0) -> Weights:
    """UNB-R: W[c,w] = log r̃(w,c) with per-class λ_c (λ=0: plain UNB), b_c = log(D_c/D_c̄).

    `lam` is one λ for every class, or one per class in the order of `c.labels` (on the
    target-vs-rest view: the target's, then the rest's)."""
    check_class_count("unb", {"lam": lam}, c.labels)
    # a row per class
    lam_c = np.broadcast_to(np.asarray(lam, dtype=np.float64).reshape(-1, 1), (len(c.labels), 1))
    N = c.statistic("N")
    r = likelihood_ratio(N, c.Nc, c.complement(N), c.complement(c.Nc), lam_c)
    return _weights(c, _log(r), _log_prior_odds(c))


# --- 6. web-scale NB: weight manipulation and parametric smoothing ------------------------------


@reads("N", "DF")
@takes(gamma=Param(lt=0))
def wmnb(c: Counts, gamma: float = -1e6) -> Weights:
    """WMNB (Zhang et al.): W = log N[c,w] − log N_c where N[c,w] > 0, else γ/Z_c
    (Z_c = known tokens unseen in c). γ must be far below the real log-probabilities."""
    N = c.statistic("N")
    seen = N > 0
    Z = np.maximum(c.V - c.U, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        W = np.where(seen, _log(N) - _log(c.Nc), gamma / Z)
    return _weights(c, W, _log_prior(c))


Smoothing = Literal["laplace", "absolute", "linear", "witten_bell"]


@reads("N", "DF")
# absolute discounting takes at most one occurrence (δ ≤ 1) off the tokens seen once, for the
# probabilities to sum to 1; δ = 0 or μ = 0 leave unseen tokens at log 0, μ = 1 makes every class
# the background
@takes(
    smoothing=Param(words=get_args(Smoothing), numbers=False),
    alpha=ALPHA,
    delta=Param(gt=0, le=1),
    mu=Param(gt=0, lt=1),
)
def pnbc(
    c: Counts,
    smoothing: Smoothing = "absolute",
    alpha: float = 1.0,
    delta: float = 0.5,
    mu: float = 0.5,
) -> Weights:
    """PNBC: W[c,w] = log p(w|c) with a language-model smoothing against
    p_bg(w) = Σ_c N[c,w] / Σ_c N_c.

    laplace      (N+α)/(N_c+αV)
    absolute     max(N−δ,0)/N_c + δ·U_c/N_c·p_bg      (U_c = distinct tokens of c)
    linear       (1−μ)·N/N_c + μ·p_bg                 (Jelinek–Mercer)
    witten_bell  (N + U_c·p_bg)/(N_c + U_c)
    and p_bg for a class c without tokens (N_c = 0).
    """
    if smoothing == "laplace":
        return mnb(c, alpha)
    N, Nc, U = c.statistic("N"), c.Nc, c.U
    p_bg = N.sum(axis=0) / np.maximum(Nc.sum(axis=0), 1.0)
    if smoothing == "absolute":
        p = _safe_divide(np.maximum(N - delta, 0.0) + delta * U * p_bg, Nc)
    elif smoothing == "linear":
        p = (1 - mu) * _safe_divide(N, Nc) + mu * p_bg
    elif smoothing == "witten_bell":
        p = (N + U * p_bg) / np.maximum(Nc + U, 1.0)
    else:
        raise ValueError(
            f"smoothing must be laplace, absolute, linear or witten_bell, not {smoothing!r}"
        )
    # a class without tokens (documents without any token of a view) has no estimate of its
    # own: the background, which is the limit of every smoothing as N_c → 0, not log 0
    p = np.where(Nc > 0, p, p_bg)
    return _weights(c, _log(p), _log_prior(c))


# --- 8. Robinson–Fisher -------------------------------------------------------------------------


@reads("DF", ranks_clues=True)
@takes(s=Param(gt=0), x=Param(gt=0, lt=1))
def robinson_fisher(c: Counts, s: float = 0.45, x: float = 0.5) -> Weights:
    """Robinson's token probability, combined with Fisher's method at scoring time.

    p(w) = (DF[t,w]/D_t) / (DF[t,w]/D_t + DF[t̄,w]/D_t̄),  f(w) = (s·x + n_w·p(w)) / (s + n_w),
    n_w = DF[t,w] + DF[t̄,w]. Binary: row 0 is the target, row 1 its complement.
    Defaults are SpamBayes' (s=0.45, x=0.5); bogofilter's are s=0.0178, x=0.52.
    """
    if len(c.labels) != 2:
        raise ValueError("robinson_fisher is a two-class rule: build it on a target-vs-rest view")
    rate_t = _safe_divide(c.DF[0], c.D[0])
    rate_o = _safe_divide(c.DF[1], c.D[1])
    p = _safe_divide(rate_t, rate_t + rate_o)
    n = c.DF[0] + c.DF[1]
    f = (s * x + n * p) / (s + n)
    known = c.known
    return Weights(
        c.labels,
        np.stack([f, 1.0 - f]),
        _no_prior(c),
        known,
        transform="binary",
        combine="fisher",
        strength=np.where(known, np.abs(f - 0.5), -np.inf),
    )


# --- registry -----------------------------------------------------------------------------------

ESTIMATORS: dict[str, Callable[..., Weights]] = {
    "mnb": mnb,
    "pcn": pcn,
    "centroid": centroid,
    "cnb": cnb,
    "wcnb": wcnb,
    "twcnb": twcnb,
    "ova": ova,
    "unb": unb,
    "wmnb": wmnb,
    "pnbc": pnbc,
    "robinson_fisher": robinson_fisher,
}


def reads_of(variant: str) -> Reads:
    """What estimator `variant` declares it reads (see `reads`)."""
    return _READS.get(ESTIMATORS[variant], Reads())


def parameters(variant: str) -> dict[str, Param]:
    """The parameters estimator `variant` takes (`takes`), by name; ValueError for an unknown
    variant."""
    if variant not in ESTIMATORS:
        raise ValueError(f"unknown variant {variant!r}; choose from {', '.join(ESTIMATORS)}")
    return _PARAMS.get(ESTIMATORS[variant], {})


def check_params(variant: str, params: Mapping[str, object]) -> dict[str, ParamValue]:
    """`params` as estimator `variant` takes them, or a ParamError naming the first parameter it
    does not have or whose value it cannot take.

    >>> check_params("pcn", {"A": 2})
    {'A': 2.0}
    >>> check_params("mnb", {"alpha": -1.0})  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    filterd.bayes.estimators.ParamError: invalid value for mnb parameter 'alpha': -1
    (must be a number > 0)
    """
    declared = parameters(variant)
    checked: dict[str, ParamValue] = {}
    for name, value in params.items():
        if name not in declared:
            allowed = ", ".join(declared) or "none"
            raise ParamError(f"{variant} has no parameter {name!r} (parameters: {allowed})", name)
        rule = declared[name]
        ok = rule.check(value)
        if ok is None:
            raise ParamError(
                f"invalid value for {variant} parameter {name!r}: {shown(value)} "
                f"(must be {rule.describe()})",
                name,
            )
        checked[name] = ok
    return checked


def check_class_count(variant: str, params: Mapping[str, object], labels: Sequence[str]) -> None:
    """Each per-class parameter given as a list has one value per class of `labels` (or one);
    else a ParamError naming it. The classes are known only where a model is built on
    statistics (or, for the daemon, from its target-vs-rest view)."""
    for name, rule in parameters(variant).items():
        value = params.get(name)
        count = len(value) if rule.per_class and isinstance(value, (list, tuple, np.ndarray)) else 1
        if count not in (1, len(labels)):
            raise ParamError(
                f"invalid value for {variant} parameter {name!r}: {count} values for "
                f"{len(labels)} classes ({', '.join(labels)}): give one value, or one "
                "per class in that order",
                name,
            )


def parse_params(variant: str, raw: Mapping[str, str]) -> dict[str, ParamValue]:
    """Estimator parameters from text ("alpha=0.1", "lam=1e-5,1e-3", "A=min"), checked
    (`check_params`).

    >>> parse_params("unb", {"lam": "1e-5,1e-3"})
    {'lam': [1e-05, 0.001]}
    >>> parse_params("mnb", {"alpha": "abc"})  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    filterd.bayes.estimators.ParamError: invalid value for mnb parameter 'alpha': 'abc'
    (must be a number > 0)
    """
    return check_params(variant, {name: parse_value(text) for name, text in raw.items()})


def parse_value(text: str) -> float | str | list[float | str]:
    """A parameter value from text: numbers as floats, comma-separated values as a list."""
    if "," in text:
        return [_parse_scalar(part) for part in text.split(",")]
    return _parse_scalar(text)


def _parse_scalar(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text.strip()


def shown(value: object) -> str:
    """A parameter value as the CLI writes it: numbers short (%g), lists comma-separated, other
    text quoted."""
    if isinstance(value, (list, tuple)):
        return "'" + ",".join(format_value(v) for v in value) + "'"
    return repr(value) if isinstance(value, str) else format_value(value)


def format_value(value: object) -> str:
    """A parameter value in a spec's name (`str(ModelSpec)`): floats %g, lists comma-separated."""
    if isinstance(value, (list, tuple)):
        return ",".join(format_value(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)
