"""Robinson–Fisher's s, x and minimum clue strength on both spam corpora, both protocols.

    .venv/bin/python bench/fisher_sweep.py

One line per setting: specificity at 100 % spam recall (split protocol) and (1−AUC)% (online
protocol) on SMS and on the SpamAssassin corpus. The starting point for choosing defaults
across corpora (issue 6), rather than on one of them.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from filterd.corpus import read_corpus
from filterd.evaluate import Corpus, evaluate
from filterd.model import ModelSpec
from filterd.select import Selection
from filterd.tokenize import Tokenizer

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"


def main() -> None:
    corpora = {name: Corpus.tokenize(read_corpus(CORPORA / name / "messages.jsonl.gz"), Tokenizer())
               for name in ("sms-spam", "spamassassin")}  # fmt: skip
    print("| s | x | min strength | SMS spec@R=1 | SMS online (1−AUC)% | SpamAssassin spec@R=1 | SpamAssassin online (1−AUC)% |")
    print("|---|---|---|---|---|---|---|")
    for s, x, strength in itertools.product([0.0178, 0.05, 0.1, 0.2], [0.5, 0.52], [0.1, 0.2, 0.3]):
        spec = ModelSpec("robinson_fisher", {"s": s, "x": x}, Selection("local", 10**6, "alo", strength))
        cells = []
        for corpus in corpora.values():
            cells += [f"{evaluate(corpus, spec, 'split').spec_at_full_recall:.3f}",
                      f"{evaluate(corpus, spec, 'online').one_minus_auc_pct:.3f}"]  # fmt: skip
        print(f"| {s} | {x} | {strength} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
