"""Do distinct messages share a score, and what do ties cost the ranking?

Prints, for each corpus's online replay, how many messages share their score with another and
what ties alone can cost (1−AUC)%.

    .venv/bin/python bench/ties.py [--corpus enron-spam ...] [--limit N]

Each spam corpus of ../shared/corpora (smishing counted as spam) is tokenized with
`filterd.tokenize.Tokenizer()` and replayed online in `order` with the product's default model
(`filterd.bayes.replay.online_scores`: each message scored by everything learned before it, then
learned). Reported: messages whose score equals another message's score (and how many of them
at the most common score), the scores at the ends of the scale, (1−AUC)% as measured (ties
count half) and the same with ties broken in the worst and best order for the spam — the spread
between those is what ties alone can cost.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from filterd.bayes.features import encode
from filterd.bayes.model import ROBINSON_FISHER_SPEC
from filterd.bayes.replay import online_scores
from filterd.bayes.statistics import Statistics
from filterd.cli.corpus_files import read_corpus
from filterd.evaluation import ranking
from filterd.tokenize import Tokenizer
from harness import CORPORA

ALL = ["sms-spam", "spamassassin", "enron-spam", "sms-smishing"]
POSITIVE = {"spam", "smishing"}


def broken(scores: np.ndarray, y: np.ndarray, spam_first: bool) -> float:
    """(1−AUC)% with ties broken for (spam_first) or against the spam."""
    order = np.lexsort((y if spam_first else ~y, scores))  # ascending score, then the tie rule
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(len(scores))
    jitter = ranks  # a strict order consistent with the scores
    return ranking.one_minus_auc_pct(jitter, y)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", choices=ALL)
    parser.add_argument("--limit", type=int, default=None, help="the first N messages only")
    args = parser.parse_args()
    print(
        "| corpus | messages | sharing a score | largest tie | at the extremes | (1−AUC)% "
        "| ties broken against / for the spam | seconds |\n|---|---|---|---|---|---|---|---|"
    )
    tokenizer = Tokenizer()
    for name in args.corpus or ALL:
        path = CORPORA / name / "messages.jsonl.gz"
        if not path.exists():
            continue
        records = read_corpus(path)[: args.limit]
        t0 = time.perf_counter()
        batch = encode([tokenizer(r.message()).tokens for r in records], Statistics().hasher)
        y = np.array([r.label in POSITIVE for r in records])
        scores = online_scores(batch, y, ROBINSON_FISHER_SPEC)
        seconds = time.perf_counter() - t0
        ready = np.isfinite(scores)
        s, t = scores[ready], y[ready]
        values, inverse, counts = np.unique(s, return_inverse=True, return_counts=True)
        shared = int((counts[inverse] > 1).sum())
        extremes = int(np.sum(s == s.max()) + np.sum(s == s.min()))
        print(
            f"| {name} | {len(s):,} | {shared:,} "
            f"| {counts.max():,} at {values[counts.argmax()]:.6g} "
            f"| {extremes:,} (min {s.min():.6g}, max {s.max():.6g}) "
            f"| {ranking.one_minus_auc_pct(s, t):.3f} "
            f"| {broken(s, t, False):.3f} / {broken(s, t, True):.3f} | {seconds:.0f} |"
        )


if __name__ == "__main__":
    main()
