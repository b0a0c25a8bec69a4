"""Do many classes fit? Zhang's many-class setting: 1,000 synthetic classes, sparse statistics.

    .venv/bin/python bench/many_classes.py [--classes 1000] [--train 50000] [--test 10000]

Prints the memory of the statistics (sparse pairs against what dense arrays would need),
learning and scoring rates (lazy models: weights per batch for the batch's tokens), and
accuracy / macro-F1 of MNB, WMNB (two γ) and PNBC. The synthetic stream is easier than
real web pages, so accuracies here say that the machinery works, not how NB fares on them.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from filterd.bayes.features import encode
from filterd.bayes.matrix import SparseMatrix
from filterd.bayes.model import Model, ModelSpec
from filterd.bayes.statistics import Statistics
from filterd.evaluation import ranking
from filterd.evaluation.synth import SynthConfig, generate


def rss_mb() -> float:
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--train", type=int, default=50_000)
    parser.add_argument("--test", type=int, default=10_000)
    args = parser.parse_args()
    priors = {f"c{i:04d}": 1.0 for i in range(args.classes)}
    config = SynthConfig(
        n_messages=args.train + args.test,
        class_priors=priors,
        vocab_size=400_000,
        class_vocab_fraction=0.5 / args.classes,
        signal=0.5,
        mean_length=40,
        seed=1,
    )
    records = generate(config)
    train, test = records[: args.train], records[args.train :]
    before = rss_mb()
    stats = Statistics(sparse=True)
    started = time.perf_counter()
    for i in range(0, len(train), 5000):
        part = train[i : i + 5000]
        stats.update(
            encode([r["text"].split() for r in part], stats.hasher), [r["label"] for r in part]
        )
    learn_rate = len(train) / (time.perf_counter() - started)
    if not isinstance(stats.storage, SparseMatrix):
        raise TypeError("Statistics(sparse=True) keeps a SparseMatrix")
    dense_mb = len(stats.labels) * len(stats.vocab) * 3 * 8 / 1e6
    print(f"{args.classes} classes, {len(train):,} training documents, {stats.V:,} distinct tokens")
    print(
        f"statistics: {stats.storage.n_pairs:,} (token, class) pairs, "
        f"{rss_mb() - before:,.0f} MB resident "
        f"(dense arrays would need {dense_mb:,.0f} MB); learning {learn_rate:,.0f} docs/s"
    )
    truth = [r["label"] for r in test]
    specs = [
        ModelSpec("mnb"),
        ModelSpec("wmnb", {"gamma": -1e6}),
        ModelSpec("wmnb", {"gamma": -1e8}),
        ModelSpec("pnbc"),
    ]
    for spec in specs:
        model = Model.build(stats, spec, lazy=True)
        started = time.perf_counter()
        predicted: list[str] = []
        for i in range(0, len(test), 500):
            predicted += model.score_tokens(
                [r["text"].split() for r in test[i : i + 500]]
            ).predict()
        rate = len(test) / (time.perf_counter() - started)
        accuracy = ranking.accuracy(np.array(truth), np.array(predicted))
        print(
            f"{spec!s:22s} accuracy {accuracy:.4f}  "
            f"macro-F1 {ranking.macro_f1(truth, predicted):.4f}  "
            f"{rate:,.0f} docs/s  (resident {rss_mb() - before:,.0f} MB above start)"
        )


if __name__ == "__main__":
    main()
