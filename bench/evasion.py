"""What do a spammer's rewrites of spam cost the default model's recall?

    .venv/bin/python bench/evasion.py [--corpora sms-spam spamassassin enron-spam]
    .venv/bin/python bench/evasion.py --online [N …] [--corpora …]

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

With --online, the online defence against the good words, as a deployment meets them: the
attacked spam of the test part in two halves, the first labelled spam and learned after the
training part, N messages of it at a time; the recall of the second half at the threshold
keeping 99.5 % of the test ham, after each N (the model and the threshold learned again each
time, as the daemon's learner and calibration would).
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
from filterd.evaluation.protocols import SEED, Corpus, model_of, split_model
from filterd.service.config import DEFAULTS
from filterd.service.decide import tokenizer_of
from filterd.tokenize import Tokenizer

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
HAM_KEPT = 0.995
GOOD_WORDS = 10
HIDDEN_WORDS = 50


def good_words(train: Sequence[Record], tokenizer: Tokenizer, n: int = GOOD_WORDS) -> list[str]:
    """The `n` words in most training ham messages (ties by the word) among those at least five
    times rarer (by share of messages) in its spam."""
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
        for w, count in sorted(in_ham.items(), key=lambda item: (-item[1], item[0]))
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


def online_defence(name: str, steps: Sequence[int]) -> None:
    """The good-word attack while the model learns it: the test part's spam with ten good words
    appended, its first half labelled spam and learned in order after the training part, the
    recall of the second half at the threshold keeping 99.5 % of the test ham, after each
    number of labelled attack messages."""
    started = time.perf_counter()
    records = read_corpus(CORPORA / name)
    tokenizer = tokenizer_of(DEFAULTS)
    train, test = train_test_split(records)
    words = good_words(train, tokenizer)
    ham = [r for r in test if "spam" not in r.labels]
    spam = [r for r in test if "spam" in r.labels]
    last = max(r.order for r in records)
    attacked_spam = [
        replace(
            r,
            id=f"attacked-{r.id}",
            text=with_good_words(r.text, r.format, words),
            order=last + 1 + i,
        )
        for i, r in enumerate(spam)
    ]
    half = len(attacked_spam) // 2
    learned, measured = attacked_spam[:half], attacked_spam[half:]
    corpus = Corpus.tokenize([*records, *attacked_spam], tokenizer)
    spec = DEFAULTS.model.spec

    def recall(model_train: Sequence[Record], part: Sequence[Record]) -> float:
        model = model_of(corpus, spec, "spam", model_train)
        ham_scores = model.score(corpus.batch_of(ham)).binary()
        tau = float(np.quantile(ham_scores, HAM_KEPT, method="higher"))
        return float(np.mean(model.score(corpus.batch_of(part)).binary() > tau))

    clean = recall(train, spam[half:])
    print(
        f"\n## {name}, online: {len(learned):,} attacked spam to learn, {len(measured):,} measured"
    )
    print(f"clean recall of the measured spam, unattacked: {clean:.3f}")
    print("| attack messages labelled and learned | recall of the attacked spam |\n|---:|---:|")
    for k in steps:
        if k <= len(learned):
            print(f"| {k} | {recall([*train, *learned[:k]], measured):.3f} |")
    print(f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", nargs="+", default=["sms-spam", "spamassassin", "enron-spam"])
    parser.add_argument(
        "--online",
        nargs="*",
        type=int,
        metavar="N",
        help="the online defence instead: recall after N labelled attack messages (default "
        "0 5 10 20 50 100)",
    )
    args = parser.parse_args()
    if args.online is not None:
        for name in args.corpora:
            online_defence(name, args.online or [0, 5, 10, 20, 50, 100])
        return
    print(f"# evasion: the default model ({DEFAULTS.model.spec.variant}), ham kept {HAM_KEPT}")
    for name in args.corpora:
        measure(name)


if __name__ == "__main__":
    main()
