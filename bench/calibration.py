"""Does the promised recall hold on the traffic that follows a calibration?

The analyst loop on the real spam corpora: does a recalibrated threshold reach the recall target
on the traffic that follows it, calibrated on the holdout window, on the prequential scores, or
on the prequential scores at an adaptive level? Prints one row per corpus, variant, target,
mode and source: the recall and specificity achieved after each recalibration.

    .venv/bin/python bench/calibration.py [--corpus sms-spam ...] [--variant default ...]
                                          [--every 500] [--sync 1]
                                          [--source holdout|prequential|adaptive ...]
                                          [--target 0.99 ...] [--exact-only] [--step 0.1 ...]
                                          [--window N] [--prequential-window 5000]
                                          [--holdout-fraction 0.1] [--forced] [--verbose]

Protocol (printed with the table):
- Each spam corpus of ../shared/corpora (SMS, SpamAssassin, Enron-Spam, smishing with
  smishing counted as spam) is walked in `order`, tokenized once up front with
  `filterd.tokenize.Tokenizer()` (`tokenizer(record.message()).tokens`). Variants: "default",
  the product's `ROBINSON_FISHER_SPEC`, and twcnb+local:6:alo.
- The model is rebuilt from the statistics learned so far after every M messages (`--sync`,
  default 1: every message is scored by a model that has learned all earlier feedback, the TREC
  immediate-feedback replay; the daemon syncs periodically, so this is its best case), with
  `decide.scoring_model(stats, spec, "spam", min_docs=20)`, and the next M messages are scored
  as one batch with `decide.decision_scores(model, features.encode(tokens, stats.hasher))`, the
  daemon's own path. `--sync K` rebuilds once per recalibration block (a model up to K messages
  stale; cheaper, and it costs new traffic some recall, see docs/benchmarks.md). Each message is
  decided spam iff s ≥ τ, with the τ in force (τ = 0 until a first threshold is written); that
  decision is what is counted. Until each class has 20 learned documents the model is not
  ready and decisions are "unknown" (not counted).
- Then their labels arrive as feedback, in order: a message whose id falls in the holdout share
  (`store.ledger.in_holdout(id, 0.1)`, a hash of the id) joins the holdout window, any other
  is learned (`Statistics.learn`, one message at a time).
- Every K messages (`--every`, 500) the recalibration job runs: the model is rebuilt (the same
  model then scores the next messages), and τ is chosen by
  `calibration.recall_threshold(scores, labels, R, conservative=…)` (conservative: one-sided 95 %
  Clopper–Pearson) on the window of one of two sources (`--source`, default both, one row each):
  - holdout: the holdout window re-scored with the current model. The window is the whole
    holdout so far (the job's default with neither --window nor --last), or its last N items
    with `--window N`.
  - prequential: the score each feedback record got when it arrived, before it was learned, by
    the model of that moment (here: the score its message was decided with, since feedback
    follows the decision with no model change in between), over all feedback, learned and
    holdout alike, limited to the newest W records (`--prequential-window`, 5000, the daemon's
    `drift.window`: what its `prequential` table keeps, filterd/store/drift.py). Messages decided
    while the model was not ready have no such score (the daemon records none either).
  - adaptive (the product's default): the prequential window, with τ chosen for the recall
    1 − α_t instead of R. α_t starts at α = 1 − R and, at each recalibration once a τ exists,
    moves by the misses of the τ in force among the n spam decided since the previous one:
    α_t ← clip(α_t + g (α − misses/n), α/2, 2α), g = min(γ n, ½), γ = step · α (adaptive
    conformal inference, Gibbs & Candès, NeurIPS 2021, one batched step;
    `calibration.adapt_level`, the job's code; `--step`, default the product's 0.1). The first
    τ is chosen with the conservative bound, as the job chooses a first adaptive version.
  Learning skips the holdout items whatever the source, so the models and the decision scores
  are the same for both; only τ differs.
- Guardrails as in `filterd calibrate` (`evaluation.guardrails`), for either source: a new τ is
  written only if the window has P ≥ `default_min_positives(R)` positives (100 for R = 0.99
  and for R = 1; conservative mode also needs the P at which the bound can reach R at all:
  299 for R = 0.99, none for R = 1), N ≥ 100 negatives, τ is reachable (`CalibrationError`
  otherwise), and AUC has not fallen by
  more than 0.02 below the last written version's AUC (of the same source). Otherwise the
  previous τ stays in force. With `--forced`, rows marked "forced" are added that override the
  first and last of these, as `--force` does (an unreachable target cannot be forced): the loop
  as it would run with the guardrails off.
- Decisions do not change what is learned (feedback carries the true label), so the model and
  the scores are computed once per (corpus, variant) and every (source, R, mode, guardrails)
  replays its own τ sequence over them.

Reported per row, over the messages decided after the first τ was written: spam caught / spam
seen (achieved recall, with the spam missed); how many consecutive windows of 500 of those spam
had a recall of at least R − 0.01 (does τ follow a drifting stream, not only on average); ham
passed / ham seen (achieved specificity); the
mean of k/(P+1) over those spam, which is the recall to expect if new spam were exchangeable with
the window's P positives and τ the k-th largest of their scores (see the note in
filterd/evaluation/guardrails.py); the window's own recall at each written τ (≥ R by construction),
mean over written versions; and how many recalibrations wrote a τ or kept the previous one, with
the reasons.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from filterd.bayes.arrays import BoolArray
from filterd.bayes.features import encode
from filterd.bayes.model import ROBINSON_FISHER_SPEC, ModelSpec
from filterd.bayes.selection import Selection
from filterd.bayes.statistics import Statistics
from filterd.cli.corpus_files import read_corpus
from filterd.evaluation import ranking
from filterd.evaluation.calibration import (
    CalibrationError,
    adapt_level,
    positives_needed,
    recall_threshold,
)
from filterd.evaluation.guardrails import MAX_AUC_DROP, MIN_NEGATIVES, default_min_positives
from filterd.jobs.calibrate import takes_the_bound
from filterd.service.config import CALIBRATION_SOURCES, DEFAULTS
from filterd.service.decide import NotReady, decision_scores, scoring_model
from filterd.store.ledger import in_holdout
from filterd.tokenize import Tokenizer
from harness import CORPORA

ALL = ["sms-spam", "spamassassin", "enron-spam", "sms-smishing"]
TARGET = "spam"
POSITIVE = {"spam", "smishing"}  # labels counted as the target class (smishing is spam here)
MIN_DOCS = 20
CONFIDENCE = 0.95
TARGETS = (0.99, 1.0)
SOURCES = CALIBRATION_SOURCES
STEP = DEFAULTS.calibration.step  # the product's
WINDOW_SPAM = 500  # spam per window of the drift-following figure

# the product's default, and one variant whose score scale moves as the model grows
VARIANTS = {
    "default": ROBINSON_FISHER_SPEC,
    "twcnb+local:6:alo": ModelSpec("twcnb", selection=Selection.parse("local:6:alo")),
}


@dataclass
class Block:
    """One block of K messages: its spam flags and the scores it was decided with."""

    start: int
    y: np.ndarray  # bool, True = spam
    scores: np.ndarray | None  # None: model not ready, decisions "unknown"


@dataclass
class Window:
    """A calibration window at the recalibration after a block: the holdout re-scored with the
    current model, or the newest prequential scores."""

    scores: np.ndarray
    y: np.ndarray


@dataclass
class Trace:
    """What one (corpus, variant) stream produced; independent of R, mode and guardrails."""

    blocks: list[Block]  # blocks of M messages (one model each)
    # per source, the recalibration after blocks[i]; None: model not ready (holdout) or no
    # prequential score yet
    windows: dict[str, dict[int, Window | None]]
    seconds: float


def simulate(
    docs: list[list[str]],
    y: BoolArray,
    ids: list[str],
    spec: ModelSpec,
    every: int,
    sync: int,
    window: int | None,
    holdout_fraction: float,
    sources: tuple[str, ...] = SOURCES,
    prequential_window: int = 5000,
) -> Trace:
    """Blocks of `sync` messages, each scored by one model; a recalibration every `every`."""
    t0 = time.perf_counter()
    stats = Statistics()
    hold: list[int] = []
    blocks: list[Block] = []
    windows: dict[str, dict[int, Window | None]] = {source: {} for source in sources}
    pre_scores: list[np.ndarray] = []  # prequential scores of the feedback so far, in order
    pre_y: list[np.ndarray] = []
    model = None
    n = len(docs)
    for start in range(0, n, sync):
        end = min(start + sync, n)
        scores = None
        if model is not None:
            scores = decision_scores(model, encode(docs[start:end], stats.hasher))
        blocks.append(Block(start, y[start:end], scores))
        if scores is not None:  # the feedback's scores before it is learned
            pre_scores.append(scores)
            pre_y.append(y[start:end])
        for i in range(start, end):  # feedback, in order
            if in_holdout(ids[i], holdout_fraction):
                hold.append(i)
            else:
                stats.learn(docs[i], TARGET if y[i] else "ham")
        if end == n:
            break
        try:
            model = scoring_model(stats, spec, TARGET, MIN_DOCS)
        except NotReady:
            model = None
        if end % every:
            continue
        b = len(blocks) - 1
        for source in {"prequential", "adaptive"} & set(windows):
            if pre_scores:
                windows[source][b] = Window(
                    np.concatenate(pre_scores)[-prequential_window:],
                    np.concatenate(pre_y)[-prequential_window:],
                )
            else:
                windows[source][b] = None
        if "holdout" in windows:
            items = hold[-window:] if window else hold
            if model is None or not items:
                windows["holdout"][b] = None
                continue
            wscores = decision_scores(model, encode([docs[i] for i in items], stats.hasher))
            windows["holdout"][b] = Window(wscores, y[items])
    return Trace(blocks, windows, time.perf_counter() - t0)


@dataclass
class Outcome:
    spam: int = 0
    caught: int = 0
    ham: int = 0
    passed: int = 0
    expected: list[float] = field(default_factory=list)  # k/(P+1) for each spam decided
    first_tau_at: int | None = None  # messages seen when the first τ came into force
    written: int = 0
    kept: Counter[str] = field(default_factory=Counter)
    holdout_recall: list[float] = field(default_factory=list)
    pos_at_written: list[int] = field(default_factory=list)
    before: list[int] = field(
        default_factory=lambda: [0, 0, 0, 0]
    )  # spam, caught, ham, passed at τ = 0
    unknown: int = 0
    hits: list[bool] = field(default_factory=list)  # each spam decided after the first τ: caught
    # windows of WINDOW_SPAM consecutive spam after the first τ: (recall ≥ R − 0.01, all)
    windows: tuple[int, int] = (0, 0)

    @property
    def recall(self) -> float | None:
        return self.caught / self.spam if self.spam else None

    @property
    def specificity(self) -> float | None:
        return self.passed / self.ham if self.ham else None


def replay(
    trace: Trace,
    source: str,
    target_recall: float,
    conservative: bool,
    forced: bool,
    log: Callable[[str], None] | None = None,
    step: float = STEP,
) -> Outcome:
    """The τ sequence of one (source, R, mode, guardrails) over `trace`. Source "adaptive": the
    prequential window, with τ chosen for the recall 1 − α_t instead of R, where α_t is moved at
    each recalibration by the misses of the τ in force since the previous one, as the product's
    job does (`calibration.adapt_level`, γ = step · α, α = 1 − R)."""
    out = Outcome()
    windows = trace.windows[source]
    # k_over: k/(P+1) of the τ in force (none before the first; nothing counts until then)
    tau, k_over, last_auc = 0.0, 0.0, None
    alpha = level = 1.0 - target_recall
    since = [0, 0]  # spam decided and missed since the last recalibration (after the first τ)
    exact_pos = default_min_positives(target_recall)
    bound_pos = max(exact_pos, positives_needed(target_recall, CONFIDENCE) or 0)
    for b, block in enumerate(trace.blocks):
        if block.scores is None:
            out.unknown += len(block.y)
        else:
            flagged = block.scores >= tau
            spam, caught = int(block.y.sum()), int((flagged & block.y).sum())
            ham, passed = int((~block.y).sum()), int((~flagged & ~block.y).sum())
            if out.first_tau_at is None:
                for i, v in enumerate((spam, caught, ham, passed)):
                    out.before[i] += v
            else:
                spam_hits = flagged[block.y]
                out.hits += spam_hits.tolist()
                since[0] += spam
                since[1] += spam - caught
                out.spam += spam
                out.caught += caught
                out.ham += ham
                out.passed += passed
                out.expected += [k_over] * spam
        if b not in windows:
            continue
        if source == "adaptive" and out.first_tau_at is not None:
            level = adapt_level(level, alpha, since[0], since[1], step * alpha)
        since = [0, 0]
        w = windows[b]
        if w is None:
            out.kept["not_ready"] += 1
            continue
        p, n = int(w.y.sum()), int((~w.y).sum())
        cautious = takes_the_bound(source, out.first_tau_at is None, target_recall, conservative)
        min_pos = bound_pos if cautious else exact_pos
        if not forced and (p < min_pos or n < MIN_NEGATIVES):
            out.kept["too_few_positives" if p < min_pos else "too_few_negatives"] += 1
            continue
        aim = 1.0 - level if source == "adaptive" else target_recall
        try:
            th = recall_threshold(w.scores, w.y, aim, conservative=cautious, confidence=CONFIDENCE)
        except CalibrationError:
            out.kept["unreachable"] += 1
            continue
        auc = ranking.auc(w.scores, w.y)
        if not forced and last_auc is not None and auc < last_auc - MAX_AUC_DROP:
            out.kept["auc_drop"] += 1
            continue
        k = int(np.count_nonzero(w.scores[w.y] >= th.tau))  # hits at τ (ties included)
        tau, k_over, last_auc = th.tau, k / (p + 1), auc
        out.written += 1
        out.holdout_recall.append(th.recall)
        out.pos_at_written.append(p)
        if out.first_tau_at is None:
            out.first_tau_at = block.start + len(block.y)
        if log:
            log(
                f"    after msg {block.start + len(block.y):5d}: P={p:3d} N={n:4d} AUC={auc:.4f} "
                f"tau={tau:+.4g} window recall={th.recall:.4f} spec={th.specificity:.4f}"
            )
    hits = np.array(out.hits, dtype=bool)
    full = len(hits) // WINDOW_SPAM
    met = sum(
        hits[i * WINDOW_SPAM : (i + 1) * WINDOW_SPAM].mean() >= target_recall - 0.01
        for i in range(full)
    )
    out.windows = (int(met), full)
    return out


def _f(value: float | None, digits: int = 4) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def row(
    corpus: str, variant: str, r: float, conservative: bool, forced: bool, source: str, o: Outcome
) -> str:
    mode = ("conservative" if conservative else "exact") + (", forced" if forced else "")
    missed = o.spam - o.caught
    recall = "–" if o.recall is None else f"{o.recall:.4f} ({missed} missed)"
    expected = _f(float(np.mean(o.expected))) if o.expected else "–"
    hold = _f(float(np.mean(o.holdout_recall))) if o.holdout_recall else "–"
    p = f"{min(o.pos_at_written)}–{max(o.pos_at_written)}" if o.pos_at_written else "–"
    kept = sum(o.kept.values())
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(o.kept.items()))
    recal = f"{o.written} written / {kept} kept" + (f" ({reasons})" if reasons else "")
    first = "never" if o.first_tau_at is None else f"{o.first_tau_at:,}"
    met, full = o.windows
    windows = f"{met} / {full}" if full else "–"
    cells = [
        corpus,
        variant,
        f"{r:g}",
        mode,
        source,
        first,
        f"{o.spam:,} / {o.ham:,}",
        recall,
        windows,
        expected,
        _f(o.specificity),
        hold,
        p,
        recal,
    ]
    return "| " + " | ".join(cells) + " |"


HEADER = (
    "| corpus | variant | R | mode | source | first τ after msg | n spam / n ham after first τ "
    f"| achieved recall | windows of {WINDOW_SPAM} spam at ≥ R − 0.01 | expected k/(P+1) "
    "| achieved specificity | window recall at τ (mean) | P at written τ | recalibrations |\n|"
    + "---|"
    * 14
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", choices=ALL)
    parser.add_argument("--variant", action="append", choices=list(VARIANTS))
    parser.add_argument("--every", type=int, default=500, help="K: recalibrate every K messages")
    parser.add_argument(
        "--source",
        action="append",
        choices=SOURCES,
        help="calibration source: the re-scored holdout, the prequential scores, "
        "or the prequential scores at the adaptive level (default: all, one row each)",
    )
    parser.add_argument("--target", action="append", type=float, help="R (default: 0.99 and 1)")
    parser.add_argument("--exact-only", action="store_true", help="leave out the conservative rows")
    parser.add_argument(
        "--step",
        type=float,
        action="append",
        help=f"the adaptive level's step γ/(1 − R) (default {STEP:g}, the product's; "
        "several: one row each)",
    )
    parser.add_argument(
        "--window",
        type=int,
        default=None,
        help="holdout window: its last N items (default: the whole holdout so far)",
    )
    parser.add_argument(
        "--prequential-window",
        type=int,
        default=5000,
        help="W: the newest W prequential scores (the daemon's drift.window)",
    )
    parser.add_argument(
        "--sync",
        type=int,
        default=None,
        help="M: rebuild the model every M messages (a divisor of K; default 1)",
    )
    parser.add_argument("--holdout-fraction", type=float, default=0.1)
    parser.add_argument("--forced", action="store_true", help="add the guardrails-off rows")
    parser.add_argument("--verbose", action="store_true", help="every written τ, on stderr")
    args = parser.parse_args()
    sync = args.sync or 1
    if args.every % sync:
        parser.error("--sync must divide --every")
    command = "python bench/calibration.py" + "".join(f" {a}" for a in sys.argv[1:])
    log = (lambda s: print(s, file=sys.stderr, flush=True)) if args.verbose else None
    sources = tuple(args.source or SOURCES)
    window = f"the last {args.window} holdout items" if args.window else "the whole holdout so far"
    windows = {
        "holdout": f"{window}, re-scored with the current model",
        "prequential": (
            f"the newest W = {args.prequential_window} prequential scores (each "
            "feedback record's score on arrival, before it was learned, by the model "
            "of that moment; learned and holdout records alike)"
        ),
        "adaptive": (
            f"the same prequential window, τ for the recall 1 − α_t, α_t adapted from the misses "
            "since the first τ (`adapt_level`, step "
            f"{', '.join(f'{x:g}' for x in args.step or [STEP])})"
        ),
    }
    t_start = time.perf_counter()
    lines, notes = [], []
    tokenizer = Tokenizer()
    for corpus in args.corpus or ALL:
        path = CORPORA / corpus / "messages.jsonl.gz"
        if not path.exists():
            notes.append(f"{corpus}: not found at {path}, skipped")
            continue
        records = read_corpus(path)
        t0 = time.perf_counter()
        docs = [tokenizer(r.message()).tokens for r in records]
        t_tok = time.perf_counter() - t0
        y = np.array([r.label in POSITIVE for r in records])
        ids = [r.id for r in records]
        n_hold = sum(in_holdout(i, args.holdout_fraction) for i in ids)
        n_hold_spam = sum(
            in_holdout(i, args.holdout_fraction) for i, s in zip(ids, y, strict=True) if s
        )
        notes.append(
            f"{corpus}: {len(records):,} messages ({int(y.sum()):,} spam), holdout "
            f"{n_hold:,} ({n_hold_spam} spam) at the end; tokenized in {t_tok:.1f} s"
        )
        for name in args.variant or list(VARIANTS):
            trace = simulate(
                docs,
                y,
                ids,
                VARIANTS[name],
                args.every,
                sync,
                args.window,
                args.holdout_fraction,
                sources,
                args.prequential_window,
            )
            notes.append(f"{corpus} {name}: stream simulated in {trace.seconds:.1f} s")
            for forced in (False, True) if args.forced else (False,):
                for r in args.target or TARGETS:
                    for conservative in (False,) if args.exact_only else (False, True):
                        steps = args.step or [STEP]
                        for source, step in [
                            (s, x) for s in sources for x in (steps if s == "adaptive" else [0.0])
                        ]:
                            if log:
                                log(
                                    f"{corpus} {name} R={r:g} "
                                    f"{'conservative' if conservative else 'exact'}"
                                    f"{' forced' if forced else ''} {source}"
                                )
                            o = replay(trace, source, r, conservative, forced, log, step)
                            named = source + (
                                f" (step {step:g})"
                                if source == "adaptive" and len(steps) > 1
                                else ""
                            )
                            lines.append(row(corpus, name, r, conservative, forced, named, o))
                            if not forced and not conservative and r == (args.target or TARGETS)[0]:
                                s, c, h, p = o.before
                                notes.append(
                                    f"{corpus} {name}, {source}: before the first τ (R={r:g}), "
                                    f"τ = 0 decided {s:,} spam / {h:,} ham: recall "
                                    f"{_f(c / s if s else None)}, specificity "
                                    f"{_f(p / h if h else None)} ({o.unknown:,} undecided while "
                                    "the model was not ready)"
                                )
    print(
        f"Produced by `{command}` on {time.strftime('%Y-%m-%d')} "
        f"({time.perf_counter() - t_start:.0f} s).\n"
    )
    forced_note = '; "forced" rows override them as `--force` does' if args.forced else ""
    rebuilt = (
        "before every message (immediate feedback)"
        if sync == 1
        else f"every {sync} messages and scores the next {sync} as one batch"
    )
    print(
        f"Protocol: walk each corpus in `order`; the model is rebuilt {rebuilt} (the "
        f"daemon's path; spam iff s ≥ τ, τ = 0 before the first threshold is written); then "
        f"their feedback: ids in the {args.holdout_fraction:g} holdout share (hash) go to the "
        f"holdout, the rest are learned. Every K = {args.every} messages, recalibrate on "
        f"{' / '.join(f'({s}) {windows[s]}' for s in sources)}; with the job's guardrails (P ≥ "
        f"⌈1/(1−R)⌉, 100 for R = 1; conservative 95 % also P ≥ 299 for R = 0.99 and "
        f"unreachable for R = 1; N ≥ 100; AUC drop ≤ 0.02, against the last τ of the same "
        f"source){forced_note}. "
        f"Learning skips the holdout for either source, so the models and decision scores are "
        f"the same; only τ differs. A refused recalibration keeps the previous τ. Achieved "
        f"figures count the messages decided after the first τ was written; expected k/(P+1) is "
        f"what exchangeable new spam would give.\n"
    )
    print(HEADER)
    print("\n".join(lines))
    print()
    for note in notes:
        print(f"- {note}")


if __name__ == "__main__":
    main()
