"""Which messages does filterd misorder where a peer does not? The split protocol's test part.

    .venv/bin/python bench/misordered.py [--corpus ../shared/corpora/enron-spam] [--limit 20000]
        [--peer crm114-osb--1-process-msg]

A (ham, spam) pair is misordered when the ham scores above the spam (ties count half): their
sum is (1 − AUC) · hams · spams. The pairs of filterd's default (`filterd.evaluation.protocols.
split_scores`, the scores `filterd evaluate` measures) and of a peer (its per-message scores,
which `bench/peers/run.py` writes to bench/peers/out/CORPUS/split/PEER.tsv) are printed,
counted by the kind of message on each side: how many body words the default tokenizer gives
it (tokens without a prefix: not `subject:…`, `from:…`, `key=value`), and for the ten hams in
most pairs, their scores and strongest clues.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from filterd.bayes.arrays import FloatArray
from filterd.bayes.model import ROBINSON_FISHER_SPEC, Model
from filterd.bayes.statistics import Statistics
from filterd.cli.corpus_files import read_corpus
from filterd.evaluation.corpus import relabel, train_test_split
from filterd.evaluation.protocols import SEED, Corpus, split_scores
from filterd.tokenize import Tokenizer
from harness import CORPORA

HERE = Path(__file__).resolve().parent
KINDS = ((0, 4, "≤ 3 body words"), (4, 30, "4–29"), (30, 300, "30–299"), (300, 10**9, "≥ 300"))


def body_words(tokens: list[str]) -> int:
    return sum(1 for t in tokens if ":" not in t and "=" not in t and " " not in t)


def misordered(ham: FloatArray, spam: FloatArray) -> FloatArray:
    """(hams, spams) 1 where the ham scores above the spam, ½ for a tie."""
    above: FloatArray = (ham[:, None] > spam[None, :]) + 0.5 * (ham[:, None] == spam[None, :])
    return above


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPORA / "enron-spam")
    parser.add_argument("--limit", type=int, default=20000)
    parser.add_argument("--peer", default="crm114-osb--1-process-msg")
    args = parser.parse_args()
    records = relabel(
        read_corpus(args.corpus / "messages.jsonl.gz")[: args.limit], {"smishing": "spam"}
    )
    tokenizer = Tokenizer()
    corpus = Corpus.tokenize(records, tokenizer)
    _, test = train_test_split(corpus.records)
    truth = np.array([r.label == "spam" for r in test])
    words = np.array([body_words(tokenizer(r.message()).tokens) for r in test])
    peer_file = HERE / "peers/out" / args.corpus.name / "split" / f"{args.peer}.tsv"
    with peer_file.open() as f:
        by_id = {row["id"]: float(row["score"]) for row in csv.DictReader(f, delimiter="\t")}
    rows = {
        "filterd default": split_scores(corpus, ROBINSON_FISHER_SPEC, "spam"),
        args.peer: np.array([by_id[r.id] for r in test]),
    }
    hams, spams = np.flatnonzero(~truth), np.flatnonzero(truth)
    kind_of = [(lo <= words) & (words < hi) for lo, hi, _ in KINDS]
    print(
        f"{args.corpus.name} (first {len(records):,}), split test part: {len(hams):,} ham, "
        f"{len(spams):,} spam; hams by body words: "
        + ", ".join(
            f"{label} {int((k & ~truth).sum())}" for k, (_, _, label) in zip(kind_of, KINDS)
        )
    )
    print(
        "\n| scores | (1−AUC)% | misordered pairs | "
        + " | ".join(f"ham {k[2]}" for k in KINDS)
        + " | "
        + " | ".join(f"spam {k[2]}" for k in KINDS)
        + " |"
    )
    print("|---" * (3 + 2 * len(KINDS)) + "|")
    pairs = {}
    for name, s in rows.items():
        m = misordered(s[hams], s[spams])
        pairs[name] = m
        by_ham = [m[k[hams]].sum() for k in kind_of]
        by_spam = [m[:, k[spams]].sum() for k in kind_of]
        print(
            f"| {name} | {100 * m.mean():.3f} | {m.sum():,.0f} | "
            + " | ".join(f"{v:,.0f}" for v in by_ham + by_spam)
            + " |"
        )
    stats = Statistics(seed=SEED)
    train, _ = train_test_split(corpus.records)
    stats.update(corpus.batch_of(train), [r.label for r in train])
    model = Model.build(stats, ROBINSON_FISHER_SPEC, "spam")
    worst = hams[np.argsort(-pairs["filterd default"].sum(axis=1), kind="stable")[:10]]
    print(
        "\nThe ten hams in most of filterd's misordered pairs "
        "(score, peer's score, body words, strongest clues):"
    )
    for i in worst:
        tokens = tokenizer(test[i].message()).tokens
        scores = model.score_tokens([tokens])
        clues = ", ".join(f"{t} {c:+.1f}" for t, c in scores.explain(0)[:5])
        print(
            f"- {test[i].id}: {rows['filterd default'][i]:+.1f} / {rows[args.peer][i]:+.2f}, "
            f"{words[i]} words: {clues}"
        )


if __name__ == "__main__":
    main()
