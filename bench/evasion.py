"""What do a spammer's rewrites of spam cost the default model's recall?

    .venv/bin/python bench/evasion.py [--corpora sms-spam spamassassin enron-spam]

Per corpus of ../shared/corpora: the default model (the default configuration's) learned from
the split protocol's training part (`filterd.evaluation.protocols.split_model`, the split of
`filterd evaluate`), the threshold that keeps 99.5 % of the test part's ham, and the recall of
the test part's spam at that threshold, as it is and after each attack of
`filterd.evaluation.attacks` (the ham unchanged): letters joined by invisible characters,
spaces or dots, look-alike letters, leetspeak, and ten common ham words appended (Lowd &
Meek's good words: the training ham's most frequent words that are at least five times rarer
in its spam), and for e-mail the 50 commonest such words hidden in HTML (by display:none, a
font of no size, or white on white) in the mail made HTML (against "none, as HTML", the mail
made HTML without them). An e-mail is attacked in the text of its text parts, which are then
written as UTF-8 quoted-printable: "none, re-encoded" is the recall of the spam written so
without an attack, the figure each attack of e-mail is to be read against.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np

from filterd.bayes.features import encode
from filterd.bayes.fusion import DecisionModel
from filterd.bayes.statistics import Statistics
from filterd.cli.corpus_files import read_corpus
from filterd.evaluation.attacks import (
    ATTACKS,
    HIDINGS,
    as_sent,
    attacked,
    with_good_words,
    with_hidden_words,
)
from filterd.evaluation.corpus import Record, train_test_split
from filterd.evaluation.protocols import SEED, Corpus, split_model
from filterd.service.config import DEFAULTS
from filterd.service.decide import tokenizer_of
from filterd.tokenize import Tokenizer

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
HAM_KEPT = 0.995
GOOD_WORDS = 10
HIDDEN_WORDS = 50


def good_words(train: Sequence[Record], tokenizer: Tokenizer, n: int = GOOD_WORDS) -> list[str]:
    """The `n` words in most training ham messages among those at least five times rarer (by
    share of messages) in its spam."""
    in_ham: Counter[str] = Counter()
    in_spam: Counter[str] = Counter()
    hams = spams = 0
    for record in train:
        words = {t for t in tokenizer(record.message()).tokens if t.isalpha() and len(t) > 2}
        if "spam" in record.labels:
            in_spam.update(words)
            spams += 1
        else:
            in_ham.update(words)
            hams += 1
    ranked = [
        w
        for w, count in in_ham.most_common()
        if in_spam[w] / max(spams, 1) * 5 <= count / max(hams, 1)
    ]
    return ranked[:n]


def scores_of(records: Sequence[Record], model: DecisionModel, tokenizer: Tokenizer) -> np.ndarray:
    docs = [tokenizer(r.message()).tokens for r in records]
    return model.score(encode(docs, Statistics(seed=SEED).hasher, with_tokens=False)).binary()


def hidden_in_html(text: str, fmt: str, words: Sequence[str], hiding: str) -> str:
    return with_hidden_words(text, words, hiding) if fmt == "email" else text


def measure(name: str) -> None:
    started = time.perf_counter()
    records = read_corpus(CORPORA / name)
    tokenizer = tokenizer_of(DEFAULTS)
    corpus = Corpus.tokenize(records, tokenizer)
    model, test = split_model(corpus, DEFAULTS.model.spec, "spam")
    train, _ = train_test_split(records)
    ham = [r for r in test if "spam" not in r.labels]
    spam = [r for r in test if "spam" in r.labels]
    ham_scores = model.score(corpus.batch_of(ham)).binary()
    tau = float(np.quantile(ham_scores, HAM_KEPT, method="higher"))
    words = good_words(train, tokenizer, HIDDEN_WORDS)

    def recall(rewrite: Callable[[str, str], str]) -> float:
        rewritten = [replace(r, text=rewrite(r.text, r.format)) for r in spam]
        return float(np.mean(scores_of(rewritten, model, tokenizer) > tau))

    print(f"\n## {name}: {len(ham):,} ham, {len(spam):,} spam in the test part")
    print(f"ham kept {float(np.mean(ham_scores <= tau)):.4f}; good words: {' '.join(words[:10])}")
    print("| attack | spam recall |\n|---|---:|")
    print(f"| none | {recall(lambda text, fmt: text):.3f} |")
    if any(r.format == "email" for r in spam):
        print(f"| none, re-encoded | {recall(lambda text, fmt: attacked(text, fmt, str)):.3f} |")
    for attack, rewrite in ATTACKS.items():
        print(f"| {attack} | {recall(partial(attacked, attack=rewrite)):.3f} |")
    good = recall(partial(with_good_words, words=words[:GOOD_WORDS]))
    print(f"| {GOOD_WORDS} good words appended | {good:.3f} |")
    if any(r.format == "email" for r in spam):
        as_html = recall(lambda text, fmt: as_sent(text, html=True) if fmt == "email" else text)
        print(f"| none, as HTML | {as_html:.3f} |")
        for hiding in HIDINGS:
            hidden = recall(partial(hidden_in_html, words=words, hiding=hiding))
            print(f"| {HIDDEN_WORDS} good words hidden by {hiding} | {hidden:.3f} |")
    print(f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", nargs="+", default=["sms-spam", "spamassassin", "enron-spam"])
    args = parser.parse_args()
    print(f"# evasion: the default model ({DEFAULTS.model.spec.variant}), ham kept {HAM_KEPT}")
    for name in args.corpora:
        measure(name)


if __name__ == "__main__":
    main()
