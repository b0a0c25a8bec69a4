"""Where the split protocol's time goes, step by step, for the default model.

    .venv/bin/python bench/split_time.py [--corpus ../shared/corpora/spamassassin] [--repeats 3]

The steps of `filterd evaluate --protocol split` (and of the peers harness's filterd rows):
tokenizing every message, counting its tokens by key (`filterd.features.encode`, a hundred
messages at a time as `Corpus.tokenize` does), learning the training part and scoring the
test part. Prints the CPU seconds of each step (median of `--repeats` passes; CPU time, which
other jobs on a shared machine disturb less than wall time) and the messages per second of
the whole, counting every message once as the harness does.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from filterd.corpus import read_corpus, train_test_split
from filterd.evaluate import ENCODE_CHUNK, SEED
from filterd.features import concat, encode, select_docs
from filterd.model import DEFAULT_SPEC, Model
from filterd.stats import Statistics
from filterd.tokenize import Tokenizer

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
STEPS = ("tokenize", "count", "learn", "score")


def one_pass(records, tokenizer: Tokenizer) -> dict[str, float]:
    seconds = dict.fromkeys(STEPS, 0.0)
    clock = time.process_time
    started = clock()
    docs = [tokenizer(record.message()).tokens for record in records]
    seconds["tokenize"] = clock() - started

    started = clock()
    hasher = Statistics(seed=SEED).hasher
    batch = concat(
        [encode(docs[lo : lo + ENCODE_CHUNK], hasher) for lo in range(0, len(docs), ENCODE_CHUNK)]
    )
    seconds["count"] = clock() - started

    position = {record.id: i for i, record in enumerate(records)}
    train, test = train_test_split(records)
    started = clock()
    stats = Statistics(seed=SEED)
    stats.update(select_docs(batch, [position[r.id] for r in train]), [r.label for r in train])
    seconds["learn"] = clock() - started

    started = clock()
    Model.build(stats, DEFAULT_SPEC, "spam").score(
        select_docs(batch, [position[r.id] for r in test])
    )
    seconds["score"] = clock() - started
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPORA / "spamassassin")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    records = list(read_corpus(args.corpus / "messages.jsonl.gz"))
    tokenizer = Tokenizer()
    one_pass(records[:200], tokenizer)  # imports and caches, outside the measured passes
    passes = [one_pass(records, tokenizer) for _ in range(args.repeats)]
    medians = {step: statistics.median(p[step] for p in passes) for step in STEPS}
    total = sum(medians.values())
    print(
        f"{args.corpus.name}: {len(records):,} messages, CPU seconds (median of {args.repeats} passes)"
    )
    for step in STEPS:
        print(f"  {step:<9} {medians[step]:6.2f} s  {medians[step] / total:4.0%}")
    print(f"  total     {total:6.2f} s  {len(records) / total:,.0f} msg/s")


if __name__ == "__main__":
    main()
