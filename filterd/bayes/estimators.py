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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypeVar

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


# --- 1–2. MNB and per-class normalization ----------------------------------------------------


def log_theta(c: Counts, alpha: float = 1.0) -> FloatArray:
    """log θ[c,w] = log(N[c,w]+α) − log(N_c+αV)."""
    return _log(c.statistic("N") + alpha) - _log(c.Nc + alpha * c.V)


@reads("N", "DF")
def mnb(c: Counts, alpha: float = 1.0) -> Weights:
    """MNB with Lidstone smoothing: W[c,w] = log(N[c,w]+α) − log(N_c+αV), b_c = log(D_c/D)."""
    return _weights(c, log_theta(c, alpha), _log_prior(c))


@reads("N", "DF")
def pcn(c: Counts, A: float | str = 1.0) -> Weights:
    """MNB-PCN (Frank & Bouckaert): N[c,·] → A·N[c,·]/N_c, then MNB with α=1.

    A = 1 (default), "min" (min_c N_c over the classes with tokens, "PCN-min") or any positive value.
    """
    Nc = c.Nc
    amount: FloatArray | float | str = A
    if A == "min":
        smallest = np.where(Nc > 0, Nc, np.inf).min(axis=0, keepdims=True)
        amount = np.where(np.isfinite(smallest), smallest, 1.0)
    scale = _safe_divide(np.broadcast_to(np.asarray(amount, dtype=np.float64), Nc.shape), Nc)
    return mnb(replace(c, N=c.statistic("N") * scale, Nc=Nc * scale), alpha=1.0)


# --- 3. centroid -------------------------------------------------------------------------------


@reads("N", "DF")
def centroid(c: Counts, norm: Literal["l1", "l2"] = "l2") -> Weights:
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
def cnb(c: Counts, alpha: float = 1.0) -> Weights:
    """CNB (Rennie): W[c,w] = −log θ̃[c,w]; b_c = 0 (Rennie drops the prior)."""
    return _weights(c, -complement_log_theta(c, alpha), _no_prior(c))


@reads("N", "DF")
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
def ova(c: Counts, alpha: float = 1.0) -> Weights:
    """One-vs-all-but-one: W[c,w] = log θ[c,w] − log θ̃[c,w], b_c = log(D_c/D_c̄)."""
    return _weights(c, log_theta(c, alpha) - complement_log_theta(c, alpha), _log_prior_odds(c))


# --- 5. regularized universal-set NB ------------------------------------------------------------


def likelihood_ratio(f_nu: FloatArray | float, n_nu: FloatArray | float, f_de: FloatArray | float,
                     n_de: FloatArray | float, lam: FloatArray | float,
                     smoothed: bool = True) -> FloatArray | float:  # fmt: skip
    """Kikuchi & Ozono's regularized likelihood ratio r̃.

    smoothed:   (f_nu+1)/(n_nu+2) · ((f_de+1)/(n_de+2) + λ)⁻¹   (what UNB-R uses)
    unsmoothed: (f_nu/n_nu) · (f_de/n_de + λ)⁻¹                   (the paper's Table I)
    """
    if smoothed:
        return (f_nu + 1) / (n_nu + 2) / ((f_de + 1) / (n_de + 2) + lam)
    return (f_nu / n_nu) / (f_de / n_de + lam)


@reads("N", "DF")
def unb(c: Counts, lam: float | Sequence[float] = 0.0) -> Weights:
    """UNB-R: W[c,w] = log r̃(w,c) with per-class λ_c (λ=0: plain UNB), b_c = log(D_c/D_c̄)."""
    # a column per class
    lam_c = np.broadcast_to(np.asarray(lam, dtype=np.float64), (len(c.labels),)).reshape(-1, 1)
    N = c.statistic("N")
    r = likelihood_ratio(N, c.Nc, c.complement(N), c.complement(c.Nc), lam_c)
    return _weights(c, _log(r), _log_prior_odds(c))


# --- 6. web-scale NB: weight manipulation and parametric smoothing ------------------------------


@reads("N", "DF")
def wmnb(c: Counts, gamma: float = -1e6) -> Weights:
    """WMNB (Zhang et al.): W = log N[c,w] − log N_c where N[c,w] > 0, else γ/Z_c
    (Z_c = known tokens unseen in c). γ must be far below the real log-probabilities."""
    N = c.statistic("N")
    seen = N > 0
    Z = np.maximum(c.V - c.U, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        W = np.where(seen, _log(N) - _log(c.Nc), gamma / Z)
    return _weights(c, W, _log_prior(c))


@reads("N", "DF")
def pnbc(
    c: Counts,
    smoothing: Literal["laplace", "absolute", "linear", "witten_bell"] = "absolute",
    alpha: float = 1.0,
    delta: float = 0.5,
    mu: float = 0.5,
) -> Weights:
    """PNBC: W[c,w] = log p(w|c) with a language-model smoothing against p_bg(w) = Σ_c N[c,w] / Σ_c N_c.

    laplace      (N+α)/(N_c+αV)
    absolute     max(N−δ,0)/N_c + δ·U_c/N_c·p_bg      (U_c = distinct tokens of c)
    linear       (1−μ)·N/N_c + μ·p_bg                 (Jelinek–Mercer)
    witten_bell  (N + U_c·p_bg)/(N_c + U_c)
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
    return _weights(c, _log(p), _log_prior(c))


# --- 8. Robinson–Fisher -------------------------------------------------------------------------


@reads("DF", ranks_clues=True)
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
        c.labels, np.stack([f, 1.0 - f]), _no_prior(c), known,
        transform="binary", combine="fisher", strength=np.where(known, np.abs(f - 0.5), -np.inf),
    )  # fmt: skip


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


ParamValue = float | str | list[float | str]  # a parameter as `parse_params` reads it


def parse_params(variant: str, raw: dict[str, str]) -> dict[str, ParamValue]:
    """Typed estimator parameters from strings ("alpha=0.1", "lam=1e-5,1e-3", "A=min")."""
    if variant not in ESTIMATORS:
        raise ValueError(f"unknown variant {variant!r}; choose from {', '.join(ESTIMATORS)}")
    signature = inspect.signature(ESTIMATORS[variant])
    params: dict[str, ParamValue] = {}
    for name, text in raw.items():
        if name not in signature.parameters or name == "c":
            allowed = ", ".join(p for p in signature.parameters if p != "c") or "none"
            raise ValueError(f"{variant} has no parameter {name!r} (parameters: {allowed})")
        params[name] = _parse_value(text)
    return params


def _parse_value(text: str) -> ParamValue:
    if "," in text:
        return [_parse_scalar(part) for part in text.split(",")]
    return _parse_scalar(text)


def _parse_scalar(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text
