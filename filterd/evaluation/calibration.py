"""Recall-targeted thresholds on labelled holdout scores (docs/methods.md, "Thresholds and
evaluation").

Decision: target iff ``score >= tau``. recall(tau) = #pos with score >= tau / P,
specificity(tau) = #neg with score < tau / N. Items tied with tau are decided target.

- exact mode: the largest tau with recall(tau) >= R, i.e. the k-th largest positive
  score with ``k = ceil(R * P)``.
- conservative mode: the largest tau whose one-sided Clopper–Pearson lower bound on
  recall is >= R, i.e. the k-th largest positive score for the smallest k with
  ``clopper_pearson_lower(k, P, confidence) >= R``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from filterd.evaluation.ranking import min_hits


class CalibrationError(ValueError):
    """The data cannot support the requested target; the message says why and what is needed.

    e.g. "target recall 0.99 needs at least 299 positives in the window for the
    conservative 95% bound; have 120".
    """


@dataclass(frozen=True)
class Threshold:
    tau: float  # decide target iff score >= tau
    target_recall: float
    recall: float  # achieved on the data it was chosen on
    specificity: float  # ham kept at tau
    precision: float
    n_pos: int
    n_neg: int
    conservative: bool
    recall_lower_bound: float | None  # one-sided Clopper–Pearson lower bound at tau


def beta_ppf(q: float, a: float, b: float) -> float:
    """The `q` quantile of Beta(a, b).

    >>> beta_ppf(0.5, 1, 1)
    0.5
    """
    # scipy.stats is imported when a bound is first computed, not with this module: it is the
    # slowest of the daemon's and the CLI's imports, and most commands never compute one
    from scipy.stats import beta

    return float(beta.ppf(q, a, b))


def clopper_pearson_lower(k: int, n: int, confidence: float = 0.95) -> float:
    """One-sided lower confidence bound of a binomial proportion k / n.

    ``L = Beta.ppf(1 - confidence; k, n - k + 1)``, and ``L = 0`` when ``k = 0``.
    For ``k = n`` this is ``(1 - confidence) ** (1 / n)``.
    """
    if not 0 <= k <= n or n < 1:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if k == 0:
        return 0.0
    return beta_ppf(1.0 - confidence, k, n - k + 1)


def positives_needed(target_recall: float, confidence: float) -> int | None:
    """Smallest P with clopper_pearson_lower(P, P) >= R, i.e. (1 - conf)^(1/P) >= R.

    None when no finite P works (R = 1).
    """
    if target_recall >= 1.0:
        return None  # the lower bound is below 1 for every finite P
    n = max(1, math.ceil(math.log(1.0 - confidence) / math.log(target_recall)))
    # The closed form can be off by one through rounding; settle it with the bound itself.
    while clopper_pearson_lower(n, n, confidence) < target_recall:
        n += 1
    while n > 1 and clopper_pearson_lower(n - 1, n - 1, confidence) >= target_recall:
        n -= 1
    return n


def _conservative_hits(target_recall: float, n_pos: int, confidence: float) -> int:
    """Smallest k with clopper_pearson_lower(k, n_pos) >= R (the bound rises with k)."""
    if clopper_pearson_lower(n_pos, n_pos, confidence) < target_recall:
        needed = positives_needed(target_recall, confidence)
        if needed is None:
            raise CalibrationError(
                f"target recall {target_recall:g} cannot be certified by a one-sided "
                f"{confidence:.0%} lower bound with any finite number of positives; "
                f"use exact mode (have {n_pos} positives)"
            )
        raise CalibrationError(
            f"target recall {target_recall:g} needs at least {needed} positives in the "
            f"window for the conservative {confidence:.0%} bound; have {n_pos}"
        )
    lo, hi = 1, n_pos  # the predicate holds at hi
    while lo < hi:
        mid = (lo + hi) // 2
        if clopper_pearson_lower(mid, n_pos, confidence) >= target_recall:
            hi = mid
        else:
            lo = mid + 1
    return lo


def adapt_level(
    level: float,
    alpha: float,
    spam: int,
    missed: int,
    gamma: float,
    floor: float = 0.5,
    ceiling: float = 2.0,
    max_gain: float = 0.5,
) -> float:
    """The miss level to calibrate for next, from the misses seen since the last calibration.

    Adaptive conformal inference (Gibbs & Candès, NeurIPS 2021), one step per spam decided,
    taken together: ``α' = α_t + g (α − m/n)`` for ``n`` spam of which ``m`` were missed, with
    the gain ``g = min(γ n, max_gain)`` — ``γ (n α − m)`` while ``γ n ≤ max_gain`` — then
    clipped to ``[floor·α, ceiling·α]``. Unclipped, the long-run miss rate is α under any drift;
    the clip keeps one unlucky run from pushing τ to the lowest spam score. The cap on the gain
    keeps the loop stable when many spam arrive between two calibrations: τ is held for all of
    them, so a gain of 1 or more would overshoot the miss rate it corrects.

    >>> adapt_level(0.01, 0.01, spam=100, missed=1, gamma=0.001)
    0.01
    >>> round(adapt_level(0.01, 0.01, spam=100, missed=3, gamma=0.001), 6)
    0.008
    >>> adapt_level(0.01, 0.01, spam=100, missed=9, gamma=0.005)
    0.005
    >>> round(adapt_level(0.01, 0.01, spam=10_000, missed=150, gamma=0.001), 6)  # gain capped
    0.0075
    """
    if not 0 <= missed <= spam:
        raise ValueError(f"need 0 <= missed <= spam, got missed={missed}, spam={spam}")
    if spam == 0:
        return level
    moved = level + min(gamma * spam, max_gain) * (alpha - missed / spam)
    return min(ceiling * alpha, max(floor * alpha, moved))


@dataclass(frozen=True)
class Expected:
    """What a rate measured on a window is expected to be on new traffic like it: the mean
    and a central interval at `confidence`."""

    mean: float
    low: float
    high: float
    confidence: float


def expected_recall(hits: int, n_pos: int, confidence: float = 0.9) -> Expected:
    """Recall on new positives exchangeable with the window's P, at τ = the k-th largest of
    their scores (`hits` = k): the share of new positives scoring ≥ τ is Beta(k, P + 1 − k)
    (the coverage of an order statistic), mean k/(P + 1).

    >>> e = expected_recall(99, 100)
    >>> round(e.mean, 4), round(e.low, 4), round(e.high, 4)
    (0.9802, 0.9534, 0.9964)
    """
    if not 1 <= hits <= n_pos:
        raise ValueError(f"need 1 <= hits <= n_pos, got hits={hits}, n_pos={n_pos}")
    tail = (1.0 - confidence) / 2
    a, b = hits, n_pos + 1 - hits
    return Expected(
        hits / (n_pos + 1),
        beta_ppf(tail, a, b),
        beta_ppf(1 - tail, a, b),
        confidence,
    )


def expected_rate(successes: int, n: int, confidence: float = 0.9) -> Expected:
    """A binomial rate, e.g. specificity: ham kept of N, with Jeffreys' interval
    (Beta(x + ½, n − x + ½) quantiles; the bound at 0 or n is the end itself).

    >>> e = expected_rate(95, 100)
    >>> round(e.mean, 2), round(e.low, 4), round(e.high, 4)
    (0.95, 0.9042, 0.9769)
    """
    if not 0 <= successes <= n or n < 1:
        raise ValueError(f"need 0 <= successes <= n and n >= 1, got {successes}, {n}")
    tail = (1.0 - confidence) / 2
    a, b = successes + 0.5, n - successes + 0.5
    low = 0.0 if successes == 0 else beta_ppf(tail, a, b)
    high = 1.0 if successes == n else beta_ppf(1 - tail, a, b)
    return Expected(successes / n, low, high, confidence)


def recall_threshold(
    scores: npt.ArrayLike,
    labels: npt.ArrayLike,
    target_recall: float,
    *,
    conservative: bool = False,
    confidence: float = 0.95,
) -> Threshold:
    """Choose tau for target recall R on labelled scores (see the module docstring).

    Raises CalibrationError for mismatched lengths, NaN scores, no positives, no
    negatives, R outside (0, 1], or (conservative) too few positives for the bound.
    """
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels)
    if s.ndim != 1 or y.ndim != 1 or s.shape != y.shape:
        raise CalibrationError(
            f"scores and labels must be 1-D of equal length; got shapes {s.shape} and {y.shape}"
        )
    if y.dtype != bool:
        if y.size and not np.isin(y, (0, 1)).all():
            raise CalibrationError("labels must be bool (True = target) or 0/1")
        y = y.astype(bool)
    if not 0.0 < target_recall <= 1.0:
        raise CalibrationError(f"target recall must be in (0, 1], got {target_recall}")
    if not 0.0 < confidence < 1.0:
        raise CalibrationError(f"confidence must be in (0, 1), got {confidence}")
    n_nan = int(np.count_nonzero(np.isnan(s)))
    if n_nan:
        raise CalibrationError(f"{n_nan} scores are NaN; every holdout item needs a score")
    pos_desc = np.sort(s[y])[::-1]
    neg = s[~y]
    n_pos, n_neg = pos_desc.size, neg.size
    if n_pos == 0:
        raise CalibrationError("no positives in the window: recall is undefined")
    if n_neg == 0:
        raise CalibrationError(
            f"no negatives in the window ({n_pos} positives): specificity and precision "
            "at the threshold are undefined"
        )

    if conservative:
        k = _conservative_hits(target_recall, n_pos, confidence)
    else:
        k = min_hits(target_recall, n_pos)
    tau = float(pos_desc[k - 1])

    # Ties at tau are decided target, so hits can exceed k.
    hits = int(np.count_nonzero(pos_desc >= tau))
    false_alarms = int(np.count_nonzero(neg >= tau))
    return Threshold(
        tau=tau,
        target_recall=float(target_recall),
        recall=hits / n_pos,
        specificity=(n_neg - false_alarms) / n_neg,
        precision=hits / (hits + false_alarms),
        n_pos=n_pos,
        n_neg=n_neg,
        conservative=conservative,
        recall_lower_bound=clopper_pearson_lower(hits, n_pos, confidence),
    )
