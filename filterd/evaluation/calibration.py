"""Recall-targeted thresholds on labelled holdout scores (docs/methods.md, "Thresholds and evaluation").

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
from scipy.stats import beta

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
    return float(beta.ppf(1.0 - confidence, k, n - k + 1))


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
