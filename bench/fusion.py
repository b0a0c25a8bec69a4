"""Does the fusion variant rank better than the estimators it combines?

    .venv/bin/python bench/fusion.py [--corpus enron-spam ...] [--limit N]

Each spam corpus of ../shared/corpora (smishing counted as spam), tokenized once by the
tokenizer of the fusion (`tokenizer_of`: words, character 4-grams and word pairs). Online:
every component of `filterd.bayes.fusion.COMPONENTS`, and the logistic component, replays the
stream (`replay_components`: each message scored by everything learned before it), and the fusion
combines them as `filterd evaluate --variant fusion --protocol online` does
(`fusion.replay_fused`: the weights of two passes over the newest 5,000 rows of each class
before each message, recomputed every message while the window fills and every 100 after). For
reference, "sgd" carries one online pass over the whole stream (Lynam & Cormack's form, which a
relabel could not correct exactly). Reported: (1−AUC)% over every message (the TREC figure of
`filterd evaluate`) and over the messages after the first 500.

Split: `filterd.evaluation.protocols.evaluate` with the default spec and with the fusion (its
weights those of a daemon that learned the training part as a stream): AUC, (1−AUC)% and
specificity at 100 % recall on the test part.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from filterd.bayes import fusion
from filterd.bayes.model import FUSION, ROBINSON_FISHER_SPEC, ModelSpec
from filterd.cli.corpus_files import read_corpus
from filterd.evaluation import ranking
from filterd.evaluation.corpus import relabel
from filterd.evaluation.protocols import Corpus, evaluate
from filterd.service.config import DEFAULTS
from filterd.service.decide import tokenizer_of
from harness import CORPORA

ALL = ["sms-spam", "spamassassin", "enron-spam", "sms-smishing"]
NAMES = (*(str(spec) for spec in fusion.COMPONENTS), "the logistic component")
BURN_IN = 500


def online_rows(corpus: Corpus) -> dict[str, np.ndarray]:
    order = np.argsort([r.order for r in corpus.records], kind="stable")
    y = np.array([corpus.records[i].label == "spam" for i in order])
    batch = corpus.batch_of([corpus.records[i] for i in order])
    scores = fusion.replay_components(batch, y)
    rows = {name: scores[:, i] for i, name in enumerate(NAMES)}
    rows["fusion (the variant)"] = fusion.replay_fused(scores, y)
    rows["fusion, sgd over the whole stream"] = fusion.online_fusion(fusion.features(scores), y)
    rows["truth"] = y
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", choices=ALL)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    t_start = time.perf_counter()
    tokenizer = tokenizer_of(DEFAULTS, specs=[ModelSpec(FUSION)])
    for name in args.corpus or ALL:
        path = CORPORA / name / "messages.jsonl.gz"
        if not path.exists():
            continue
        # smishing counted as spam, as `filterd evaluate --relabel smishing=spam`
        records = relabel(read_corpus(path)[: args.limit], {"smishing": "spam"})
        corpus = Corpus.tokenize(records, tokenizer)
        rows = online_rows(corpus)
        y = rows.pop("truth")
        later = np.arange(len(y)) >= BURN_IN
        print(f"\n**{name}** ({len(y):,} messages, {int(y.sum()):,} spam), online (1−AUC)%\n")
        print(f"| scores | every message | after the first {BURN_IN} |\n|---|---|---|")
        for k, v in rows.items():
            print(
                f"| {k} | {ranking.one_minus_auc_pct(v, y):.3f} | "
                f"{ranking.one_minus_auc_pct(v[later], y[later]):.3f} |"
            )
        print("\nsplit protocol\n\n| model | AUC | (1−AUC)% | spec@R=1 |\n|---|---|---|---|")
        # the default reads the default tokenizer's tokens, as `filterd evaluate` gives it
        words = Corpus.tokenize(records, tokenizer_of(DEFAULTS, specs=[ROBINSON_FISHER_SPEC]))
        for label, spec, tokenized in (
            ("default", ROBINSON_FISHER_SPEC, words),
            ("fusion", ModelSpec(FUSION), corpus),
        ):
            e = evaluate(tokenized, spec, "split", "spam")
            print(
                f"| {label} | {e.auc:.4f} | {e.one_minus_auc_pct:.3f} "
                f"| {e.spec_at_full_recall:.3f} |"
            )
    print(
        f"\nProduced by `python bench/fusion.py` on {time.strftime('%Y-%m-%d')} "
        f"({time.perf_counter() - t_start:.0f} s)."
    )


if __name__ == "__main__":
    main()
