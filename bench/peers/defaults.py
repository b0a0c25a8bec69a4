"""Which candidate default configuration of filterd does best on all four shared corpora?

    .venv/bin/python bench/peers/defaults.py [--corpus NAME ...] [--bigrams] CANDIDATE ...

A CANDIDATE is "VARIANT[,KEY=VALUE...][+SELECT]" (as run.py's --candidate, e.g.
"robinson_fisher,s=0.025,x=0.52+local:1000000:alo:0.18"). The code path of `filterd evaluate`
(`filterd.evaluation.protocols.evaluate`, one tokenization per corpus): the split protocol on
every corpus, the online protocol on the two spam corpora. Prints a markdown table, one line per
candidate and corpus.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the candidates, beside this script
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # bench's shared helpers
from candidates import candidate
from harness import CORPORA

ALL = ["sms-spam", "spamassassin", "20newsgroups-bydate", "reuters-21578-modapte"]
SPAM = {"sms-spam", "spamassassin"}


def main() -> None:
    from filterd.cli.corpus_files import read_corpus
    from filterd.evaluation.protocols import Corpus, evaluate

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("candidates", nargs="+")
    parser.add_argument("--corpus", action="append", choices=ALL)
    parser.add_argument("--bigrams", action="store_true", help="tokenize with word bigrams")
    parser.add_argument("--no-online", action="store_true")
    args = parser.parse_args()
    peers = [candidate(c + ("+bigrams" if args.bigrams else "")) for c in args.candidates]
    print(
        "| corpus | candidate | split AUC | split spec@R=1 | split h=.1% | acc | macro-F1 "
        "| online (1−AUC)% | online spec@R=1 | online lam% |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.corpus or ALL:
        started = time.perf_counter()
        corpus = Corpus.tokenize(
            read_corpus(CORPORA / name / "messages.jsonl.gz"), peers[0].tokenizer()
        )
        print(
            f"({name}: tokenized in {time.perf_counter() - started:.0f} s)",
            file=sys.stderr,
            flush=True,
        )
        for peer in peers:
            split = evaluate(corpus, peer.spec(), "split")
            recall = split.recall_at_fpr_0_1pct
            cells = [
                f"{split.auc:.4f}",
                f"{split.spec_at_full_recall:.3f}",
                "–" if recall is None else f"{100 * (1 - recall):.1f}",
                "–" if split.accuracy is None else f"{split.accuracy:.4f}",
                "–" if split.macro_f1 is None else f"{split.macro_f1:.4f}",
            ]
            if name in SPAM and not args.no_online:
                online = evaluate(corpus, peer.spec(), "online")
                cells += [
                    f"{online.one_minus_auc_pct:.3f}",
                    f"{online.spec_at_full_recall:.3f}",
                    f"{online.lam_pct:.2f}",
                ]
            else:
                cells += ["–", "–", "–"]
            print(f"| {name} | {peer.name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
