"""How do the variants and feature selections compare on the four corpora?

    .venv/bin/python bench/corpora.py [--corpus sms-spam ...] [--variant mnb ...]
                                      [--select none ...]

Prints every variant × selection on the shared corpora as markdown tables (the README's results
section), by the same code path as `filterd evaluate`: one tokenization per corpus, then each
variant under the split protocol (all corpora) and the online protocol (the two spam corpora).
h=.1% is TREC's spam misclassification at 0.1 % ham misclassification (100 − 100·R@FPR.1%).
"""

from __future__ import annotations

import argparse
import time

from filterd.bayes.estimators import ESTIMATORS
from filterd.bayes.model import ModelSpec
from filterd.bayes.selection import Selection
from filterd.cli.corpus_files import read_corpus
from filterd.evaluation.protocols import Corpus, Evaluation, evaluate
from filterd.tokenize import Tokenizer
from harness import CORPORA

ALL = ["sms-spam", "spamassassin", "20newsgroups-bydate", "reuters-21578-modapte"]
ONLINE = {"sms-spam", "spamassassin"}
DEFAULT_SELECTIONS = ["none", "local:6:alo", "local:10:or"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", choices=ALL)
    parser.add_argument("--variant", action="append", choices=list(ESTIMATORS))
    parser.add_argument("--select", action="append")
    parser.add_argument("--no-online", action="store_true")
    args = parser.parse_args()
    variants = args.variant or list(ESTIMATORS)
    selections = [Selection.parse(s) for s in args.select or DEFAULT_SELECTIONS]
    tokenizer = Tokenizer()
    print(f"Produced by `python bench/corpora.py` on {time.strftime('%Y-%m-%d')}.\n")
    for name in args.corpus or ALL:
        path = CORPORA / name / "messages.jsonl.gz"
        if not path.exists():
            print(f"({name}: not found at {path}, skipped)\n")
            continue
        corpus = Corpus.tokenize(read_corpus(path), tokenizer)
        protocols = ["split"] + ([] if args.no_online or name not in ONLINE else ["online"])
        for protocol in protocols:
            rows = []
            for variant in variants:
                for selection in selections:
                    if variant == "robinson_fisher" and protocol == "split" and name not in ONLINE:
                        # a two-class rule; the multi-class corpora evaluate one-vs-rest below
                        # anyway
                        continue
                    try:
                        rows.append(
                            evaluate(corpus, ModelSpec(variant, selection=selection), protocol)
                        )
                    except ValueError as error:
                        print(f"({name} {variant} {selection}: {error})")
            print(table(name, protocol, rows))


def table(name: str, protocol: str, rows: list[Evaluation]) -> str:
    multiclass = rows and rows[0].task != "binary"
    averaged = ", macro-averaged one-vs-rest" if multiclass else ""
    head = (
        f"**{name}**, {protocol} protocol "
        f"({rows[0].n_train} train / {rows[0].n_test} test{averaged})\n\n"
        if rows
        else ""
    )
    cols = (
        "| variant | select | AUC | (1−AUC)% | spec@100%R | h=.1% | lam% | acc | macro-F1 | msg/s |"
    )
    lines = [head + cols, "|" + "---|" * 10]
    for r in rows:
        h = None if r.recall_at_fpr_0_1pct is None else 100 * (1 - r.recall_at_fpr_0_1pct)
        cells = [
            r.variant,
            r.select,
            _f(r.auc, 4),
            _f(r.one_minus_auc_pct, 3),
            _f(r.spec_at_full_recall, 3),
            _f(h, 2),
            _f(r.lam_pct, 2),
            _f(r.accuracy, 4),
            _f(r.macro_f1, 4),
            f"{r.messages_per_second:,.0f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _f(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


if __name__ == "__main__":
    main()
