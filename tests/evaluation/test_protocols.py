from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from filterd.bayes.model import ModelSpec
from filterd.bayes.selection import Selection
from filterd.cli.corpus_files import read_corpus
from filterd.entities import EntitySpec
from filterd.evaluation import ranking
from filterd.evaluation.corpus import Record, to_records
from filterd.evaluation.label_delay import LabelDelay
from filterd.evaluation.protocols import (
    AT_ONCE,
    Corpus,
    EntityReplay,
    entity_tokens,
    evaluate,
    online_replay,
    task_of,
)
from filterd.evaluation.synth import SynthConfig, generate
from filterd.evaluation.synth_transactions import TransactionConfig, generate_transactions
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


# --- transactions: a corpus line is a message, labels arrive late ------------------------------


@pytest.fixture(scope="module")
def payments() -> list[Record]:
    return to_records(generate_transactions(TransactionConfig(customers=120, days=20)))


def test_a_transactions_attributes_reach_the_evaluation(payments: list[Record]) -> None:
    spec = ModelSpec("robinson_fisher")
    with_fields = evaluate(Corpus.tokenize(payments, Tokenizer()), spec, "online", "fraud")
    assert with_fields.auc is not None and with_fields.auc > 0.75
    without = [replace(r, fields={}) for r in payments]  # what the corpus reader used to keep
    blind = evaluate(Corpus.tokenize(without, Tokenizer()), spec, "online", "fraud")
    assert blind.auc == 0.5


def test_labels_a_week_late_are_not_evidence_until_they_arrive(payments: list[Record]) -> None:
    corpus = Corpus.tokenize(payments, Tokenizer())
    spec = ModelSpec("robinson_fisher")
    at_once = evaluate(corpus, spec, "online", "fraud")
    week = evaluate(corpus, spec, "online", "fraud", delay=LabelDelay(after=timedelta(days=7)))
    assert week.label_delay == "604800s" and at_once.label_delay is None
    scores, _ = online_replay(corpus, spec, "fraud", delay=LabelDelay(after=timedelta(days=7)))
    start = datetime(2018, 4, 1, tzinfo=UTC)  # TransactionConfig's
    first_week = np.array([r.ts is not None and r.ts < start + timedelta(days=7) for r in payments])
    assert first_week.any() and (scores[first_week] == 0).all()  # nothing learned yet
    assert week.auc is not None and at_once.auc is not None and week.auc < at_once.auc
    # the whole stream late: nothing is ever learned
    never = LabelDelay(messages=len(payments))
    assert (online_replay(corpus, spec, "fraud", delay=never)[0] == 0).all()


def test_the_report_covers_the_messages_from_a_time_on(payments: list[Record]) -> None:
    corpus = Corpus.tokenize(payments, Tokenizer())
    start = datetime(2018, 4, 11, tzinfo=UTC)
    result = evaluate(corpus, ModelSpec("mnb"), "online", "fraud", report_from=start)
    later = [r for r in payments if r.ts is not None and r.ts >= start]
    assert result.n_train == len(payments) and result.n_test == len(later) < len(payments)
    assert result.report_from == "2018-04-11T00:00:00+00:00"
    scores, truth = online_replay(corpus, ModelSpec("mnb"), "fraud")
    reported = np.array([r.ts is not None and r.ts >= start for r in payments])
    assert result.auc == pytest.approx(ranking.auc(scores[reported], truth[reported]))
    for measure in ("average_precision", "recall_at_fpr_1pct", "recall_at_fpr_0_1pct"):
        assert 0.0 <= getattr(result, measure) <= 1.0, measure


def test_late_labels_and_a_report_start_are_refused_where_they_cannot_apply(
    payments: list[Record],
) -> None:
    corpus = Corpus.tokenize(payments, Tokenizer())
    spec = ModelSpec("mnb")
    with pytest.raises(ValueError, match="online protocol"):
        evaluate(corpus, spec, "split", "fraud", delay=LabelDelay(messages=5))
    with pytest.raises(ValueError, match="no message was sent at or after"):
        evaluate(corpus, spec, "online", "fraud", report_from=datetime(2030, 1, 1, tzinfo=UTC))
    untimed = Corpus.tokenize([replace(r, ts=None) for r in payments], Tokenizer())
    with pytest.raises(ValueError, match="needs every message's ts"):
        evaluate(untimed, spec, "online", "fraud", delay=LabelDelay(after=timedelta(days=1)))
    with pytest.raises(ValueError, match="needs every message's ts"):
        evaluate(untimed, spec, "online", "fraud", report_from=datetime(2018, 4, 2, tzinfo=UTC))


def test_the_fusion_learns_its_weights_from_the_labels_that_have_arrived(
    payments: list[Record],
) -> None:
    corpus = Corpus.tokenize(payments, Tokenizer())
    never = LabelDelay(messages=len(payments))
    scores, _ = online_replay(corpus, ModelSpec("fusion"), "fraud", delay=never)
    assert (scores == 0).all()  # no component has learned, and no weights either


def test_entity_memory_in_the_replay_learns_labels_only_once_they_arrive(
    payments: list[Record],
) -> None:
    spec = EntitySpec(keys=("customer", "terminal"), label_window=28 * 86400, target="fraud")
    week = LabelDelay(after=timedelta(days=7))
    tokens = entity_tokens(payments, EntityReplay(spec, week))
    start = datetime(2018, 4, 1, tzinfo=UTC)
    first_week = [
        i for i, r in enumerate(payments) if r.ts is not None and r.ts < start + timedelta(days=7)
    ]
    assert all("terminal:fraud_28d~0" in tokens[i] for i in first_week)
    later = [t for r, t in zip(payments, tokens) if "terminal:fraud_28d~0" not in t]
    assert later  # compromised terminals, once their first frauds' labels are in
    at_once = entity_tokens(payments, EntityReplay(spec, AT_ONCE))
    assert sum("terminal:fraud_28d~0" not in t for t in at_once) > len(later)
    corpus = Corpus.tokenize(payments, Tokenizer(), entities=EntityReplay(spec, week))
    remembered = evaluate(corpus, ModelSpec("robinson_fisher"), "online", "fraud", delay=week)
    plain = evaluate(
        Corpus.tokenize(payments, Tokenizer()),
        ModelSpec("robinson_fisher"),
        "online",
        "fraud",
        delay=week,
    )
    assert remembered.auc is not None and plain.auc is not None
    assert remembered.auc > plain.auc  # velocity, the usual amount and the terminal's frauds
    with pytest.raises(ValueError, match="entity memory is replayed online"):
        evaluate(corpus, ModelSpec("mnb"), "split", "fraud")
    with pytest.raises(ValueError, match="entity memory is replayed online"):
        evaluate(corpus, ModelSpec("mnb"), "online", "fraud")  # labels at once, not a week late
