"""How fast is the core, against scikit-learn on the same messages, and how much memory?

    .venv/bin/python bench/speed.py   # SMS and SpamAssassin from ../shared/corpora if present

Prints messages/s (median of several runs, one core, after warm-up) for:
  - scoring SMS-size messages with the default model (robinson_fisher over its local clues),
    tokenization included: in poll-sized batches and one at a time
  - scoring raw e-mails of about 5 KB, MIME parsing included
  - learning SMS-size messages (tokenize + learn, batches)
  - scikit-learn HashingVectorizer + MultinomialNB scoring one message at a time, and the ratio
and the resident memory of statistics for 1,000,000 distinct tokens × 2 classes.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np

from filterd.bayes.features import encode
from filterd.bayes.model import ROBINSON_FISHER_SPEC, Model
from filterd.bayes.statistics import Statistics
from filterd.cli.corpus_files import read_corpus
from filterd.evaluation.synth import SynthConfig, generate
from filterd.tokenize import Tokenizer
from harness import CORPORA

REPEATS = 5
BATCH = 1000
SPEC = ROBINSON_FISHER_SPEC  # the fusion's first component, one estimator's core


def median_rate(n: int, run: Callable[[], object]) -> float:
    run()  # warm-up
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return n / statistics.median(times)


def sms_messages() -> tuple[list[dict[str, str]], list[str]]:
    path = CORPORA / "sms-spam" / "messages.jsonl.gz"
    if path.exists():
        records = read_corpus(path)
        return [r.message() for r in records], [r.label for r in records]
    print("(shared corpora absent: synthetic SMS-size messages)")
    synthetic = generate(SynthConfig(n_messages=5000))
    return [{"id": r["id"], "text": r["text"]} for r in synthetic], [r["label"] for r in synthetic]


def emails_of_about_5kb() -> tuple[list[dict[str, str]], list[str]] | None:
    path = CORPORA / "spamassassin" / "messages.jsonl.gz"
    if not path.exists():
        return None
    records = [r for r in read_corpus(path) if 4000 <= len(r.text.encode()) <= 6000]
    return [r.message() for r in records], [r.label for r in records]


def filterd_rates(
    messages: list[dict[str, str]], labels: list[str], tokenizer: Tokenizer
) -> dict[str, float]:
    stats = Statistics()
    docs = [tokenizer(m).tokens for m in messages]
    stats.update(encode(docs, stats.hasher), labels)
    model = Model.build(stats, SPEC, target="spam")

    def score_batches() -> None:
        for i in range(0, len(messages), BATCH):
            part = messages[i : i + BATCH]
            model.score_tokens([tokenizer(m).tokens for m in part]).binary()

    def score_one_at_a_time() -> None:
        for m in messages:
            model.score_tokens([tokenizer(m).tokens]).binary()

    def learn_batches() -> None:
        fresh = Statistics()
        for i in range(0, len(messages), BATCH):
            part = messages[i : i + BATCH]
            fresh.update(
                encode([tokenizer(m).tokens for m in part], fresh.hasher), labels[i : i + BATCH]
            )

    n = len(messages)
    return {
        "score (batches of 1000)": median_rate(n, score_batches),
        "score (one at a time)": median_rate(n, score_one_at_a_time),
        "learn (batches of 1000)": median_rate(n, learn_batches),
    }


def sklearn_rate(messages: list[dict[str, str]], labels: list[str]) -> float | None:
    try:
        from sklearn.feature_extraction.text import HashingVectorizer
        from sklearn.naive_bayes import MultinomialNB
    except ImportError:
        print("(scikit-learn not installed: pip install -e '.[bench]' for the comparison)")
        return None
    texts = [m.get("text", "") for m in messages]
    vectorizer = HashingVectorizer(n_features=2**20, alternate_sign=False)
    classifier = MultinomialNB().fit(vectorizer.transform(texts), labels)

    def score_one_at_a_time() -> None:
        for text in texts:
            classifier.predict_proba(vectorizer.transform([text]))

    return median_rate(len(texts), score_one_at_a_time)


def memory_of_a_million_tokens() -> float:
    """Resident MB added by statistics for 1,000,000 distinct tokens × 2 classes, in a fresh
    process.

    Documents are fed as token keys (what the tokenizer and hasher hand over), so that the
    figure is the statistics' own: vocabulary, counts and change tracking.
    """
    code = (
        "import gc, numpy as np\n"
        "from filterd.bayes.statistics import Statistics\n"
        "from filterd.bayes.features import DocBatch\n"
        "def rss(): return int(open('/proc/self/statm').read().split()[1]) * 4096 / 1e6\n"
        "stats = Statistics(['ham', 'spam']); before = rss()\n"
        "for start in range(0, 1_000_000, 100_000):\n"
        "    keys = np.sort((np.arange(start, start + 100_000) * 7919 + 12345).reshape(1000, 100), "
        "axis=1).ravel()\n"
        "    batch = DocBatch(np.arange(0, 100_001, 100), keys, np.ones(100_000, dtype=np.int64))\n"
        "    stats.update(batch, ['ham'] * 500 + ['spam'] * 500)\n"
        "gc.collect()\n"
        "print(stats.V, rss() - before)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert int(out[0]) == 1_000_000, out
    return float(out[1])


def main() -> None:
    tokenizer = Tokenizer()
    print(f"filterd core speed — {SPEC}, median of {REPEATS} runs, one core\n")
    messages, labels = sms_messages()
    rates = filterd_rates(messages, labels, tokenizer)
    for name, rate in rates.items():
        print(f"SMS     {name:28s} {rate:>10,.0f} msg/s")
    sk = sklearn_rate(messages, labels)
    if sk:
        print(f"SMS     {'scikit-learn (one at a time)':28s} {sk:>10,.0f} msg/s")
        print(
            "        filterd/scikit-learn, one at a time: "
            f"{rates['score (one at a time)'] / sk:.1f}×;"
            f" batched: {rates['score (batches of 1000)'] / sk:.1f}×"
        )
    emails = emails_of_about_5kb()
    if emails is None:
        print("(shared corpora absent: e-mail figures skipped)")
    else:
        e_rates = filterd_rates(*emails, tokenizer)
        size = np.mean([len(m["text"].encode()) for m in emails[0]])
        print(
            f"e-mail  {len(emails[0])} raw messages of 4–6 KB (mean {size / 1000:.1f} KB), "
            "MIME parsing included"
        )
        for name, rate in e_rates.items():
            print(f"e-mail  {name:28s} {rate:>10,.0f} msg/s")
    print(
        "\nstatistics for 1,000,000 tokens × 2 classes: "
        f"{memory_of_a_million_tokens():.0f} MB resident"
    )


if __name__ == "__main__":
    main()
