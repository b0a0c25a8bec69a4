"""Evaluation measures for scored decisions (docs/methods.md, "Thresholds and evaluation").

Conventions: ``scores`` is a 1-D float array, higher = more likely target (spam);
``labels`` is a 1-D bool array, True = target (positive). The decision is
target iff ``score >= tau``, so items tied with ``tau`` are decided target.

    recall(tau)      = #pos with score >= tau / P          (TREC: 1 - sm)
    specificity(tau) = #neg with score <  tau / N          ("ham kept"; TREC: 1 - hm)
    FPR(tau)         = 1 - specificity(tau)                (TREC: hm)

TREC spam-track measures (Cormack & Lynam, TREC 2005 Spam Track Overview):
    hm%  = 100 * FP / N        ham misclassification
    sm%  = 100 * FN / P        spam misclassification
    lam% = logit^-1((logit(hm%) + logit(sm%)) / 2),  logit(x) = ln(x / (100% - x))
    (1-ROCA)% = 100 * (1 - AUC)
    "sm% at hm% = 0.1" = 100 * (1 - recall_at_fpr(scores, labels, 0.001))

Average precision, the area under the precision–recall curve as fraud teams report it (the
positives rare, AUC flatters): AP = Σ_k (R_k − R_{k−1}) P_k over the distinct scores from the
highest, P_k and R_k the precision and recall at τ = the k-th.

All functions are pure and vectorized; the binary ones are O(n log n).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np
import numpy.typing as npt

from filterd.bayes.arrays import BoolArray, FloatArray


def _check_binary(scores: npt.ArrayLike, labels: npt.ArrayLike) -> tuple[FloatArray, BoolArray]:
    """Validate and convert; both classes must be present, scores must not be NaN."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels)
    if s.ndim != 1 or y.ndim != 1:
        raise ValueError("scores and labels must be 1-D arrays")
    if s.shape != y.shape:
        raise ValueError(f"scores and labels differ in length: {s.size} vs {y.size}")
    if y.dtype != bool:
        if y.size and not np.isin(y, (0, 1)).all():
            raise ValueError("labels must be bool (True = target) or 0/1")
        y = y.astype(bool)
    if np.isnan(s).any():
        raise ValueError("scores contain NaN")
    n_pos = int(np.count_nonzero(y))
    if n_pos == 0 or n_pos == y.size:
        raise ValueError(
            f"need both classes: have {n_pos} positives and {y.size - n_pos} negatives"
        )
    return s, y


def min_hits(recall: float, n_pos: int) -> int:
    """Smallest k with k / n_pos >= recall, i.e. ceil(recall * n_pos).

    The relative tolerance absorbs float noise in the product (0.07 * 100 is
    7.000000000000001, which must give 7, not 8). At least 1 when recall > 0.
    """
    k = math.ceil(recall * n_pos * (1.0 - 1e-12))
    return max(k, 1) if recall > 0 else 0


def roc_curve(
    scores: npt.ArrayLike, labels: npt.ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """ROC points ``(fpr, tpr, thresholds)``, one per distinct score.

    ``thresholds`` are decreasing: ``+inf`` first (nothing flagged, fpr = tpr = 0),
    then each distinct score ``t`` with ``tpr = #pos >= t / P``, ``fpr = #neg >= t / N``.
    Tied scores form a single point, so a tie between classes is a diagonal segment;
    the last point is (1, 1). Scores equal to +inf are rejected (they would collide
    with the leading "nothing flagged" point).
    """
    s, y = _check_binary(scores, labels)
    if np.isposinf(s).any():
        raise ValueError("roc_curve needs scores below +inf")
    order = np.argsort(-s, kind="stable")
    s_desc, y_desc = s[order], y[order]
    tp = np.cumsum(y_desc)
    fp = np.cumsum(~y_desc)
    # The last index of each run of equal scores: all tied items enter together.
    last_of_group = np.r_[s_desc[1:] != s_desc[:-1], True]
    n_pos, n_neg = tp[-1], fp[-1]
    tpr = np.r_[0.0, tp[last_of_group] / n_pos]
    fpr = np.r_[0.0, fp[last_of_group] / n_neg]
    thresholds = np.r_[np.inf, s_desc[last_of_group]]
    return fpr, tpr, thresholds


def auc(scores: npt.ArrayLike, labels: npt.ArrayLike) -> float:
    """ROC AUC = P(score_pos > score_neg) + 1/2 P(score_pos == score_neg).

    Mann–Whitney with average ranks: ``AUC = (R_pos - P(P+1)/2) / (P N)``, where
    ``R_pos`` is the sum of the positives' ranks. ValueError if a class is empty.
    """
    s, y = _check_binary(scores, labels)
    n_pos = int(np.count_nonzero(y))
    n_neg = y.size - n_pos
    ranks = average_ranks(s)  # ties count 1/2
    u = ranks[y].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def average_ranks(values: FloatArray) -> FloatArray:
    """The 1-based ranks of `values`, tied values sharing the mean of their ranks (SciPy's
    `rankdata(method="average")`, which the tests check it against; numpy alone, so that
    measuring does not import SciPy's statistics).

    >>> average_ranks(np.array([0.5, 0.1, 0.5, 0.9])).tolist()
    [2.5, 1.0, 2.5, 4.0]
    """
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    # where each run of equal values starts, and the end of the last
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1], True])
    # a run over sorted positions i..j-1 holds ranks i+1..j, whose mean is (i + 1 + j) / 2
    mean_rank = (starts[:-1] + 1 + starts[1:]) / 2.0
    ranks = np.empty(values.size, dtype=np.float64)
    ranks[order] = np.repeat(mean_rank, np.diff(starts))
    return ranks


def specificity_at_recall(
    scores: npt.ArrayLike, labels: npt.ArrayLike, recall: float = 1.0
) -> float:
    """Specificity (ham kept) at the largest tau with recall(tau) >= ``recall``.

    That tau is the k-th largest positive score, ``k = ceil(recall * P)``; with
    ``recall = 1`` it is the lowest positive score (Kołcz's 100 %-recall point).
    Returns ``#neg with score < tau / N``; ``recall = 0`` gives tau = +inf, 1.0.
    """
    if not 0.0 <= recall <= 1.0:
        raise ValueError(f"recall must be in [0, 1], got {recall}")
    s, y = _check_binary(scores, labels)
    pos_desc = np.sort(s[y])[::-1]
    k = min_hits(recall, pos_desc.size)
    if k == 0:
        return 1.0
    tau = pos_desc[k - 1]
    neg = s[~y]
    return float(np.count_nonzero(neg < tau) / neg.size)


def recall_at_fpr(scores: npt.ArrayLike, labels: npt.ArrayLike, fpr: float = 0.001) -> float:
    """Best recall over all thresholds tau with FPR(tau) <= ``fpr``.

    Both recall and FPR fall as tau rises, so this is the recall at the lowest
    such tau. No interpolation between ROC points. TREC's "sm% at hm% = 0.1" is
    ``100 * (1 - recall_at_fpr(scores, labels, 0.001))``.
    """
    if not 0.0 <= fpr <= 1.0:
        raise ValueError(f"fpr must be in [0, 1], got {fpr}")
    s, y = _check_binary(scores, labels)
    n_neg = int(np.count_nonzero(~y))
    # Compare counts, not rates, so fpr = m / N exactly is allowed despite float noise.
    max_fp = math.floor(fpr * n_neg * (1.0 + 1e-12))
    neg_desc = np.sort(s[~y])[::-1]
    pos = s[y]
    if max_fp >= n_neg:
        return 1.0
    # The lowest allowed tau lies just above the (max_fp+1)-th largest negative score:
    # every positive strictly above it is caught, the tied negatives are not flagged.
    cutoff = neg_desc[max_fp]
    return float(np.count_nonzero(pos > cutoff) / pos.size)


def average_precision(scores: npt.ArrayLike, labels: npt.ArrayLike) -> float:
    """AP (the module docstring): tied scores are one threshold, decided together.

    >>> average_precision([0.9, 0.8, 0.7, 0.1], [True, False, True, False])
    0.8333333333333333
    >>> average_precision([0.5, 0.5], [True, False])
    0.5
    """
    s, y = _check_binary(scores, labels)
    n_pos = int(np.count_nonzero(y))
    order = np.argsort(-s, kind="stable")
    s, y = s[order], y[order]
    last = np.flatnonzero(np.append(s[1:] != s[:-1], True))  # the end of each tie
    hits = np.cumsum(y)[last]
    precision = hits / (last + 1)
    gained = np.diff(hits, prepend=0) / n_pos
    return float(np.sum(gained * precision))


def lam(fn_rate: float, fp_rate: float) -> float:
    """TREC logistic average misclassification of two rates in (0, 1).

    ``lam = logit^-1((logit(fn_rate) + logit(fp_rate)) / 2)``, ``logit(p) = ln(p / (1 - p))``;
    equivalently the geometric mean of the two odds turned back into a rate.
    Rates of exactly 0 or 1 are rejected: use :func:`lam_pct`, which corrects them.
    """
    for name, p in (("fn_rate", fn_rate), ("fp_rate", fp_rate)):
        if not 0.0 < p < 1.0:
            raise ValueError(f"{name} must be in the open interval (0, 1), got {p}")
    z = (math.log(fn_rate / (1.0 - fn_rate)) + math.log(fp_rate / (1.0 - fp_rate))) / 2.0
    return 1.0 / (1.0 + math.exp(-z))


def lam_pct(scores: npt.ArrayLike, labels: npt.ArrayLike, tau: float) -> float:
    """lam% at threshold ``tau``, in percent (0–100).

    ``sm = (FN + 0.5) / (P + 1)``, ``hm = (FP + 0.5) / (N + 1)`` with
    ``FN = #pos with score < tau`` and ``FP = #neg with score >= tau``; the +0.5/+1
    correction keeps a perfect (or totally wrong) class finite. Result
    ``100 * lam(sm, hm)``.
    """
    s, y = _check_binary(scores, labels)
    flagged = s >= tau
    n_pos = int(np.count_nonzero(y))
    n_neg = y.size - n_pos
    fn = int(np.count_nonzero(y & ~flagged))
    fp = int(np.count_nonzero(~y & flagged))
    return 100.0 * lam((fn + 0.5) / (n_pos + 1), (fp + 0.5) / (n_neg + 1))


def one_minus_auc_pct(scores: npt.ArrayLike, labels: npt.ArrayLike) -> float:
    """TREC (1-ROCA)%: ``100 * (1 - AUC)``."""
    return 100.0 * (1.0 - auc(scores, labels))


def accuracy(y_true: npt.ArrayLike, y_pred: npt.ArrayLike) -> float:
    """Fraction of items with ``y_pred == y_true``; labels of any hashable type."""
    t, p = np.asarray(y_true), np.asarray(y_pred)
    if t.shape != p.shape or t.ndim != 1:
        raise ValueError(f"y_true and y_pred must be 1-D of equal length: {t.shape} vs {p.shape}")
    if t.size == 0:
        raise ValueError("accuracy of zero items is undefined")
    return float(np.mean(t == p))


def macro_f1(
    y_true: npt.ArrayLike, y_pred: npt.ArrayLike, labels: Sequence[Hashable] | None = None
) -> float:
    """Unweighted mean over classes of ``F1_c = 2 TP_c / (2 TP_c + FP_c + FN_c)``.

    ``labels=None`` averages over the union of classes seen in ``y_true`` and
    ``y_pred``; each of those has a non-zero denominator. With explicit ``labels``
    the mean is over exactly those (no duplicates allowed): a listed class with no
    true and no predicted items counts F1 = 0 (as scikit-learn's default), and
    classes present in the data but not listed are left out of the mean (their
    items still count as FP/FN for the listed classes they were confused with).
    """
    t, p = np.asarray(y_true), np.asarray(y_pred)
    if t.shape != p.shape or t.ndim != 1:
        raise ValueError(f"y_true and y_pred must be 1-D of equal length: {t.shape} vs {p.shape}")
    if t.size == 0:
        raise ValueError("macro-F1 of zero items is undefined")
    classes, idx = np.unique(np.concatenate([t, p]), return_inverse=True)
    t_idx, p_idx = idx[: t.size], idx[t.size :]
    k = classes.size
    tp = np.bincount(t_idx[t_idx == p_idx], minlength=k)
    # 2TP + FP + FN = (#true of c) + (#predicted as c)
    denom = np.bincount(t_idx, minlength=k) + np.bincount(p_idx, minlength=k)
    f1 = dict(zip(classes.tolist(), (2.0 * tp / denom).tolist()))
    if labels is None:
        return float(np.mean(list(f1.values())))
    wanted = list(labels)
    if not wanted:
        raise ValueError("labels is empty")
    if len(set(wanted)) != len(wanted):
        raise ValueError("labels contains duplicates")
    return float(np.mean([f1.get(c, 0.0) for c in wanted]))


def binary_summary(
    scores: npt.ArrayLike, labels: npt.ArrayLike, tau: float | None = None
) -> dict[str, float]:
    """The report's binary measures in one dict.

    Keys: ``auc``, ``one_minus_auc_pct``, ``average_precision``, ``spec_at_full_recall``,
    ``recall_at_fpr_1pct``, ``recall_at_fpr_0_1pct``, ``lam_pct`` (at ``tau``; 0.0 when None,
    the log-odds decision boundary), ``tau`` (the one used), ``n_pos``, ``n_neg``.
    """
    s, y = _check_binary(scores, labels)
    tau = 0.0 if tau is None else float(tau)
    n_pos = int(np.count_nonzero(y))
    a = auc(s, y)
    return {
        "auc": a,
        "one_minus_auc_pct": 100.0 * (1.0 - a),
        "average_precision": average_precision(s, y),
        "spec_at_full_recall": specificity_at_recall(s, y, 1.0),
        "recall_at_fpr_1pct": recall_at_fpr(s, y, 0.01),
        "recall_at_fpr_0_1pct": recall_at_fpr(s, y, 0.001),
        "lam_pct": lam_pct(s, y, tau),
        "tau": tau,
        "n_pos": n_pos,
        "n_neg": int(y.size - n_pos),
    }
