"""Does labelling a review queue teach the model more than labelling at random?

Label efficiency: with analysts labelling 1 %, 5 % or 10 % of the traffic, does labelling a
review queue (messages near τ plus a uniform random share) teach the model more than labelling a
uniform random sample of the same size? Prints, per budget and strategy, the test AUC and the
recall and specificity at the final τ.

    .venv/bin/python bench/label_efficiency.py [--corpus sms-spam ...] [--budget 0.01 0.05 0.1]
                                               [--random-share 0.2] [--seeds 5]
                                               [--target-recall 0.99]

Protocol (printed with the table):
- Each corpus of ../shared/corpora is walked in `order` and tokenized once
  (`filterd.tokenize.Tokenizer()`). The first 70 % is the traffic the analysts label from; the
  last 30 % is the test set, never labelled, on which the model and τ are measured at the end.
- The traffic comes in 100 blocks. In each block the analysts label `budget` × the block's size
  messages, chosen by the strategy; the model (`ROBINSON_FISHER_SPEC`, the fusion's first
  component) learns those labels only, then scores the next block. Strategies:
  - random: a uniform random sample of the block;
  - queue: a `random_share` of the picks uniformly at random, the rest the messages whose
    score s is closest to the τ in force (uncertainty sampling), as the review queue would
    offer them. Until the model can score (each class learned once), all picks are random.
- τ is chosen for the target recall with `calibration.recall_threshold` on the prequential
  scores of an unbiased labelled sample (each label's score when its message was picked,
  before the model learned it, as `filterd calibrate --source prequential` does): every label
  for random, the random share only for queue (the messages picked near τ are not a sample of
  the traffic); τ = 0 (the Bayes decision) until that sample holds 5 positives and 5
  negatives. "queue, τ on all labels" shows what calibrating on the biased sample would give.
- Reported: mean and standard deviation over seeds of the test AUC, and of the recall and
  specificity the test set gets at the final τ.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

from filterd.bayes.arrays import BoolArray, FloatArray
from filterd.bayes.features import DocBatch, encode, select_docs
from filterd.bayes.model import ROBINSON_FISHER_SPEC
from filterd.bayes.statistics import Statistics
from filterd.cli.corpus_files import read_corpus
from filterd.evaluation import ranking
from filterd.evaluation.calibration import CalibrationError, recall_threshold
from filterd.service.decide import NotReady, decision_scores, scoring_model
from filterd.tokenize import Tokenizer
from harness import CORPORA

TARGETS = {
    "sms-spam": "spam",
    "spamassassin": "spam",
    "enron-spam": "spam",
    "sms-smishing": "smishing",
}
TRAFFIC_SHARE = 0.7
BLOCKS = 100
MIN_CALIBRATION = 5  # positives and negatives before a τ is chosen


@dataclass(frozen=True)
class Result:
    auc: float
    recall: float
    specificity: float
    labels: int


def run(
    batch: DocBatch,
    y: BoolArray,
    target: str,
    budget: float,
    strategy: str,
    random_share: float,
    target_recall: float,
    seed: int,
) -> dict[str, Result]:
    """One labelling run over the traffic; the results of its τ choices on the test set."""
    rng = np.random.default_rng(seed)
    n_traffic = int(len(y) * TRAFFIC_SHARE)
    test = np.arange(n_traffic, len(y))
    stats = Statistics(seed=0)
    labelled = 0
    # prequential scores (the score a message had when it was picked, before it was learned)
    # and labels: of the uniform picks (a sample of the traffic), and of every pick
    unbiased: tuple[list[float], list[bool]] = ([], [])
    every: tuple[list[float], list[bool]] = ([], [])
    tau = 0.0
    names = {True: target, False: f"not {target}"}
    for block in np.array_split(np.arange(n_traffic), BLOCKS):
        picks = min(len(block), int(budget * (block[-1] + 1)) - labelled)  # the budget so far
        if picks <= 0:
            continue
        scores = _scores(stats, batch, block, target)
        if strategy == "random" or scores is None:
            uniform = picks
            chosen = rng.choice(len(block), picks, replace=False)
        else:
            uniform = min(picks, int(rng.binomial(picks, random_share)))
            drawn = rng.choice(len(block), uniform, replace=False)
            rest = np.setdiff1d(np.arange(len(block)), drawn)
            near = rest[np.argsort(np.abs(scores[rest] - tau), kind="stable")]
            chosen = np.concatenate([drawn, near[: picks - uniform]])
        labelled += picks
        if scores is not None:
            for k, i in enumerate(chosen):
                for sample in (unbiased, every) if k < uniform else (every,):
                    sample[0].append(float(scores[i]))
                    sample[1].append(bool(y[block[i]]))
            tau = _tau(unbiased, target_recall, tau)
        docs = block[chosen]
        stats.update(select_docs(batch, docs), [names[bool(y[i])] for i in docs])
    final = _scores(stats, batch, test, target)
    if final is None:
        nan = float("nan")
        return {"": Result(nan, nan, nan, labelled)}
    out = {"": _measure(final, y[test], tau, labelled)}
    if strategy == "queue":
        out[", τ on all labels"] = _measure(
            final, y[test], _tau(every, target_recall, 0.0), labelled
        )
    return out


def _scores(stats: Statistics, batch: DocBatch, docs: np.ndarray, target: str) -> FloatArray | None:
    try:
        model = scoring_model(stats, ROBINSON_FISHER_SPEC, target, min_docs=1)
    except NotReady:
        return None
    return decision_scores(model, select_docs(batch, docs))


def _tau(sample: tuple[list[float], list[bool]], target_recall: float, previous: float) -> float:
    """τ for the target recall on the prequential scores of `sample` (else `previous`)."""
    scores, truth = np.array(sample[0]), np.array(sample[1], dtype=bool)
    if min(int(truth.sum()), int((~truth).sum())) < MIN_CALIBRATION:
        return previous
    try:
        return recall_threshold(scores, truth, target_recall).tau
    except CalibrationError:
        return previous


def _measure(scores: FloatArray, truth: BoolArray, tau: float, labels: int) -> Result:
    flagged = scores >= tau
    recall = float((flagged & truth).sum() / max(1, truth.sum()))
    specificity = float((~flagged & ~truth).sum() / max(1, (~truth).sum()))
    return Result(ranking.auc(scores, truth), recall, specificity, labels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", nargs="+", default=list(TARGETS), choices=list(TARGETS))
    parser.add_argument("--budget", nargs="+", type=float, default=[0.01, 0.05, 0.10])
    parser.add_argument("--random-share", type=float, default=0.2)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--target-recall", type=float, default=0.99)
    args = parser.parse_args()
    print(__doc__.split("Protocol")[1].split("\n", 1)[1])
    print(
        f"random share {args.random_share}, target recall {args.target_recall}, "
        f"{args.seeds} seeds, model {ROBINSON_FISHER_SPEC}\n"
    )
    tokenizer = Tokenizer()
    for corpus in args.corpus:
        path = CORPORA / corpus / "messages.jsonl.gz"
        if not path.exists():
            print(f"{corpus}: not found at {path}, skipped")
            continue
        records = read_corpus(path)
        target = TARGETS[corpus]
        started = time.perf_counter()
        docs = [tokenizer(r.message()).tokens for r in records]
        batch = encode(docs, Statistics(seed=0).hasher, with_tokens=False)
        y = np.array([target in r.labels for r in records])
        n_test = len(y) - int(len(y) * TRAFFIC_SHARE)
        print(
            f"### {corpus}: {len(y):,} messages ({int(y.sum()):,} {target}); test: the last "
            f"{n_test:,} ({int(y[-n_test:].sum()):,} {target})\n"
        )
        print("| budget | labels | strategy | AUC | recall at τ | specificity at τ |")
        print("|---|---|---|---|---|---|")
        for budget in args.budget:
            rows: dict[str, list[Result]] = {}
            for strategy in ("random", "queue"):
                for seed in range(args.seeds):
                    results = run(
                        batch,
                        y,
                        target,
                        budget,
                        strategy,
                        args.random_share,
                        args.target_recall,
                        seed,
                    )
                    for suffix, result in results.items():
                        rows.setdefault(strategy + suffix, []).append(result)
            for name, runs in rows.items():
                print(
                    f"| {budget:.0%} | {runs[0].labels:,} | {name} | "
                    f"{_mean_sd([r.auc for r in runs], 4)} | "
                    f"{_mean_sd([r.recall for r in runs], 3)} | "
                    f"{_mean_sd([r.specificity for r in runs], 3)} |"
                )
        print(f"\n({time.perf_counter() - started:.0f} s)\n")


def _mean_sd(values: list[float], digits: int) -> str:
    a = np.array(values, dtype=float)
    return f"{np.nanmean(a):.{digits}f} ± {np.nanstd(a):.{digits}f}"


if __name__ == "__main__":
    main()
