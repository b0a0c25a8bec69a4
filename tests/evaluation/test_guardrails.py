"""The calibration guardrails as a pure function: which windows may set a threshold, and what
`force` overrides."""

import numpy as np
import pytest

from filterd.bayes.arrays import BoolArray, FloatArray
from filterd.evaluation.calibration import positives_needed
from filterd.evaluation.guardrails import (
    MIN_POSITIVES_FULL_RECALL,
    GuardrailError,
    default_min_positives,
    guarded_threshold,
)


def window(
    n_pos: int, n_neg: int, separation: float = 3.0, seed: int = 0
) -> tuple[FloatArray, BoolArray]:
    """Scores of n_pos positives ~ N(separation, 1) and n_neg negatives ~ N(0, 1)."""
    rng = np.random.default_rng(seed)
    scores = np.concatenate([rng.normal(separation, 1.0, n_pos), rng.normal(0.0, 1.0, n_neg)])
    return scores, np.arange(n_pos + n_neg) < n_pos


def test_enough_of_both_classes_gives_the_exact_threshold_and_its_auc() -> None:
    scores, positives = window(200, 300)
    guarded = guarded_threshold(scores, positives, 0.99, target="spam")
    k = int(np.ceil(0.99 * 200))
    assert guarded.threshold.tau == np.sort(scores[positives])[::-1][k - 1]
    assert guarded.threshold.recall >= 0.99 and guarded.overridden == ()
    assert 0.9 < guarded.auc <= 1.0


@pytest.mark.parametrize(
    "n_pos, n_neg, reasons",
    [
        (50, 300, ("too_few_positives",)),
        (200, 40, ("too_few_negatives",)),
        (50, 40, ("too_few_positives", "too_few_negatives")),
    ],
)
def test_a_small_window_is_refused_naming_every_failed_guardrail(
    n_pos: int, n_neg: int, reasons: tuple[str, ...]
) -> None:
    scores, positives = window(n_pos, n_neg)
    with pytest.raises(GuardrailError) as refused:
        guarded_threshold(scores, positives, 0.99, target="spam")
    assert refused.value.reasons == reasons and refused.value.forceable
    assert "'spam'" in str(refused.value) and "--force" in str(refused.value)


def test_force_overrides_a_small_window_and_says_what_it_overrode() -> None:
    scores, positives = window(50, 300)
    guarded = guarded_threshold(scores, positives, 0.99, target="spam", force=True)
    (message,) = guarded.overridden
    assert message.startswith("too few positives: 50 'spam' items") and "at least 100" in message


def test_an_auc_drop_beyond_the_allowance_is_refused_unless_forced() -> None:
    scores, positives = window(200, 300, separation=1.0)
    auc = guarded_threshold(scores, positives, 0.99, target="spam").auc
    with pytest.raises(GuardrailError) as refused:
        guarded_threshold(
            scores, positives, 0.99, target="spam", previous_auc=auc + 0.05, previous_version=4
        )
    assert refused.value.reasons == ("auc_drop",) and "(version 4)" in str(refused.value)
    # within the allowance, or forced: a threshold
    assert (
        guarded_threshold(scores, positives, 0.99, target="spam", previous_auc=auc + 0.01).auc
        == auc
    )
    forced = guarded_threshold(
        scores, positives, 0.99, target="spam", previous_auc=auc + 0.05, force=True
    )
    assert len(forced.overridden) == 1 and "AUC fell" in forced.overridden[0]


def test_an_unreachable_target_cannot_be_forced() -> None:
    scores, positives = window(0, 300)
    with pytest.raises(GuardrailError) as refused:
        guarded_threshold(scores, positives, 0.99, target="spam", force=True)
    assert refused.value.reasons == ("unreachable",) and not refused.value.forceable


def test_conservative_mode_needs_the_positives_its_bound_can_reach_the_target_with() -> None:
    needed = positives_needed(0.99, 0.95)
    assert needed is not None and needed > default_min_positives(0.99)
    scores, positives = window(needed - 1, 300)
    with pytest.raises(GuardrailError, match=f"needs at least {needed}"):
        guarded_threshold(scores, positives, 0.99, target="spam", conservative=True)
    scores, positives = window(needed, 300)
    guarded = guarded_threshold(scores, positives, 0.99, target="spam", conservative=True)
    assert guarded.threshold.recall_lower_bound is not None
    assert guarded.threshold.recall_lower_bound >= 0.99


@pytest.mark.parametrize(
    "recall, needed",
    [(0.99, 100), (0.9, 10), (0.95, 20), (0.5, 2), (1.0, MIN_POSITIVES_FULL_RECALL)],
)
def test_the_default_minimum_of_positives_is_one_over_the_miss_rate(
    recall: float, needed: int
) -> None:
    assert default_min_positives(recall) == needed
