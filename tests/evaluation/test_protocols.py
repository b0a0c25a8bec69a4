from pathlib import Path

import pytest

from filterd.bayes.model import ModelSpec
from filterd.bayes.selection import Selection
from filterd.cli.corpus_files import read_corpus
from filterd.evaluation.corpus import Record, to_records
from filterd.evaluation.protocols import Corpus, evaluate, task_of
from filterd.evaluation.synth import SynthConfig, generate
from filterd.tokenize import Tokenizer

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "corpora"


def synthetic(n: int = 1500, **priors: float) -> Corpus:
    records = to_records(
        generate(SynthConfig(n_messages=n, class_priors=priors or {"ham": 0.85, "spam": 0.15}))
    )
    return Corpus.tokenize(records, Tokenizer())


def test_split_protocol_on_a_binary_stream() -> None:
    corpus = synthetic()
    result = evaluate(corpus, ModelSpec("mnb"), "split")
    assert (result.task, result.target) == ("binary", "spam")
    assert result.n_train + result.n_test == 1500 and result.n_test == pytest.approx(
        0.34 * 1500, abs=2
    )
    assert result.auc is not None and result.spec_at_full_recall is not None
    assert 0.9 < result.auc <= 1.0
    assert result.one_minus_auc_pct == pytest.approx(100 * (1 - result.auc))
    assert 0.0 <= result.spec_at_full_recall <= 1.0 and result.messages_per_second > 0


def test_online_protocol_scores_every_message_before_learning_it() -> None:
    corpus = synthetic(n=600)
    result = evaluate(corpus, ModelSpec("mnb", selection=Selection("local", 6, "or")), "online")
    assert result.n_train == result.n_test == 600
    assert (
        result.auc is not None and result.auc > 0.85
    )  # an immediate-feedback learner improves as it goes
    split = evaluate(corpus, ModelSpec("mnb", selection=Selection("local", 6, "or")), "split")
    assert split.protocol == "split" and result.protocol == "online"


def test_multiclass_corpus_reports_accuracy_and_one_vs_rest_ranking() -> None:
    corpus = synthetic(n=1500, sport=0.5, tech=0.3, food=0.2)
    result = evaluate(corpus, ModelSpec("twcnb"), "split")
    assert result.task == "multiclass" and set(result.per_class) == {"sport", "tech", "food"}
    assert result.accuracy is not None and result.macro_f1 is not None
    assert result.accuracy > 0.6 and 0 < result.macro_f1 <= 1
    with_selection = evaluate(
        corpus, ModelSpec("mnb", selection=Selection("local", 8, "alo")), "split"
    )
    assert (
        with_selection.accuracy is not None and with_selection.accuracy > 0.6
    )  # predicted by the best one-vs-rest decision score


def test_multilabel_corpus_is_one_binary_task_per_category() -> None:
    base = generate(SynthConfig(n_messages=900, class_priors={"grain": 0.5, "oil": 0.5}))
    records = [
        Record(
            r["id"],
            (r["label"], "wheat") if i % 3 == 0 else (r["label"],),
            r["text"],
            "text",
            r["order"],
            "test" if i % 4 == 0 else "train",
        )
        for i, r in enumerate(base)
    ]
    result = evaluate(Corpus.tokenize(records, Tokenizer()), ModelSpec("mnb"), "split")
    assert result.task == "multilabel"
    assert set(result.per_class) == {"grain", "oil", "wheat"}
    assert result.per_class["grain"]["auc"] > 0.9  # grain has words of its own; wheat is random
    assert result.n_test == sum(1 for r in records if r.split == "test")


def test_tasks_and_their_errors() -> None:
    two = [Record("1", ("a",), "x", "text", 1, None), Record("2", ("b",), "y", "text", 2, None)]
    with pytest.raises(ValueError, match="--target"):
        task_of(two, None)
    assert task_of(two, "b") == ("binary", "b")
    with pytest.raises(ValueError, match="not a label"):
        task_of(two, "spam")
    corpus = synthetic(n=300, a=0.4, b=0.3, c=0.3)
    with pytest.raises(ValueError, match="online protocol"):
        evaluate(corpus, ModelSpec("mnb"), "online")


@pytest.mark.skipif(not (SHARED / "sms-spam").exists(), reason="shared corpora absent")
def test_local_selection_raises_specificity_at_full_recall_on_sms() -> None:
    corpus = Corpus.tokenize(read_corpus(SHARED / "sms-spam" / "messages.jsonl.gz"), Tokenizer())
    everything = evaluate(corpus, ModelSpec("mnb"), "split")
    local = evaluate(corpus, ModelSpec("mnb", selection=Selection("local", 10, "or")), "split")
    assert everything.auc is not None and everything.auc > 0.98
    assert local.spec_at_full_recall is not None and everything.spec_at_full_recall is not None
    assert (
        local.spec_at_full_recall > everything.spec_at_full_recall + 0.2
    )  # Kołcz's direction (0.20 → 0.57)


def test_a_corpus_of_many_classes_is_evaluated_on_sparse_statistics(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import filterd.evaluation.protocols as evaluation

    monkeypatch.setattr(evaluation, "SPARSE_ABOVE", 2)  # make three classes count as many
    corpus = synthetic(n=900, sport=0.4, tech=0.3, food=0.3)
    sparse = evaluation.evaluate(corpus, ModelSpec("pnbc"), "split")
    monkeypatch.setattr(evaluation, "SPARSE_ABOVE", 64)
    dense = evaluation.evaluate(corpus, ModelSpec("pnbc"), "split")
    assert sparse.accuracy == dense.accuracy and sparse.auc == pytest.approx(dense.auc)
