"""Deciding with one model version and one threshold (no I/O)."""

import numpy as np
import pytest

from filterd.bayes.features import encode
from filterd.bayes.model import ModelSpec
from filterd.bayes.selection import Selection
from filterd.bayes.statistics import Statistics
from filterd.service.decide import (
    UNDECIDED,
    Decider,
    NotReady,
    ThresholdSetting,
    decision_scores,
    scoring_model,
)
from filterd.service.records import Message

SPAM = ["win cash now", "free prize win", "cash prize claim now"] * 10
HAM = ["lunch at noon", "see you at the meeting", "noon meeting moved"] * 10


def trained(spam: list[str] = SPAM, ham: list[str] = HAM, seed: int = 3) -> Statistics:
    stats = Statistics(seed=seed)
    for text in spam:
        stats.learn(text.split(), "spam")
    for text in ham:
        stats.learn(text.split(), "ham")
    return stats


def messages(*texts: str) -> list[Message]:
    return [Message(id=f"m{i}", text=t) for i, t in enumerate(texts)]


def test_spam_is_labelled_spam_and_ham_the_other_class() -> None:
    decider = Decider(ModelSpec("mnb"), "spam", min_docs=5)
    decider.update(trained(), version=7)
    out = decider.decide(
        messages("claim your cash prize", "meeting at noon"), ThresholdSetting(0.0, 3, 0.99)
    )
    assert [d.label for d in out] == ["spam", "ham"]
    assert out[0].score > 0 > out[1].score
    assert {d.model_version for d in out} == {7} and {d.threshold_version for d in out} == {3}
    assert out[0].message_id == "m0" and out[0].target_recall == 0.99


def test_the_threshold_moves_the_decision() -> None:
    decider = Decider(ModelSpec("mnb"), "spam", min_docs=5)
    decider.update(trained(), version=1)
    (low,) = decider.decide(messages("claim your cash prize"), ThresholdSetting(0.0))
    (high,) = decider.decide(messages("claim your cash prize"), ThresholdSetting(low.score + 1.0))
    assert low.label == "spam" and high.label == "ham" and high.score == low.score


def test_the_explanation_is_the_selected_tokens_with_signed_contributions() -> None:
    decider = Decider(
        ModelSpec("mnb", selection=Selection.parse("local:2:alo")), "spam", min_docs=5
    )
    decider.update(trained(), version=1)
    (d,) = decider.decide(messages("win cash at noon"), ThresholdSetting())
    assert len(d.explanation) == 2
    assert all(isinstance(token, str) and isinstance(c, float) for token, c in d.explanation)
    assert abs(d.explanation[0][1]) >= abs(d.explanation[1][1])
    assert {t for t, _ in d.explanation} <= {"win", "cash", "at", "noon"}


def test_before_the_model_is_ready_decisions_say_unknown() -> None:
    decider = Decider(ModelSpec("mnb"), "spam", min_docs=50)
    decider.update(trained(), version=2)
    assert decider.not_ready is not None and "needs 50 learned documents" in decider.not_ready
    (d,) = decider.decide(messages("win cash"), ThresholdSetting())
    assert d.label == UNDECIDED and d.explanation == [] and d.model_version == 2


def test_a_model_without_the_target_class_is_not_ready() -> None:
    stats = trained()
    with pytest.raises(NotReady, match="no class 'fraud'"):
        scoring_model(stats, ModelSpec("mnb"), "fraud", min_docs=5)


def test_more_than_two_classes_decide_target_versus_the_rest() -> None:
    stats = trained()
    for _ in range(10):
        stats.learn(["invoice", "payment", "due"], "billing")
    decider = Decider(ModelSpec("mnb"), "spam", min_docs=5)
    decider.update(stats, version=1)
    labels = [
        d.label
        for d in decider.decide(messages("win cash prize", "invoice due"), ThresholdSetting())
    ]
    assert labels == ["spam", "not spam"]


def test_decision_scores_equal_the_deciders_scores() -> None:
    stats = trained()
    decider = Decider(ModelSpec("twcnb"), "spam", min_docs=5)
    decider.update(stats, version=1)
    texts = ["win cash", "noon lunch", "prize meeting"]
    model = scoring_model(stats, ModelSpec("twcnb"), "spam", 5)
    direct = decision_scores(model, encode([t.split() for t in texts], stats.hasher))
    decided = [d.score for d in decider.decide(messages(*texts), ThresholdSetting())]
    np.testing.assert_allclose(decided, direct)


def test_without_a_threshold_a_message_without_evidence_is_not_flagged() -> None:
    from filterd.bayes.model import ROBINSON_FISHER_SPEC

    decider = Decider(ROBINSON_FISHER_SPEC, "spam", min_docs=5)
    decider.update(trained(), version=1)
    empty, unseen = decider.decide(messages("", "zzqx vvbn qqpw"), ThresholdSetting())
    assert (empty.score, unseen.score) == (0.0, 0.0)
    assert empty.label == unseen.label == "ham" and empty.explanation == []
    # a calibrated τ of 0 decides the tie as target, as calibration counted it
    (tied,) = decider.decide(messages(""), ThresholdSetting(tau=0.0, version=1))
    assert tied.label == "spam"
