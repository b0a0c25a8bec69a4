"""Calibration guardrails (pure): when a recall-targeted threshold must not be trusted.

`guarded_threshold` checks them and raises `GuardrailError`. `force` overrides the first three;
the version written then records forced = true (only when a guardrail was actually overridden).
- too few positives: P ≥ min_positives, by default ⌈1/(1−R)⌉ for R < 1 (100 for R = 0.99)
  and 100 for R = 1; conservative mode needs at least the P whose bound can reach R at all
  (299 for R = 0.99 at 95 %). Why: below 1/(1−R) positives ⌈R·P⌉ = P, so τ is the lowest
  positive score and the window cannot tell R from 1. And a new positive, exchangeable with
  the window's P, scores ≥ the k-th largest of them with probability k/(P+1): at P = 1/(1−R)
  the expected miss rate on new traffic is ≈ 2(1−R), falling toward 1−R as P grows; for R = 1
  (τ = the lowest positive) it is 1/(P+1) ≤ 1 % from P = 100 on.
- too few negatives: N ≥ min_negatives (100), so that specificity is measured to 1 % (with
  no false alarm among N, the one-sided 95 % bound on the ham misclassification rate is
  still ≈ 3/N, the rule of three).
- AUC drop: AUC < the previous version's AUC − max_auc_drop (0.02): the model or the traffic
  changed; a person should look before a new τ is trusted.
- unreachable (cannot be forced): no τ meets the target — no positives or no negatives in
  the window, or the conservative bound cannot reach R with this many positives.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from filterd.evaluation import ranking
from filterd.evaluation.calibration import (
    CalibrationError,
    Threshold,
    positives_needed,
    recall_threshold,
)

MIN_POSITIVES_FULL_RECALL = 100  # R = 1: expected miss rate 1/(P+1) ≤ 1 %
MIN_NEGATIVES = 100  # specificity to 1 %
MAX_AUC_DROP = 0.02


class GuardrailError(CalibrationError):
    """Calibration refused; `reasons` are the guardrails that failed ("too_few_positives",
    "too_few_negatives", "auc_drop", "unreachable"), `forceable` whether `force` overrides them."""

    def __init__(self, message: str, reasons: list[str], forceable: bool) -> None:
        super().__init__(message)
        self.reasons = tuple(reasons)
        self.forceable = forceable


def default_min_positives(target_recall: float) -> int:
    """⌈1/(1−R)⌉ for R < 1, MIN_POSITIVES_FULL_RECALL for R = 1 (see the module docstring).

    >>> default_min_positives(0.99), default_min_positives(0.9), default_min_positives(1.0)
    (100, 10, 100)
    """
    if target_recall >= 1.0:
        return MIN_POSITIVES_FULL_RECALL
    return max(1, math.ceil(1.0 / (1.0 - target_recall) - 1e-9))  # 1/(1−0.99) is 100.000…01


@dataclass(frozen=True)
class Guarded:
    """A threshold that passed the guardrails, its window's AUC, and what `force` overrode."""

    threshold: Threshold
    auc: float
    overridden: tuple[str, ...]


def guarded_threshold(
    scores: np.ndarray,
    positives: np.ndarray,
    target_recall: float,
    *,
    target: str,
    previous_auc: float | None = None,
    previous_version: int | None = None,
    conservative: bool = False,
    confidence: float = 0.95,
    min_positives: int | None = None,
    min_negatives: int = MIN_NEGATIVES,
    max_auc_drop: float = MAX_AUC_DROP,
    force: bool = False,
    aim: float | None = None,
) -> Guarded:
    """τ for `target_recall` on the window's `scores` (`positives`: the items of class
    `target`), or GuardrailError naming every guardrail that failed.

    `aim`: choose τ for this recall instead (the adaptive level, `calibration.adapt_level`);
    the guardrails and the threshold's `target_recall` stay those of `target_recall`."""
    positives = positives.astype(bool)
    n_pos, n_neg = int(positives.sum()), int((~positives).sum())
    needed = default_min_positives(target_recall) if min_positives is None else min_positives
    if conservative:
        needed = max(needed, positives_needed(target_recall, confidence) or 0)
    failed: list[tuple[str, str]] = []
    if n_pos < needed:
        mode = f"the conservative {confidence:.0%} bound" if conservative else "exact mode"
        message = (
            f"too few positives: {n_pos} {target!r} items in the window, target recall "
            f"{target_recall:g} in {mode} needs at least {needed}"
        )
        failed.append(("too_few_positives", message))
    if n_neg < min_negatives:
        message = (
            f"too few negatives: {n_neg} items not {target!r} in the window, "
            f"at least {min_negatives} needed"
        )
        failed.append(("too_few_negatives", message))
    _refuse(target, failed, force)
    try:
        threshold = recall_threshold(
            scores,
            positives,
            target_recall if aim is None else aim,
            conservative=conservative,
            confidence=confidence,
        )
    except CalibrationError as error:
        raise GuardrailError(
            f"{target!r}: target not reachable: {error} (--force cannot override this)",
            ["unreachable"],
            False,
        ) from None
    auc = ranking.auc(scores, positives)
    auc_failed = []
    if previous_auc is not None and auc < previous_auc - max_auc_drop:
        message = (
            f"AUC fell from {previous_auc:.4f} (version {previous_version}) to {auc:.4f}, "
            f"more than the allowed {max_auc_drop:g}"
        )
        auc_failed.append(("auc_drop", message))
    _refuse(target, auc_failed, force)
    threshold = replace(threshold, target_recall=float(target_recall))
    return Guarded(threshold, auc, tuple(message for _, message in failed + auc_failed))


def _refuse(target: str, failed: list[tuple[str, str]], force: bool) -> None:
    if failed and not force:
        raise GuardrailError(
            f"refused for {target!r}: "
            + "; ".join(m for _, m in failed)
            + " (--force to override)",
            [r for r, _ in failed],
            True,
        )
