"""Which estimators over which token views should the fusion combine? Leave one corpus out.

    .venv/bin/python bench/components.py [--corpus sms-spam ...] [--sizes]

Each binary corpus of ../shared/corpora is tokenized once by the fusion's tokenizer (words,
character 4-grams, OSB word pairs: `filterd.service.decide.tokenizer_of`): SMS, SpamAssassin,
Enron-Spam, SMS phishing (smishing counted as spam) and the deceptive hotel reviews (deceptive
counted as spam, truthful as ham). Every estimator of the pool replays the stream online
(`filterd.bayes.replay.online_scores`, each message scored by everything learned before it),
and each candidate set of components is combined as `filterd evaluate --variant fusion
--protocol online` combines `filterd.bayes.fusion.COMPONENTS` (`fusion.replay_fused`). The
figure is (1−AUC)% over the whole stream. For each corpus in turn, the set with the lowest
geometric mean over the *other* corpora is chosen and measured on the one left out.

The candidate sets are of estimators; the fusion's last component, the logistic component
(`filterd.bayes.logistic`), joins none of them, nor its linear feature (`fusion.features`).

--passes P [P ...] compares instead the fusion's components (`fusion.COMPONENTS`) combined with
P passes over the window's rows each (`fusion.window_weights`), by the same rule.

--rates R [R ...] compares instead the fusion's estimators combined without the logistic
component and with it at each step size η_L (`logistic.replay_logistic(rate=R)`), by the same
rule; the logistic component alone is printed beside.

--clips C [C ...] compares instead the fusion (`fusion.COMPONENTS` and the logistic component)
without the logistic component's linear feature and with it clipped at ±C
(`fusion.features`), by the same rule.

--sizes prints instead the model's size: the distinct tokens of each view once the whole corpus
is learned, against those of the default's tokenizer (words alone).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from filterd.bayes import fusion
from filterd.bayes.arrays import BoolArray
from filterd.bayes.features import DocBatch
from filterd.bayes.logistic import replay_logistic
from filterd.bayes.model import FUSION, ROBINSON_FISHER_SPEC, ModelSpec
from filterd.bayes.replay import online_scores, replay_many
from filterd.bayes.selection import Selection
from filterd.bayes.statistics import Statistics
from filterd.cli.corpus_files import read_corpus
from filterd.evaluation import ranking
from filterd.evaluation.corpus import relabel
from filterd.evaluation.protocols import Corpus
from filterd.service.config import DEFAULTS
from filterd.service.decide import tokenizer_of
from harness import CORPORA, cpu_model

# corpus → how its labels read as spam and ham
CORPUS_LABELS = {
    "sms-spam": {},
    "spamassassin": {},
    "enron-spam": {},
    "sms-smishing": {"smishing": "spam"},
    "deceptive-reviews": {"deceptive": "spam", "truthful": "ham"},
}
VIEWS = ("words", "chars", "pairs")


def pool() -> dict[str, ModelSpec]:
    """Every estimator a candidate set may take: the fusion's, and PNBC and MNB over each view."""
    specs = {str(spec): spec for spec in fusion.COMPONENTS}
    for view in VIEWS:
        for variant in ("pnbc", "mnb"):
            spec = ModelSpec(variant, view=view)
            specs[str(spec)] = spec
    return specs


def candidate_sets() -> dict[str, list[str]]:
    """Named sets of pool members (by their spec's text)."""
    words_rf = [str(s) for s in fusion.COMPONENTS[:5]]  # the five over words, first the default

    def on(view: str, *specs: ModelSpec) -> list[str]:
        return [str(replace(s, view=view)) for s in specs]

    rf = replace(ROBINSON_FISHER_SPEC, view=None)
    pnbc6 = ModelSpec("pnbc", selection=Selection.parse("local:6:alo"))
    pnbc, mnb = ModelSpec("pnbc"), ModelSpec("mnb")
    views9 = words_rf + on("chars", rf, pnbc6) + on("pairs", rf, pnbc6)
    return {
        "Robinson–Fisher alone (the first component)": [str(fusion.COMPONENTS[0])],
        "five over words (the fusion before views)": words_rf,
        "Robinson–Fisher over each view": [s for v in VIEWS for s in on(v, rf)],
        "Robinson–Fisher and pnbc:6 over each view": [s for v in VIEWS for s in on(v, rf, pnbc6)],
        "five over words, two over 4-grams": words_rf + on("chars", rf, pnbc6),
        "five over words, two over 4-grams, PNBC over words and 4-grams": words_rf
        + on("chars", rf, pnbc6)
        + on("words", pnbc)
        + on("chars", pnbc),
        "nine over three views": views9,
        "nine, and PNBC over each view": views9 + [s for v in VIEWS for s in on(v, pnbc)],
        "nine, and MNB over each view (fusion.COMPONENTS)": views9
        + [s for v in VIEWS for s in on(v, mnb)],
        "seven over words and 4-grams, and MNB over each": words_rf
        + on("chars", rf, pnbc6)
        + on("words", mnb)
        + on("chars", mnb),
        "seven over words and 4-grams, and PNBC over each": words_rf
        + on("chars", rf, pnbc6)
        + on("words", pnbc)
        + on("chars", pnbc),
        "seven over words and 4-grams, MNB and PNBC over each": words_rf
        + on("chars", rf, pnbc6)
        + [s for v in ("words", "chars") for s in on(v, mnb, pnbc)],
    }


def sizes(corpora: list[str]) -> None:
    """Distinct tokens per view of the statistics of each whole corpus (module docstring)."""
    print("| corpus | words alone | words | 4-grams | pairs | ratio |\n|---|---|---|---|---|---|")
    for corpus in corpora:
        records = relabel(
            read_corpus(CORPORA / corpus / "messages.jsonl.gz"), CORPUS_LABELS[corpus]
        )
        distinct = []
        for spec in (ROBINSON_FISHER_SPEC, ModelSpec(FUSION)):
            tokenized = Corpus.tokenize(records, tokenizer_of(DEFAULTS, specs=[spec]))
            stats = Statistics(["spam", "ham"])
            stats.update(tokenized.batch, [r.label for r in tokenized.records])
            distinct.append(stats.V_of_view.tolist())
        alone, (words, grams, pairs) = distinct[0][0], distinct[1]
        print(
            f"| {corpus} | {alone:,} | {words:,} | {grams:,} | {pairs:,} "
            f"| ×{(words + grams + pairs) / alone:.1f} |"
        )


def passes_sets(passes: list[int]) -> dict[str, tuple[list[str], int]]:
    """`fusion.COMPONENTS` combined with each number of passes."""
    members = [str(spec) for spec in fusion.COMPONENTS]
    return {f"fusion.COMPONENTS, {p} pass{'es' if p > 1 else ''}": (members, p) for p in passes}


def rates(corpora: list[str], steps: list[float]) -> None:
    """The fusion's estimators without the logistic component and with it at each step size,
    and the logistic component alone: online (1−AUC)%, and the step size each corpus left out
    would get from the others."""
    t_start = time.perf_counter()
    without = "the estimators alone (no logistic component)"
    names = [without] + [f"with the logistic component, η_L = {r:g}" for r in steps]
    figures: dict[str, dict[str, float]] = {name: {} for name in names}
    alone: dict[str, dict[float, float]] = {}
    for corpus, batch, y in streams(corpora):
        estimators = replay_many(batch, y, fusion.COMPONENTS)
        alone_z = fusion.replay_fused(estimators, y, clip=None)
        figures[without][corpus] = ranking.one_minus_auc_pct(alone_z, y)
        alone[corpus] = {}
        for name, rate in zip(names[1:], steps, strict=True):
            logistic, _ = replay_logistic(batch, y, rate=rate)
            z = fusion.replay_fused(np.column_stack([estimators, logistic]), y)
            figures[name][corpus] = ranking.one_minus_auc_pct(z, y)
            alone[corpus][rate] = ranking.one_minus_auc_pct(logistic, y)
    done = [c for c in corpora if c in alone]
    print_figures(f"--rates {' '.join(f'{r:g}' for r in steps)}", t_start, figures, done)
    for rate in steps:
        row = " | ".join(f"{alone[c][rate]:.3f}" for c in done)
        print(f"| the logistic component alone, η_L = {rate:g} | {row} |")
    print("\n| left out | η_L chosen on the others | held out | without |\n|---|---|---|---|")
    for out in done:
        rest = [c for c in done if c != out]
        chosen = min(names[1:], key=lambda n: geometric_mean([figures[n][c] for c in rest]))
        rate = steps[names.index(chosen) - 1]
        print(f"| {out} | {rate:g} | {figures[chosen][out]:.3f} | {figures[without][out]:.3f} |")


def clips(corpora: list[str], bounds: list[float]) -> None:
    """The fusion without the logistic component's linear feature and with it clipped at each
    bound: online (1−AUC)%, and the bound each corpus left out would get from the others."""
    t_start = time.perf_counter()
    without = "without the linear feature"
    names = [without] + [f"with clip(z_L, ±{c:g})" for c in bounds]
    figures: dict[str, dict[str, float]] = {name: {} for name in names}
    for corpus, batch, y in streams(corpora):
        scores = fusion.replay_components(batch, y)
        for name, clip in zip(names, [None, *bounds], strict=True):
            z = fusion.replay_fused(scores, y, clip=clip)
            figures[name][corpus] = ranking.one_minus_auc_pct(z, y)
    done = [c for c in corpora if c in figures[without]]
    print_figures(f"--clips {' '.join(f'{c:g}' for c in bounds)}", t_start, figures, done)
    print("\n| left out | chosen on the others | held out | without |\n|---|---|---|---|")
    for out in done:
        rest = [c for c in done if c != out]
        chosen = min(names, key=lambda n: geometric_mean([figures[n][c] for c in rest]))
        print(f"| {out} | {chosen} | {figures[chosen][out]:.3f} | {figures[without][out]:.3f} |")


def print_figures(
    options: str, t_start: float, figures: dict[str, dict[str, float]], corpora: list[str]
) -> None:
    """The command's line and the table of `figures` (row name → corpus → (1−AUC)%)."""
    print(
        f"Produced by `python bench/components.py {options}` on {time.strftime('%Y-%m-%d')}, "
        f"{cpu_model()} ({time.perf_counter() - t_start:.0f} s); online (1−AUC)%.\n"
    )
    print("| the fusion | " + " | ".join(corpora) + " |\n|---|" + "---|" * len(corpora))
    for name, row in figures.items():
        print(f"| {name} | " + " | ".join(f"{row[c]:.3f}" for c in corpora) + " |")


def streams(corpora: list[str]) -> Iterator[tuple[str, DocBatch, BoolArray]]:
    """(corpus, its stream's token counts in `order`, spam or not) of each of `corpora` present,
    tokenized by the fusion's tokenizer."""
    tokenizer = tokenizer_of(DEFAULTS, specs=[ModelSpec(FUSION)])
    for corpus in corpora:
        path = CORPORA / corpus / "messages.jsonl.gz"
        if not path.exists():
            continue
        records = relabel(read_corpus(path), CORPUS_LABELS[corpus])
        tokenized = Corpus.tokenize(records, tokenizer)
        stream = sorted(tokenized.records, key=lambda r: r.order)
        y = np.array([r.label == "spam" for r in stream])
        yield corpus, tokenized.batch_of(stream), y


def geometric_mean(values: list[float]) -> float:
    return float(np.exp(np.mean(np.log(values))))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", action="append", choices=list(CORPUS_LABELS))
    parser.add_argument("--sizes", action="store_true", help="the model's size instead")
    parser.add_argument(
        "--passes", type=int, nargs="+", metavar="P", help="compare passes over the window instead"
    )
    parser.add_argument(
        "--rates",
        type=float,
        nargs="+",
        metavar="R",
        help="compare the logistic component's step sizes instead",
    )
    parser.add_argument(
        "--clips",
        type=float,
        nargs="+",
        metavar="C",
        help="compare bounds of the logistic component's linear feature instead",
    )
    args = parser.parse_args()
    if args.clips:
        clips(args.corpus or list(CORPUS_LABELS), args.clips)
        return
    if args.sizes:
        sizes([c for c in args.corpus or CORPUS_LABELS if (CORPORA / c).exists()])
        return
    if args.rates:
        rates(args.corpus or list(CORPUS_LABELS), args.rates)
        return
    t_start = time.perf_counter()
    sets = (
        passes_sets(args.passes)
        if args.passes
        else {name: (members, fusion.PASSES) for name, members in candidate_sets().items()}
    )
    used = {name for members, _ in sets.values() for name in members}
    specs = {name: spec for name, spec in pool().items() if name in used}
    figures: dict[str, dict[str, float]] = {name: {} for name in sets}
    alone_scores: dict[str, float] = {}  # Robinson–Fisher alone, the first component
    for corpus, batch, y in streams(args.corpus or list(CORPUS_LABELS)):
        scores = {name: online_scores(batch, y, spec) for name, spec in specs.items()}
        alone_scores[corpus] = ranking.one_minus_auc_pct(scores[str(fusion.COMPONENTS[0])], y)
        for name, (members, passes) in sets.items():
            combined = np.column_stack([scores[m] for m in members])
            z = (
                combined[:, 0]
                if len(members) == 1
                else fusion.replay_fused(combined, y, passes=passes, clip=None)
            )
            figures[name][corpus] = ranking.one_minus_auc_pct(z, y)
    corpora = [c for c in CORPUS_LABELS if c in alone_scores]
    print(
        f"Produced by `python bench/components.py` on {time.strftime('%Y-%m-%d')}, "
        f"{cpu_model()} ({time.perf_counter() - t_start:.0f} s); online (1−AUC)%.\n"
    )
    print("| components | " + " | ".join(corpora) + " |\n|---|" + "---|" * len(corpora))
    for name in sets:
        print(f"| {name} | " + " | ".join(f"{figures[name][c]:.3f}" for c in corpora) + " |")
    print("\n| left out | chosen on the others | held out | Robinson–Fisher alone |")
    print("|---|---|---|---|")
    for out in corpora:
        rest = [c for c in corpora if c != out]
        chosen = min(sets, key=lambda n: geometric_mean([figures[n][c] for c in rest]))
        print(f"| {out} | {chosen} | {figures[chosen][out]:.3f} | {alone_scores[out]:.3f} |")


if __name__ == "__main__":
    main()
