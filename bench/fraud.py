"""Fraud on card payments: filterd against the strong learners given the same information.

    .venv/bin/python bench/fraud.py [--corpus ../shared/corpora/card-transactions]
        [--label-delay 7d] [--report-from 2018-05-01] [--limit N] [--skip-tree] [--fields raw]

One stream of payments (`ts`, `attributes` {customer, terminal, amount}, labelled fraud or
legit), every model judged on the payments from `--report-from` on, each label known only
`--label-delay` after its payment's `ts` (`filterd.evaluation.label_delay`):

- filterd: `filterd evaluate --protocol online` with the shipped example configuration
  (config/transactions.toml: entity memory over customer and terminal), the default model and
  filterd's Robinson–Fisher, and the default without entity memory.
- The peers read the Fraud Detection Handbook's 13 features of each payment, computed from the
  same lines (`handbook_features`): its amount; the customer's payments and mean amount within
  1, 7 and 30 days before it; the terminal's payments and fraud rate within 1, 7 and 30 days
  ending `--label-delay` before it (the labels known by then).
  River's LogisticRegression (standardized inputs) and Hoeffding tree, prequential: each
  payment scored, then learned once its label arrives. scikit-learn's
  HistGradientBoostingClassifier trained once on the payments whose labels are known at
  `--report-from` and frozen (the Handbook's protocol).

With `--fields raw`, every model reads the lines' attributes alone, for any corpus of
transactions (categorical fields, balances): filterd with its defaults (no configuration file),
and River's MultinomialNB and LogisticRegression, prequential, on the attributes one-hot (a
text or an id as `key=value`, a number as its log2 bin) and, for the linear model, each
number's log size too (`raw_fields`).

Prints AUC, average precision, recall at 1 % and 0.1 % false positives, and payments a second
(of the whole stream, features included). Needs the `bench` extra (scikit-learn, River).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol

import numpy as np

from filterd.bayes.arrays import BoolArray, FloatArray
from filterd.cli.corpus_files import read_corpus
from filterd.evaluation import ranking
from filterd.evaluation.corpus import Record
from filterd.evaluation.label_delay import LabelDelay
from filterd.evaluation.protocols import Corpus, EntityReplay, online_replay
from filterd.service.config import Config, load, parse_duration
from filterd.service.decide import tokenizer_of
from harness import CORPORA

EXAMPLE = Path(__file__).resolve().parents[1] / "config" / "transactions.toml"
WINDOWS_DAYS = (1, 7, 30)
DAY = 86400.0


def handbook_features(records: list[Record], delay: float) -> FloatArray:
    """(n, 13) per payment, from the payments before it: amount; customer count and mean amount
    within 1, 7, 30 days; terminal count and fraud rate within 1, 7, 30 days ending `delay`
    seconds before it (whose labels are known)."""
    ts = np.array([r.ts.timestamp() if r.ts else 0.0 for r in records])
    amount = np.array([float(r.fields["attributes"]["amount"]) for r in records])
    fraud = np.array([r.labels[0] == "fraud" for r in records], dtype=np.float64)
    columns = [amount]
    for key, end in (("customer", 0.0), ("terminal", delay)):
        ids = np.unique([str(r.fields["attributes"][key]) for r in records], return_inverse=True)[1]
        order = np.lexsort((ts, ids))
        place = ids[order] * 1e10 + ts[order]  # (entity, time) sorted as one number
        summed = {
            name: np.concatenate([[0.0], np.cumsum(values[order])])
            for name, values in (("one", np.ones(len(ts))), ("amount", amount), ("fraud", fraud))
        }
        for days in WINDOWS_DAYS:
            hi = np.searchsorted(place, ids * 1e10 + ts - end, side="left")
            lo = np.searchsorted(place, ids * 1e10 + ts - end - days * DAY, side="left")
            count = summed["one"][hi] - summed["one"][lo]
            of = "amount" if key == "customer" else "fraud"
            total = summed[of][hi] - summed[of][lo]
            columns += [count, np.divide(total, count, out=np.zeros(len(ts)), where=count > 0)]
    return np.column_stack(columns)


class OnlineClassifier(Protocol):
    """What the prequential loop uses of a River classifier."""

    def learn_one(self, x: dict[str, float], y: bool) -> None: ...
    def predict_proba_one(self, x: dict[str, float]) -> dict[bool, float]: ...


def raw_fields(record: Record) -> dict[str, float]:
    """A message's attributes as the raw-field peers read them, one-hot: a text (or a whole
    number of at most 12 digits: an id) as `key=value`, a number as `key~k` with k its log2 bin,
    and the number itself (log1p of its size) as `key` for the linear model; nested keys dotted.

    >>> fields = {"attributes": {"customer": "c5", "amount": 57.16}}
    >>> raw_fields(Record("p1", ("fraud",), "", "text", 0, None, fields=fields))
    {'customer=c5': 1.0, 'amount~5': 1.0, 'amount': 4.0631...}
    """
    out: dict[str, float] = {}

    def walk(prefix: str, node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(f"{prefix}{key}" if not prefix else f"{prefix}.{key}", value)
        elif isinstance(node, (bool, str)) or (isinstance(node, int) and abs(node) < 10**12):
            out[f"{prefix}={node}"] = 1.0
        elif isinstance(node, (int, float)) and math.isfinite(node):
            size = abs(float(node))
            out[f"{prefix}~{math.floor(math.log2(size)) if size > 0 else 'zero'}"] = 1.0
            out[prefix] = math.copysign(math.log1p(size), node)

    walk("", record.fields.get("attributes") or {})
    return out


def river_prequential(
    make: Callable[[], OnlineClassifier],
    x: FloatArray | list[dict[str, float]],
    y: BoolArray,
    visible: np.ndarray,
) -> FloatArray:
    """Each row scored, then the rows whose labels arrive before the next learned."""
    model = make()
    if isinstance(x, list):
        rows = x
    else:
        names = [f"f{i}" for i in range(x.shape[1])]
        rows = [dict(zip(names, row)) for row in x.tolist()]
    scores = np.zeros(len(y))
    learned = 0
    for j in range(len(y)):
        while learned < visible[j]:
            model.learn_one(rows[learned], bool(y[learned]))
            learned += 1
        scores[j] = model.predict_proba_one(rows[j]).get(True, 0.0)
    return scores


def peer_row(
    name: str,
    make: Callable[[], OnlineClassifier],
    x: FloatArray | list[dict[str, float]],
    y: BoolArray,
    visible: np.ndarray,
    reported: BoolArray,
    feature_seconds: float,
) -> None:
    """Print a River learner's row: `river_prequential`, measured on the `reported` rows, its
    rate counting the time its features took (`feature_seconds`)."""
    started = time.perf_counter()
    scores = river_prequential(make, x, y, visible)
    seconds = time.perf_counter() - started + feature_seconds
    print(
        f"| {name} | {measures(scores[reported], y[reported])} | {len(y) / seconds:,.0f} |",
        flush=True,
    )


def measures(scores: FloatArray, y: BoolArray) -> str:
    at_1, at_0_1 = ranking.recall_at_fpr(scores, y, 0.01), ranking.recall_at_fpr(scores, y, 0.001)
    return (
        f"{ranking.auc(scores, y):.4f} | {ranking.average_precision(scores, y):.3f} | "
        f"{at_1:.3f} | {at_0_1:.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=str(CORPORA / "card-transactions"))
    parser.add_argument("--label-delay", default="7d")
    parser.add_argument("--report-from", default="2018-05-01T00:00:00+00:00")
    parser.add_argument("--limit", type=int)
    parser.add_argument(
        "--skip-tree", action="store_true", help="Leave River's Hoeffding tree out."
    )
    parser.add_argument(
        "--fields",
        choices=("handbook", "raw"),
        default="handbook",
        help="handbook: the peers read the Handbook's 13 features, filterd the example "
        "configuration; raw: every model reads the lines' attributes alone (filterd with its "
        "defaults, River's naive Bayes and logistic regression one-hot), for any corpus.",
    )
    args = parser.parse_args()
    records = read_corpus(args.corpus)[: args.limit]
    delay = LabelDelay(after=parse_duration(args.label_delay))
    start = datetime.fromisoformat(args.report_from)
    y = np.array([r.labels[0] == "fraud" for r in records])
    reported = np.array([r.ts is not None and r.ts >= start for r in records])
    print(
        f"{len(records):,} payments, {int(y.sum()):,} frauds; labels {args.label_delay} late; "
        f"measured on {int(reported.sum()):,} from {start.date()}\n"
    )
    print("| model | AUC | AP | R@1% | R@0.1% | payments/s |")
    print("|---|---:|---:|---:|---:|---:|")
    if args.fields == "raw":
        raw_table(records, y, reported, delay)
        return

    example = load(EXAMPLE, environ={})
    for name, config, remember in (
        ("filterd, transactions.toml (the fusion, entity memory)", example, True),
        ("filterd, transactions.toml with Robinson–Fisher", _with_variant(example), True),
        ("filterd, the fusion without entity memory", example, False),
    ):
        started = time.perf_counter()
        entities = EntityReplay(config.entities.spec("fraud"), delay) if remember else None
        corpus = Corpus.tokenize(
            records, tokenizer_of(config, specs=[config.model.spec]), entities=entities
        )
        scores, truth = online_replay(corpus, config.model.spec, "fraud", delay=delay)
        seconds = time.perf_counter() - started
        print(
            f"| {name} | {measures(scores[reported], truth[reported])} | "
            f"{len(records) / seconds:,.0f} |",
            flush=True,
        )
        del corpus

    started = time.perf_counter()
    x = handbook_features(records, delay.after.total_seconds() if delay.after else 0.0)
    feature_seconds = time.perf_counter() - started
    visible = delay.visible([r.ts for r in records])  # labels arrived before each payment

    from river import compose, linear_model, preprocessing, tree

    peers: list[tuple[str, Callable[[], OnlineClassifier]]] = [
        (
            "River LogisticRegression (standardized), prequential",
            lambda: compose.Pipeline(
                preprocessing.StandardScaler(), linear_model.LogisticRegression()
            ),
        ),
    ]
    if not args.skip_tree:
        peers.append(("River HoeffdingTreeClassifier, prequential", tree.HoeffdingTreeClassifier))
    for name, make in peers:
        peer_row(name, make, x, y, visible, reported, feature_seconds)

    from sklearn.ensemble import HistGradientBoostingClassifier

    started = time.perf_counter()
    known = np.array(
        [r.ts is not None and r.ts + (delay.after or timedelta(0)) <= start for r in records]
    )
    booster = HistGradientBoostingClassifier(random_state=0).fit(x[known], y[known])
    scores = booster.predict_proba(x[reported])[:, 1]
    seconds = time.perf_counter() - started + feature_seconds
    print(
        f"| scikit-learn HistGradientBoosting, trained on the labels known at "
        f"{start.date()}, frozen | {measures(scores, y[reported])} | "
        f"{len(records) / seconds:,.0f} |"
    )


def raw_table(records: list[Record], y: BoolArray, reported: BoolArray, delay: LabelDelay) -> None:
    """filterd's defaults against River's naive Bayes and logistic regression, each reading the
    lines' attributes alone (no entity memory, no derived features)."""
    defaults = load(None, environ={})
    started = time.perf_counter()
    corpus = Corpus.tokenize(records, tokenizer_of(defaults, specs=[defaults.model.spec]))
    scores, truth = online_replay(corpus, defaults.model.spec, "fraud", delay=delay)
    seconds = time.perf_counter() - started
    print(
        f"| filterd, the default configuration | {measures(scores[reported], truth[reported])} "
        f"| {len(records) / seconds:,.0f} |",
        flush=True,
    )
    del corpus

    from river import linear_model, naive_bayes

    started = time.perf_counter()
    rows = [raw_fields(r) for r in records]
    feature_seconds = time.perf_counter() - started
    visible = delay.visible([r.ts for r in records])
    one_hot = [{k: v for k, v in row.items() if "=" in k or "~" in k} for row in rows]
    peers: list[tuple[str, Callable[[], OnlineClassifier], list[dict[str, float]]]] = [
        ("River MultinomialNB, one-hot, prequential", naive_bayes.MultinomialNB, one_hot),
        (
            "River LogisticRegression, one-hot and log sizes, prequential",
            linear_model.LogisticRegression,
            rows,
        ),
    ]
    for name, make, x in peers:
        peer_row(name, make, x, y, visible, reported, feature_seconds)


def _with_variant(config: Config) -> Config:
    import msgspec

    from filterd.bayes.model import ROBINSON_FISHER_SPEC

    model = msgspec.structs.replace(
        config.model,
        variant=ROBINSON_FISHER_SPEC.variant,
        params=dict(ROBINSON_FISHER_SPEC.params),
        select=str(ROBINSON_FISHER_SPEC.selection),
    )
    return msgspec.structs.replace(config, model=model)


if __name__ == "__main__":
    main()
