"""Robinson–Fisher's s, x and minimum clue strength on both spam corpora, both protocols.

    .venv/bin/python bench/fisher_sweep.py [--s 0.02,0.025] [--x 0.52] [--strength 0.18,0.2]

One line per setting: specificity at 100 % spam recall (split protocol) and (1−AUC)% (online
protocol) on SMS and on the SpamAssassin corpus. The starting point for choosing defaults
across corpora (issue 6), rather than on one of them; candidates then go through
bench/peers/defaults.py, which adds the topic corpora. Specificities have five digits: on the
SpamAssassin test part one ham is 0.0007.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

from filterd.corpus import read_corpus
from filterd.evaluate import Corpus, evaluate
from filterd.model import ModelSpec
from filterd.select import Selection
from filterd.tokenize import Tokenizer

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"


def _floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--s", type=_floats, default=[0.0178, 0.02, 0.0225, 0.025, 0.0275, 0.03, 0.035, 0.04, 0.06, 0.1])
    parser.add_argument("--x", type=_floats, default=[0.52])
    parser.add_argument("--strength", type=_floats, default=[0.15, 0.17, 0.18, 0.19, 0.2, 0.22, 0.25])
    args = parser.parse_args()
    corpora = {name: Corpus.tokenize(read_corpus(CORPORA / name / "messages.jsonl.gz"), Tokenizer())
               for name in ("sms-spam", "spamassassin")}  # fmt: skip
    print("| s | x | min strength | SMS spec@R=1 | SMS online (1−AUC)% | SpamAssassin spec@R=1 | SpamAssassin online (1−AUC)% |")
    print("|---|---|---|---|---|---|---|")
    for s, x, strength in itertools.product(args.s, args.x, args.strength):
        spec = ModelSpec("robinson_fisher", {"s": s, "x": x}, Selection("local", 10**6, "alo", strength))
        cells = []
        for corpus in corpora.values():
            cells += [f"{evaluate(corpus, spec, 'split').spec_at_full_recall:.5f}",
                      f"{evaluate(corpus, spec, 'online').one_minus_auc_pct:.3f}"]  # fmt: skip
        print(f"| {s} | {x} | {strength} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
