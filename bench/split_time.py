"""Where does the split protocol's time go, step by step, with and without the C loops?

    .venv/bin/python bench/split_time.py [--corpus ../shared/corpora/spamassassin] [--repeats 3]
                                         [--pure-python]

The steps of `filterd evaluate --protocol split` (and of the peers harness's filterd rows),
through their own code: tokenizing every message, counting its tokens by key (the rest of
`Corpus.tokenize`, which tokenizes and counts together: its time less a tokenizing-only pass),
learning the training part and scoring the test part. Prints the CPU seconds of each step
(median of `--repeats` passes; CPU time, which other jobs on a shared machine disturb less
than wall time) and the messages per second of the whole, counting every message once as the
harness does. `--pure-python` runs without filterd's optional C loops (filterd._speedups),
as an installation without a C compiler would.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

if "--pure-python" in sys.argv:  # before filterd is imported: its modules then find no C loops
    sys.modules["filterd._speedups"] = None  # type: ignore[assignment]

from filterd.bayes import features
from filterd.bayes.model import ROBINSON_FISHER_SPEC, Model
from filterd.bayes.statistics import Statistics
from filterd.cli.corpus_files import read_corpus
from filterd.evaluation.corpus import Record, train_test_split
from filterd.evaluation.protocols import SEED, Corpus
from filterd.tokenize import Tokenizer
from harness import CORPORA

STEPS = ("tokenize", "count", "learn", "score")


def one_pass(records: list[Record], tokenizer: Tokenizer) -> dict[str, float]:
    clock = time.process_time
    started = clock()
    for record in records:
        tokenizer(record.message())
    tokenize = clock() - started

    started = clock()
    corpus = Corpus.tokenize(records, tokenizer)
    count = clock() - started - tokenize

    train, test = train_test_split(corpus.records)
    started = clock()
    stats = Statistics(seed=SEED)
    stats.update(corpus.batch_of(train), [r.label for r in train])
    learn = clock() - started

    started = clock()
    Model.build(stats, ROBINSON_FISHER_SPEC, "spam").score(corpus.batch_of(test))
    score = clock() - started
    return dict(zip(STEPS, (tokenize, count, learn, score), strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPORA / "spamassassin")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pure-python", action="store_true", help="without filterd._speedups")
    args = parser.parse_args()
    records = list(read_corpus(args.corpus / "messages.jsonl.gz"))
    tokenizer = Tokenizer()
    one_pass(records[:200], tokenizer)  # imports and caches, outside the measured passes
    passes = [one_pass(records, tokenizer) for _ in range(args.repeats)]
    medians = {step: statistics.median(p[step] for p in passes) for step in STEPS}
    total = sum(medians.values())
    build = "pure Python" if features._speedups is None else "with filterd._speedups"
    print(
        f"{args.corpus.name}: {len(records):,} messages, {build}, "
        f"CPU seconds (median of {args.repeats} passes)"
    )
    for step in STEPS:
        print(f"  {step:<9} {medians[step]:6.2f} s  {medians[step] / total:4.0%}")
    print(f"  total     {total:6.2f} s  {len(records) / total:,.0f} msg/s")


if __name__ == "__main__":
    main()
