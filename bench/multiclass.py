"""How do filterd, River and scikit-learn classify SMS into ham, spam and smishing?

    .venv/bin/python bench/multiclass.py [--corpus ../shared/corpora/sms-smishing]
                                         [--protocol split|online|both] [--limit N]

Prints accuracy, macro-F1 and per-class F1 of each system, split and online. Protocol (printed
with the table):
- The corpus is read by `filterd.cli.corpus_files.read_corpus` (sorted by `order`; the first N
  with --limit) and tokenized once by filterd's default tokenizer (`filterd.tokenize.Tokenizer()`).
  Every system gets those tokens with their counts: filterd as its hashed token counts, River as
  a dict token → count, scikit-learn as DictVectorizer columns of the same dicts. The labels
  are the corpus's own, as they are (no relabelling): one class per message.
- split: `filterd.evaluation.corpus.train_test_split`, the one `filterd evaluate` uses (the corpus's
  own `split` field when every record has one, else stratified 66/34 with seed 0; sms-smishing
  has none). Each system learns the training part and predicts one class per test message.
- online: immediate feedback in `order`: predict each message with everything learned before
  it, then learn its label. Messages are counted once every class has been learned at least
  once (before that a system cannot name the class it has not met); all are learned. `filterd
  evaluate` has no multi-class online protocol (it replays a two-class stream), so this replay
  is this script's: filterd's models are rebuilt from the statistics before each message.
- Predicted class: argmax of the system's class scores (joint log-likelihoods for River and
  scikit-learn). filterd decides as `filterd evaluate` does on a multi-class corpus
  (filterd.evaluation.protocols._multiclass): with a feature selection (local/global, e.g. the
  default model), the class whose one-vs-rest decision score s_c − max_{c'≠c} s_c' is highest,
  since selection ranks tokens per target class; the default's Robinson–Fisher rule is a
  two-class rule, so the default model decides by three one-vs-rest Robinson–Fisher models.
  Without selection, the argmax of the multi-class model. The split figures of filterd are
  checked against `filterd.evaluation.protocols.evaluate` (the code path of `filterd evaluate`).
- Systems: filterd's Robinson–Fisher (`filterd.bayes.model.ROBINSON_FISHER_SPEC`; the default
  fusion is a two-class model), its
  multi-class estimators mnb, cnb, twcnb, pnbc, wmnb with default parameters and no selection,
  and the peers harness's twcnb/pnbc + local:6:alo candidates (bench/peers/adapters.py);
  River naive_bayes.MultinomialNB / ComplementNB (α = 1, learn_one, predict_one); scikit-learn
  MultinomialNB / ComplementNB (α = 1; split: fit on the training part's DictVectorizer; online:
  partial_fit one message at a time on a DictVectorizer fitted to the whole stream's tokens,
  which are known up front and carry no label: the columns a message has not met yet are zero).
  bench/peers/adapters.py drives River and scikit-learn on two classes only (spam or not), hence
  this script.
- Reported: accuracy, macro-F1 (unweighted mean of the per-class F1) by
  `filterd.evaluation.ranking`, the per-class F1, and seconds of wall time to learn and predict
  (tokenization excluded: it is shared and given once above the table).
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Protocol

import numpy as np

from filterd.bayes.features import select_docs
from filterd.bayes.model import ROBINSON_FISHER_SPEC, Model, ModelSpec
from filterd.bayes.replay import online_scores
from filterd.bayes.statistics import Statistics
from filterd.cli.corpus_files import read_corpus
from filterd.evaluation import ranking
from filterd.evaluation.corpus import Record, train_test_split
from filterd.evaluation.protocols import SEED, Corpus, evaluate
from filterd.tokenize import Tokenizer, Tokens
from harness import CORPORA

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "peers"))
from adapters import ensure  # noqa: E402

DEFAULT_CORPUS = CORPORA / "sms-smishing"

FILTERD_SPECS = [
    ROBINSON_FISHER_SPEC,
    *(ModelSpec.parse(v) for v in ("mnb", "cnb", "twcnb", "pnbc", "wmnb")),
    ModelSpec.parse("twcnb", {}, "local:6:alo"),
    ModelSpec.parse("pnbc", {}, "local:6:alo"),
]


class Data:
    """The corpus once: records in order, their tokens as counts, filterd's encoding, the split."""

    def __init__(self, records: list[Record]) -> None:
        tokenizer = Tokenizer()
        started = time.perf_counter()
        tokens: dict[str, Tokens] = {r.id: tokenizer(r.message()) for r in records}
        self.tokenize_seconds = time.perf_counter() - started
        self.records = records
        self.labels = sorted({r.label for r in records})
        self.corpus = Corpus.tokenize(records, lambda message: tokens[message["id"]])
        self.counts = [dict(Counter(tokens[r.id].tokens)) for r in records]
        self.index = {r.id: i for i, r in enumerate(records)}
        self.train, self.test = train_test_split(records)
        self.burn_in = burn_in(records, self.labels)

    def part(self, part: Sequence[Record]) -> tuple[list[dict[str, int]], list[str]]:
        return [self.counts[self.index[r.id]] for r in part], [r.label for r in part]

    def truth(self, protocol: str) -> list[str]:
        scored = self.test if protocol == "split" else self.records[self.burn_in :]
        return [r.label for r in scored]


def burn_in(records: Sequence[Record], labels: Sequence[str]) -> int:
    """The first position at which every class has been learned at least once."""
    seen: set[str] = set()
    for i, r in enumerate(records):
        if seen == set(labels):
            return i
        seen.add(r.label)
    return len(records)


# --- filterd ---------------------------------------------------------------------------------


def by_one_vs_rest(spec: ModelSpec) -> bool:
    """Whether `filterd evaluate` decides a multi-class task by one-vs-rest scores for `spec`."""
    return spec.selection.kind in ("local", "global")


def filterd_split(spec: ModelSpec, data: Data) -> list[str]:
    corpus = data.corpus
    stats = Statistics(seed=SEED)
    stats.update(corpus.batch_of(data.train), [r.label for r in data.train])
    batch = corpus.batch_of(data.test)
    if by_one_vs_rest(spec):
        columns = list(stats.labels)
        scores = np.column_stack(
            [Model.build(stats, spec, c).score(batch).binary() for c in columns]
        )
        return [columns[i] for i in scores.argmax(axis=1)]
    return Model.build(stats, spec, None).score(batch).predict()


def filterd_online(spec: ModelSpec, data: Data) -> list[str]:
    batch = data.corpus.batch
    truth = [r.label for r in data.records]
    if by_one_vs_rest(spec):  # the vectorized two-class replay, once per class
        columns = data.labels
        scores = np.column_stack(
            [online_scores(batch, np.array([t == c for t in truth]), spec, c) for c in columns]
        )
        return [columns[i] for i in scores[data.burn_in :].argmax(axis=1)]
    stats = Statistics(data.labels, seed=SEED)
    lazy = not spec.needs_whole_vocabulary
    predicted = []
    for i in range(len(truth)):
        one = select_docs(batch, np.array([i]))
        if i >= data.burn_in:
            predicted.append(Model.build(stats, spec, None, lazy=lazy).score(one).predict()[0])
        stats.update(one, [truth[i]])
    return predicted


def check_filterd(spec: ModelSpec, data: Data, predicted: list[str]) -> str:
    """'' if `filterd evaluate`'s code path gives the same accuracy and macro-F1, else what
    differs."""
    result = evaluate(data.corpus, spec, "split")
    truth = data.truth("split")
    mine = (
        ranking.accuracy(np.array(truth), np.array(predicted)),
        ranking.macro_f1(truth, predicted),
    )
    theirs = (result.accuracy, result.macro_f1)
    if result.task != "multiclass" or any(
        t is None or abs(m - t) > 1e-12 for m, t in zip(mine, theirs, strict=True)
    ):
        return f"CHECK: filterd evaluate gives {result.task} acc {theirs[0]}, macro-F1 {theirs[1]}"
    return ""


# --- River -----------------------------------------------------------------------------------


class RiverClassifier(Protocol):
    """What this benchmark calls of River's naive Bayes classifiers (River has no types)."""

    def learn_one(self, x: dict[str, int], y: str) -> None: ...
    def predict_one(self, x: dict[str, int]) -> str: ...


def river_model(estimator: str) -> RiverClassifier:
    from river import naive_bayes

    model: RiverClassifier = (
        naive_bayes.MultinomialNB() if estimator == "mnb" else naive_bayes.ComplementNB()
    )
    return model


def river_split(estimator: str, data: Data) -> list[str]:
    nb = river_model(estimator)
    for x, y in zip(*data.part(data.train), strict=True):
        nb.learn_one(x, y)
    return [nb.predict_one(x) for x in data.part(data.test)[0]]


def river_online(estimator: str, data: Data) -> list[str]:
    nb = river_model(estimator)
    predicted = []
    for i, (x, y) in enumerate(zip(*data.part(data.records), strict=True)):
        if i >= data.burn_in:
            predicted.append(nb.predict_one(x))
        nb.learn_one(x, y)
    return predicted


# --- scikit-learn ----------------------------------------------------------------------------


class SklearnClassifier(Protocol):
    """What this benchmark calls of scikit-learn's naive Bayes classifiers (on the sparse
    matrices of a DictVectorizer; scikit-learn has no types)."""

    def fit(self, X: object, y: Sequence[str]) -> SklearnClassifier: ...
    def partial_fit(
        self, X: object, y: Sequence[str], classes: Sequence[str]
    ) -> SklearnClassifier: ...
    def predict(self, X: object) -> Sequence[object]: ...


def sklearn_model(estimator: str) -> SklearnClassifier:
    from sklearn.naive_bayes import ComplementNB, MultinomialNB

    model: SklearnClassifier = MultinomialNB() if estimator == "mnb" else ComplementNB()
    return model


def sklearn_split(estimator: str, data: Data) -> list[str]:
    from sklearn.feature_extraction import DictVectorizer

    vectorizer = DictVectorizer()
    X_train, y_train = data.part(data.train)
    clf = sklearn_model(estimator).fit(vectorizer.fit_transform(X_train), y_train)
    return [str(y) for y in clf.predict(vectorizer.transform(data.part(data.test)[0]))]


def sklearn_online(estimator: str, data: Data) -> list[str]:
    from sklearn.feature_extraction import DictVectorizer

    X_all, y_all = data.part(data.records)
    X = DictVectorizer().fit_transform(X_all).tocsr()
    clf = sklearn_model(estimator)
    predicted = []
    with warnings.catch_warnings(), np.errstate(divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # log(0) priors of classes not met yet
        for i, y in enumerate(y_all):
            row = X[i : i + 1]
            if i >= data.burn_in:
                predicted.append(str(clf.predict(row)[0]))
            clf.partial_fit(row, [y], classes=data.labels)
    return predicted


# --- the table -------------------------------------------------------------------------------


def per_class_f1(
    truth: Sequence[str], predicted: Sequence[str], labels: Sequence[str]
) -> list[float]:
    out = []
    for c in labels:
        tp = sum(t == p == c for t, p in zip(truth, predicted, strict=True))
        out.append(2 * tp / max(sum(t == c for t in truth) + sum(p == c for p in predicted), 1))
    return out


# a system: its name, filterd's spec (None for a peer), and its run under each protocol: one
# predicted class per scored message (split: the test part; online: the stream after the burn-in)
Run = Callable[[Data], list[str]]


def systems(families: dict[str, bool]) -> list[tuple[str, ModelSpec | None, dict[str, Run]]]:
    rows: list[tuple[str, ModelSpec | None, dict[str, Run]]] = []
    for spec in FILTERD_SPECS:
        label = ("filterd default " if spec == ROBINSON_FISHER_SPEC else "filterd ") + str(spec)
        rows.append(
            (
                label,
                spec,
                {"split": partial(filterd_split, spec), "online": partial(filterd_online, spec)},
            )
        )
    peers = {"River": (river_split, river_online), "scikit-learn": (sklearn_split, sklearn_online)}
    for (peer, (split, online)), family in zip(peers.items(), ("river", "sklearn"), strict=True):
        for estimator, name in (("mnb", "MultinomialNB"), ("cnb", "ComplementNB")):
            if families[family]:
                rows.append(
                    (
                        f"{peer} {name}",
                        None,
                        {"split": partial(split, estimator), "online": partial(online, estimator)},
                    )
                )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--corpus", type=Path, default=DEFAULT_CORPUS, help="a corpus folder or file"
    )
    parser.add_argument("--protocol", choices=["split", "online", "both"], default="both")
    parser.add_argument("--limit", type=int, help="the first N messages (in order) only")
    args = parser.parse_args()
    command = ("python bench/multiclass.py " + shlex.join(sys.argv[1:])).rstrip()
    started = time.perf_counter()
    versions, families = [], {}
    for family in ("filterd", "river", "sklearn"):
        ok, text = ensure(family)
        families[family] = ok
        versions.append(text if ok else f"{family}: skipped, {text}")
    records = read_corpus(args.corpus)[: args.limit]
    if any(len(r.labels) != 1 for r in records):
        raise SystemExit(f"{args.corpus}: a single-label corpus is needed")
    data = Data(records)
    protocols = ["split", "online"] if args.protocol == "both" else [args.protocol]
    lines, checks = [], []
    for protocol in protocols:
        truth = data.truth(protocol)
        for name, spec, runs in systems(families):
            print(f"[{protocol}] {name} …", file=sys.stderr, flush=True)
            began = time.perf_counter()
            predicted = runs[protocol](data)
            seconds = time.perf_counter() - began
            if len(predicted) != len(truth):
                raise SystemExit(f"{name}: {len(predicted)} predictions for {len(truth)} messages")
            if (
                protocol == "split"
                and spec is not None
                and (problem := check_filterd(spec, data, predicted))
            ):
                checks.append(f"{name}: {problem}")
            f1 = per_class_f1(truth, predicted, data.labels)
            lines.append(
                f"| {name} | {protocol} | {len(truth):,} | "
                f"{ranking.accuracy(np.array(truth), np.array(predicted)):.4f} | "
                f"{ranking.macro_f1(truth, predicted, labels=data.labels):.4f} | "
                + " | ".join(f"{v:.4f}" for v in f1)
                + f" | {seconds:.2f} |"
            )
    counts = Counter(r.label for r in records)
    total = time.perf_counter() - started
    print(
        f"Produced on {datetime.date.today().isoformat()} by `{command}` in {total:.0f} s "
        f"({os.cpu_count()} cores; other work shared the machine). "
        f"Versions: {'; '.join(versions)}.\n"
    )
    print(
        f"**{corpus_name(args.corpus)}**: {len(records):,} messages ("
        + ", ".join(f"{c} {counts[c]:,}" for c in data.labels)
        + f"); split {len(data.train):,} train / {len(data.test):,} test"
        + (
            " (the corpus's own)"
            if all(r.split for r in records)
            else " (stratified 66/34, seed 0)"
        )
        + f"; online: {len(records) - data.burn_in:,} messages counted "
        f"after a burn-in of {data.burn_in}"
        + f" (until every class was learned once); tokenizing took {data.tokenize_seconds:.3f} s.\n"
    )
    print(
        "| system | protocol | messages | accuracy | macro-F1 | "
        + " | ".join(f"F1 {c}" for c in data.labels)
        + " | seconds |"
    )
    print("|---|---|---:|---:|---:|" + "---:|" * len(data.labels) + "---:|")
    print("\n".join(lines))
    for check in checks:
        print(f"\n{check}")


def corpus_name(corpus: Path) -> str:
    return (corpus if corpus.is_dir() else corpus.parent).name


if __name__ == "__main__":
    main()
