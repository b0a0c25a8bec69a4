"""The protocols of `filterd evaluate`, on a tokenized corpus.

split   the corpus's own train/test split if it has one, else stratified 66/34 with seed 0
        (Frank & Bouckaert, Kołcz): learn the training part, score the test part.
online  the TREC immediate-feedback replay in `order`: score each message with everything
        learned before it, then learn its label (a two-class task; filterd.bayes.replay).
        Labels may arrive late (`LabelDelay`: a number of messages, or a time by the messages'
        `ts`, as fraud labels do), and the measures may cover only the messages sent from a
        time on (`report_from`), the model having learned from all before.

Tasks, by the corpus:
binary      two labels, or any corpus with a target class (target vs the rest): the decision
            score s(x) = s_t − max_{c≠t} s_c; lam% and accuracy at τ = 0 (the Bayes decision).
multiclass  one label of many, no target: accuracy and macro-F1 of the predicted class, and the
            ranking measures one-vs-rest per class, macro-averaged (Kołcz, Rennie).
multilabel  `labels` (Reuters): one binary task per category with positives in both parts,
            macro-averaged (the papers' protocol).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from functools import cached_property
from typing import Any

import numpy as np

from filterd.bayes.arrays import BoolArray, FloatArray, Int64Array
from filterd.bayes.features import DocBatch, concat, encode, select_docs
from filterd.bayes.fusion import (
    DecisionModel,
    FusionModel,
    build_model,
    fit_weights,
    replay_components,
    replay_fused,
)
from filterd.bayes.logistic import learn_steps
from filterd.bayes.model import FUSION, ModelSpec
from filterd.bayes.replay import Progress, online_scores
from filterd.bayes.statistics import Statistics
from filterd.entities import EntityMemory, EntitySpec
from filterd.evaluation import ranking
from filterd.evaluation.corpus import Record, is_multilabel, train_test_split
from filterd.evaluation.label_delay import LabelDelay
from filterd.tokenize import Tokens

AT_ONCE = LabelDelay()  # TREC's immediate feedback
SEED = 0  # token-key seed of evaluation runs; any fixed value gives the same results
# Documents tokenized, then encoded together: few enough that their token strings still sit
# in a core's L2 cache when encoded (a hundred mails' did not).
ENCODE_CHUNK = 20
SPARSE_ABOVE = 64  # classes; beyond, statistics are kept as (token, class) pairs
# wraps the loop over the records being tokenized (a progress bar), yielding them on
RecordProgress = Callable[[Iterable[Record]], Iterable[Record]]


@dataclass
class Evaluation:
    variant: str
    select: str
    protocol: str
    task: str
    target: str | None
    n_train: int
    n_test: int
    auc: float | None = None
    one_minus_auc_pct: float | None = None
    average_precision: float | None = None
    spec_at_full_recall: float | None = None
    recall_at_fpr_1pct: float | None = None
    recall_at_fpr_0_1pct: float | None = None
    lam_pct: float | None = None
    accuracy: float | None = None
    macro_f1: float | None = None
    seconds: float = 0.0
    messages_per_second: float = 0.0
    per_class: dict[str, dict[str, float]] = field(default_factory=dict)
    label_delay: str | None = None  # online: how late labels arrived (None: at once)
    report_from: str | None = None  # online: measured on the messages sent from then on

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class EntityReplay:
    """Entity memory in the online replay: what it remembers (`spec`, whose target's labels
    it counts) and when labels arrive (the replay's own `delay`)."""

    spec: EntitySpec
    delay: LabelDelay = AT_ONCE


@dataclass(frozen=True)
class Corpus:
    """Records with their token counts, computed once and shared by every variant; with
    `entities`, each message's tokens include its entities' (`filterd.entities`), from the
    messages before it in `order` and the labels arrived by then."""

    records: list[Record]
    batch: DocBatch
    tokenize_seconds: float
    entities: EntityReplay | None = None

    @classmethod
    def tokenize(
        cls,
        records: Sequence[Record],
        tokenizer: Callable[[dict[str, Any]], Tokens],
        progress: RecordProgress = iter,
        entities: EntityReplay | None = None,
    ) -> Corpus:
        started = time.perf_counter()
        hasher = Statistics(seed=SEED).hasher
        remembered = entity_tokens(records, entities) if entities else None
        # Encoding a chunk right after tokenizing it finds its strings still in the CPU cache:
        # faster than encoding the corpus whole.
        # The token strings themselves are dropped (evaluating needs no explanations).
        batches: list[DocBatch] = []
        docs: list[list[str]] = []
        for i, record in enumerate(progress(records)):
            tokens = tokenizer(record.message()).tokens
            docs.append(tokens if remembered is None else tokens + remembered[i])
            if len(docs) == ENCODE_CHUNK:
                batches.append(encode(docs, hasher, with_tokens=False))
                docs = []
        batches.append(encode(docs, hasher, with_tokens=False))
        return cls(list(records), concat(batches), time.perf_counter() - started, entities)

    @cached_property
    def _position(self) -> dict[str, int]:
        return {r.id: i for i, r in enumerate(self.records)}

    def batch_of(self, records: Sequence[Record]) -> DocBatch:
        """The token counts of `records` (records of this corpus), in their order."""
        return select_docs(
            self.batch, np.array([self._position[r.id] for r in records], dtype=np.int64)
        )

    @property
    def seconds_per_message(self) -> float:
        return self.tokenize_seconds / max(len(self.records), 1)


def entity_tokens(records: Sequence[Record], entities: EntityReplay) -> list[list[str]]:
    """Per record (in the given order): its entities' tokens, the records replayed in `order`,
    each label reaching the memory when `entities.delay` lets it arrive."""
    stream = _stream(records)
    sent = [records[i].ts for i in stream]
    arrived = entities.delay.visible(sent)
    memory = EntityMemory(entities.spec)
    target = entities.spec.target
    out: list[list[str]] = [[] for _ in records]
    learned = 0
    for j, i in enumerate(stream):
        # a record's fields are the message fields an entity is read from (not its text)
        for k in range(learned, int(arrived[j])):
            earlier = records[stream[k]]
            memory.label(earlier.fields, _seconds(sent[k]), target in earlier.labels)
        learned = max(learned, int(arrived[j]))
        out[i] = memory.tokens(records[i].fields, _seconds(sent[j]))
        memory.observe(records[i].fields, _seconds(sent[j]))
    return out


def _seconds(ts: datetime | None) -> float | None:
    return None if ts is None else ts.timestamp()


def task_of(records: Sequence[Record], target: str | None) -> tuple[str, str | None]:
    """The task a corpus calls for, and its target class ("spam" by default for two labels)."""
    labels = sorted({label for r in records for label in r.labels})
    if target is not None and target not in labels:
        raise ValueError(f"target {target!r} is not a label of this corpus ({_some(labels)})")
    if is_multilabel(records):
        return ("multilabel", target) if target is None else ("binary", target)
    if target is not None:
        return "binary", target
    if len(labels) == 2:
        if "spam" in labels:
            return "binary", "spam"
        raise ValueError(f"two labels ({', '.join(labels)}): say which is the target with --target")
    if len(labels) < 2:
        raise ValueError("the corpus needs at least two labels")
    return "multiclass", None


def _some(labels: list[str]) -> str:
    return ", ".join(labels[:8]) + (", …" if len(labels) > 8 else "")


def evaluate(
    corpus: Corpus,
    spec: ModelSpec,
    protocol: str = "split",
    target: str | None = None,
    progress: Progress = iter,
    delay: LabelDelay = AT_ONCE,
    report_from: datetime | None = None,
) -> Evaluation:
    """Run one variant on `corpus` under `protocol` ("split" or "online"); `progress` wraps the
    online replay's loop over the documents (it sees each one as the replay reaches it). `delay`
    and `report_from` are the online protocol's."""
    if protocol != "online" and (not delay.immediate or report_from is not None):
        raise ValueError("a label delay and a report start belong to the online protocol")
    if corpus.entities is not None and (protocol != "online" or corpus.entities.delay != delay):
        raise ValueError(
            "entity memory is replayed online, its labels as late as the protocol's: "
            "use --protocol online"
        )
    task, target = task_of(corpus.records, target)
    if spec.variant == FUSION and task != "binary":
        raise ValueError(
            "fusion is a two-class model: give a --target class (decided against the rest, "
            "as the daemon decides), or a --variant for every class"
        )
    if protocol == "split":
        return _split(corpus, spec, task, target)
    if protocol == "online":
        if task != "binary":
            raise ValueError(
                "the online protocol replays a two-class stream: give a --target class"
            )
        assert target is not None  # task_of gives every binary task its target
        return _online(corpus, spec, target, progress, delay, report_from)
    raise ValueError(f"protocol must be split or online, not {protocol!r}")


# --- split -----------------------------------------------------------------------------------


def validation_split(
    corpus: Corpus, target: str | None = None, fraction: float = 0.25
) -> tuple[Statistics, DocBatch, list[str], str | None]:
    """For tuning: statistics of the training part less a stratified validation share, that
    share's documents and labels (the test part stays untouched)."""
    task, target = task_of(corpus.records, target)
    if task == "multilabel":
        raise ValueError("tuning on a multi-label corpus needs a --target category")
    train, _ = train_test_split(corpus.records)
    fit, valid = train_test_split(
        [replace(r, split=None) for r in train], test_fraction=fraction, seed=1
    )
    stats = Statistics(seed=SEED)
    stats.update(corpus.batch_of(fit), [_label(r, target) for r in fit])
    batch = corpus.batch_of(valid)
    truth = (
        [target if target in r.labels else f"not {target}" for r in valid]
        if task == "binary"
        else [r.label for r in valid]
    )
    return stats, batch, truth, target


def _split(corpus: Corpus, spec: ModelSpec, task: str, target: str | None) -> Evaluation:
    train, test = train_test_split(corpus.records)
    train_batch, test_batch = corpus.batch_of(train), corpus.batch_of(test)
    result = Evaluation(
        spec_name(spec), str(spec.selection), "split", task, target, len(train), len(test)
    )
    started = time.perf_counter()
    if task == "multilabel":
        _multilabel(result, spec, train, train_batch, test, test_batch)
    else:
        labels = [_label(r, target) for r in train]
        stats = Statistics(seed=SEED, sparse=len(set(labels)) > SPARSE_ABOVE)
        _learn(stats, train_batch, labels, spec, target if task == "binary" else None)
        if task == "binary":
            assert target is not None  # task_of gives every binary task its target
            model = _learned_model(corpus, spec, target, stats, train)
            scores = model.score(test_batch).binary()
            _binary_measures(result, scores, np.array([target in r.labels for r in test]))
        else:
            _multiclass(result, stats, spec, test, test_batch)
    _timing(result, corpus, started, len(train) + len(test))
    return result


def split_scores(corpus: Corpus, spec: ModelSpec, target: str) -> FloatArray:
    """The decision scores of the split protocol's test part, target vs the rest: the scores
    `evaluate(corpus, spec, "split", target)` measures."""
    model, test = split_model(corpus, spec, target)
    return model.score(corpus.batch_of(test)).binary()


def split_model(corpus: Corpus, spec: ModelSpec, target: str) -> tuple[DecisionModel, list[Record]]:
    """The split protocol's model, target vs the rest, learned from the training part (a
    fusion with the weights `_learned_weights` gives it), and the test part's records: what
    `split_scores` scores, for scoring other messages too (bench/evasion.py's attacked ones)."""
    train, test = train_test_split(corpus.records)
    return model_of(corpus, spec, target, train), test


def model_of(
    corpus: Corpus, spec: ModelSpec, target: str, train: Sequence[Record]
) -> DecisionModel:
    """The model of `spec`, target vs the rest, learned from `train` (records of `corpus`, in
    `order`) as the split protocol learns its training part: a fusion with the weights
    `_learned_weights` gives it."""
    train = sorted(train, key=lambda r: r.order)
    stats = Statistics(seed=SEED)
    _learn(stats, corpus.batch_of(train), [_label(r, target) for r in train], spec, target)
    return _learned_model(corpus, spec, target, stats, train)


def _learn(
    stats: Statistics, batch: DocBatch, labels: list[str], spec: ModelSpec, target: str | None
) -> None:
    """Learn `batch` in order; for the fusion with a target, with the logistic component's
    steps (`filterd.bayes.logistic.learn_steps`), as the daemon's store learns them."""
    fused = spec.variant == FUSION and target is not None
    steps = learn_steps(stats, batch, labels, target) if fused and target else None
    stats.update(batch, labels, steps=steps)


def _learned_model(
    corpus: Corpus, spec: ModelSpec, target: str, stats: Statistics, train: list[Record]
) -> DecisionModel:
    """The model of `stats`, learned from `train`; a fusion with its weights."""
    model = _model(stats, spec, target)
    if isinstance(model, FusionModel):
        model = model.with_weights(_learned_weights(corpus, train, target))
    return model


def _model(stats: Statistics, spec: ModelSpec, target: str | None) -> DecisionModel:
    """Sparse statistics (many classes) score lazily: weights per batch, for its tokens only."""
    return build_model(
        stats, spec, target, lazy=stats.storage.sparse and not spec.needs_whole_vocabulary
    )


def _learned_weights(corpus: Corpus, train: list[Record], target: str) -> tuple[float, ...]:
    """A fusion's weights as a daemon that learned the training part as a stream would hold
    them: `fit_weights` on the components' scores of its online replay, in `order`."""
    stream = sorted(train, key=lambda r: r.order)
    truth = np.array([target in r.labels for r in stream])
    return fit_weights(replay_components(corpus.batch_of(stream), truth, target), truth)


def _label(record: Record, target: str | None) -> str:
    """Single-label corpora keep their labels; a multi-label record is the target or the rest."""
    if len(record.labels) == 1:
        return record.labels[0]
    return target if target in record.labels else f"not {target}"


# the two-class measures of an evaluation, also averaged over the classes of a multi-class one
BINARY_MEASURES = (
    "auc",
    "one_minus_auc_pct",
    "average_precision",
    "spec_at_full_recall",
    "recall_at_fpr_1pct",
    "recall_at_fpr_0_1pct",
    "lam_pct",
)


def _binary_measures(result: Evaluation, scores: FloatArray, truth: BoolArray) -> None:
    summary = ranking.binary_summary(scores, truth, tau=0.0)
    for name in BINARY_MEASURES:
        setattr(result, name, float(summary[name]))
    predicted = scores >= 0.0
    result.accuracy = ranking.accuracy(truth, predicted)
    result.macro_f1 = ranking.macro_f1(truth, predicted, labels=[True, False])


def _multiclass(
    result: Evaluation, stats: Statistics, spec: ModelSpec, test: list[Record], batch: DocBatch
) -> None:
    truth = [r.label for r in test]
    one_vs_rest = {c: _model(stats, spec, c).score(batch).binary() for c in stats.labels}
    for c, scores in one_vs_rest.items():
        positives = np.array([t == c for t in truth])
        if positives.any() and not positives.all():
            result.per_class[c] = ranking.binary_summary(scores, positives, tau=0.0)
    if spec.selection.kind in ("local", "global"):  # selection ranks tokens per target class
        columns = list(one_vs_rest)
        predicted = [columns[i] for i in np.column_stack(list(one_vs_rest.values())).argmax(axis=1)]
    else:
        predicted = _model(stats, spec, None).score(batch).predict()
    result.accuracy = ranking.accuracy(np.array(truth), np.array(predicted))
    result.macro_f1 = ranking.macro_f1(truth, predicted)
    _macro_average(result)


def _multilabel(
    result: Evaluation,
    spec: ModelSpec,
    train: list[Record],
    train_batch: DocBatch,
    test: list[Record],
    test_batch: DocBatch,
) -> None:
    categories = sorted({c for r in train for c in r.labels} & {c for r in test for c in r.labels})
    f1 = []
    for c in categories:
        stats = Statistics(seed=SEED)
        stats.update(train_batch, [c if c in r.labels else f"not {c}" for r in train])
        scores = build_model(stats, spec, c).score(test_batch).binary()
        truth = np.array([c in r.labels for r in test])
        result.per_class[c] = ranking.binary_summary(scores, truth, tau=0.0)
        f1.append(_f1(truth, scores >= 0.0))
    result.macro_f1 = float(np.mean(f1)) if f1 else None
    _macro_average(result)


def _f1(truth: BoolArray, predicted: BoolArray) -> float:
    tp = np.sum(truth & predicted)
    return float(2 * tp / max(truth.sum() + predicted.sum(), 1))


def _macro_average(result: Evaluation) -> None:
    if not result.per_class:
        return
    for name in BINARY_MEASURES:
        setattr(result, name, float(np.mean([m[name] for m in result.per_class.values()])))


# --- online ----------------------------------------------------------------------------------


def _online(
    corpus: Corpus,
    spec: ModelSpec,
    target: str,
    progress: Progress,
    delay: LabelDelay,
    report_from: datetime | None,
) -> Evaluation:
    started = time.perf_counter()
    stream = _stream(corpus.records)
    reported = _reported(corpus, stream, report_from)
    positive = np.array([target in corpus.records[i].labels for i in stream])[reported]
    if report_from is not None and (positive.all() or not positive.any()):
        raise ValueError(
            f"the messages sent from {report_from.isoformat()} on hold one class only: "
            "give an earlier --report-from"
        )
    scores, truth = online_replay(corpus, spec, target, progress, delay)
    n = len(truth)
    result = Evaluation(
        spec_name(spec), str(spec.selection), "online", "binary", target, n, int(reported.sum())
    )
    if not delay.immediate:
        result.label_delay = str(delay)
    if report_from is not None:
        result.report_from = report_from.isoformat()
    _binary_measures(result, scores[reported], truth[reported])
    _timing(result, corpus, started, n)
    return result


def _stream(records: Sequence[Record]) -> Int64Array:
    """The positions of `records` in stream order (by `order`)."""
    return np.array(sorted(range(len(records)), key=lambda i: records[i].order), dtype=np.int64)


def _reported(corpus: Corpus, stream: Int64Array, report_from: datetime | None) -> BoolArray:
    """(n,) in stream order: the messages the measures cover, those sent at or after
    `report_from` (all without it; a message without `ts` then is an error)."""
    if report_from is None:
        return np.ones(len(stream), dtype=bool)
    sent = [corpus.records[i].ts for i in stream]
    missing = next((j for j, ts in enumerate(sent) if ts is None), None)
    if missing is not None:
        raise ValueError(
            f"--report-from needs every message's ts: {corpus.records[stream[missing]].id!r} "
            "has none"
        )
    reported = np.array([ts is not None and ts >= report_from for ts in sent])
    if not reported.any():
        raise ValueError(f"no message was sent at or after {report_from.isoformat()}")
    return reported


def online_replay(
    corpus: Corpus,
    spec: ModelSpec,
    target: str,
    progress: Progress = iter,
    delay: LabelDelay = AT_ONCE,
) -> tuple[FloatArray, BoolArray]:
    """(scores, truth) of the online protocol, the records in `order`, labels learned `delay`
    late: what `evaluate(corpus, spec, "online", target, delay=delay)` measures."""
    stream = _stream(corpus.records)
    truth = np.array([target in corpus.records[i].labels for i in stream])
    batch = select_docs(corpus.batch, stream)
    visible = None if delay.immediate else delay.visible([corpus.records[i].ts for i in stream])
    if spec.variant == FUSION:
        components = replay_components(batch, truth, target, progress, visible)
        # the rows the weights learn from: each message scored as its label arrives, every label
        # before it learned (labels arrive in the stream's order)
        arrival = None if visible is None else replay_components(batch, truth, target)
        return replay_fused(components, truth, visible=visible, arrival=arrival), truth
    return online_scores(batch, truth, spec, target, progress, visible), truth


def _timing(result: Evaluation, corpus: Corpus, started: float, messages: int) -> None:
    result.seconds = time.perf_counter() - started + corpus.seconds_per_message * messages
    result.messages_per_second = messages / result.seconds if result.seconds > 0 else 0.0


def spec_name(spec: ModelSpec) -> str:
    """The variant part of a spec's name (without the selection)."""
    return str(ModelSpec(spec.variant, spec.params, set_of_words=spec.set_of_words))
