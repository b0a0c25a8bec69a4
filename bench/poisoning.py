"""What do poisoned labels do to the default model's false positives?

    .venv/bin/python bench/poisoning.py [--corpora sms-spam spamassassin enron-spam] [--variant V]

Nelson et al.'s dictionary attack: messages labelled spam that carry many of the words of ham,
learned with the rest. Per corpus of ../shared/corpora: the split protocol's training part
(`filterd.evaluation.protocols`), the default model learned from it and the threshold that keeps
99.5 % of the test part's ham; then the same training part with attack messages added (a share
of it, each made of the training ham's most frequent words, spread through it in order),
learned again, and the share of the test part's ham above the old threshold (the ham false
positive rate; 0.005 without poison) and of its spam (recall) — for each share × words.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from filterd.bayes.model import ModelSpec
from filterd.cli.corpus_files import read_corpus
from filterd.evaluation.corpus import Record, train_test_split
from filterd.evaluation.protocols import Corpus, model_of
from filterd.service.config import DEFAULTS
from filterd.service.decide import tokenizer_of
from filterd.tokenize import Tokenizer

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
HAM_KEPT = 0.995
ATTACKS = ((0.01, 1000), (0.01, 9000), (0.05, 9000))  # share of training × words a message


def ham_words(train: Sequence[Record], tokenizer: Tokenizer) -> list[str]:
    """The words of the training ham, commonest first (in most messages; ties by the word)."""
    seen: Counter[str] = Counter()
    for record in train:
        if "spam" not in record.labels:
            seen.update({t for t in tokenizer(record.message()).tokens if t.isalpha()})
    return [w for w, _ in sorted(seen.items(), key=lambda item: (-item[1], item[0]))]


def poison(train: Sequence[Record], share: float, words: Sequence[str]) -> list[Record]:
    """round(share × len(train)) spam records of `words`, placed evenly through the training
    part's order (between its records), as plain text or as an e-mail like the corpus's."""
    n = max(1, round(share * len(train)))
    orders = sorted(r.order for r in train)
    at = np.linspace(0, len(orders) - 1, n).astype(int)
    email = train[0].format == "email"
    text = " ".join(words)
    body = f"From: a@example.com\nSubject: hello\n\n{text}\n" if email else text
    # ids of their own for each attack: a corpus finds a record by its id
    return [
        Record(
            f"poison-{share}-{len(words)}-{i}", ("spam",), body, train[0].format, orders[j], None
        )
        for i, j in enumerate(at)
    ]


def measure(name: str, spec: ModelSpec) -> None:
    started = time.perf_counter()
    records = read_corpus(CORPORA / name)
    tokenizer = tokenizer_of(DEFAULTS)
    train, test = train_test_split(records)
    words = ham_words(train, tokenizer)
    attacks = {(share, n): poison(train, share, words[:n]) for share, n in ATTACKS}
    added = [r for made in attacks.values() for r in made]
    # the poison's orders repeat the training part's: tokenized once, the corpus holds them all
    corpus = Corpus.tokenize([*records, *added], tokenizer)
    ham = [r for r in test if "spam" not in r.labels]
    spam = [r for r in test if "spam" in r.labels]

    def scores(model_train: Sequence[Record], part: Sequence[Record]) -> np.ndarray:
        model = model_of(corpus, spec, "spam", model_train)
        return model.score(corpus.batch_of(part)).binary()

    clean_ham = scores(train, ham)
    tau = float(np.quantile(clean_ham, HAM_KEPT, method="higher"))
    clean_spam = scores(train, spam)
    print(f"\n## {name}: {len(train):,} training messages ({len(set(words)):,} ham words)")
    print("| poison | ham FPR at the old threshold | spam recall |\n|---|---:|---:|")
    print(f"| none | {np.mean(clean_ham > tau):.3f} | {np.mean(clean_spam > tau):.3f} |")
    for (share, n), made in attacks.items():
        poisoned = [*train, *made]
        fpr = float(np.mean(scores(poisoned, ham) > tau))
        recall = float(np.mean(scores(poisoned, spam) > tau))
        used = min(n, len(words))
        print(f"| {share:.0%} × {used:,} words ({len(made)} messages) | {fpr:.3f} | {recall:.3f} |")
    print(f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", nargs="+", default=["sms-spam", "spamassassin", "enron-spam"])
    parser.add_argument("--variant", help="a model other than the default's (e.g. robinson_fisher)")
    args = parser.parse_args()
    spec = DEFAULTS.model.spec if args.variant is None else ModelSpec.parse(args.variant)
    print(f"# poisoning: the model {spec.variant}, ham kept {HAM_KEPT}")
    for name in args.corpora:
        measure(name, spec)


if __name__ == "__main__":
    main()
