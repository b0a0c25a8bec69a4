"""Would the default be chosen without the corpus it is measured on? Leave one corpus out.

    .venv/bin/python bench/loo.py

Protocol: each spam corpus of ../shared/corpora (smishing counted as spam) is tokenized once
with `filterd.tokenize.Tokenizer()` and replayed online in `order` by every candidate
(`filterd.evaluation.protocols.online_replay`, the code of `filterd evaluate --protocol online`):
a grid of Robinson–Fisher settings (prior strength s, clue selection) and pnbc+local:6:alo.
The figure is (1−AUC)% over the whole stream. For each corpus in turn, the candidate with the
lowest geometric mean of (1−AUC)% over the *other* three is chosen, and measured on the one left
out; the table gives, per corpus, the chosen candidate, its held-out figure, the default's, and
the best candidate in hindsight (in-sample).

A second choice reads every measure the default is held to: the split protocol too
(`filterd.evaluation.protocols.split_scores`, the split of `filterd evaluate`), so that each
candidate has three errors per corpus — online (1−AUC)%, split (1−AUC)% and split
1 − specificity at 100 % recall (the share of ham flagged when every spam is caught) — and the
candidate with the lowest geometric mean of the nine errors on the other three corpora is chosen.
"""

from __future__ import annotations

import time

import numpy as np

from filterd.bayes.model import ROBINSON_FISHER_SPEC, ModelSpec
from filterd.bayes.selection import Selection
from filterd.cli.corpus_files import read_corpus
from filterd.evaluation import ranking
from filterd.evaluation.corpus import relabel, train_test_split
from filterd.evaluation.protocols import Corpus, online_replay, split_scores
from filterd.tokenize import Tokenizer
from harness import CORPORA

ALL = ["sms-spam", "spamassassin", "enron-spam", "sms-smishing"]


def candidates() -> dict[str, ModelSpec]:
    grid = {}
    for s, x in ((0.025, 0.52), (0.1, 0.5), (0.45, 0.5)):
        for select in (
            "local:1000000:alo:0.1",
            "local:1000000:alo:0.18",
            "local:1000000:alo:0.3",
            "local:15:alo",
            "local:30:alo",
        ):
            spec = ModelSpec("robinson_fisher", {"s": s, "x": x}, Selection.parse(select))
            grid[str(spec)] = spec
    grid["pnbc+local:6:alo"] = ModelSpec("pnbc", selection=Selection.parse("local:6:alo"))
    return grid


def main() -> None:
    t0 = time.perf_counter()
    tokenizer = Tokenizer()
    grid = candidates()
    figures: dict[str, dict[str, float]] = {name: {} for name in grid}
    split: dict[str, dict[str, tuple[float, float]]] = {name: {} for name in grid}
    for corpus in ALL:
        path = CORPORA / corpus / "messages.jsonl.gz"
        if not path.exists():
            continue
        records = relabel(read_corpus(path), {"smishing": "spam"})
        tokenized = Corpus.tokenize(records, tokenizer)
        truth = np.array([r.label == "spam" for r in train_test_split(records)[1]])
        for name, spec in grid.items():
            replayed, y = online_replay(tokenized, spec, "spam")
            figures[name][corpus] = ranking.one_minus_auc_pct(replayed, y)
            tested = split_scores(tokenized, spec, "spam")
            split[name][corpus] = (
                ranking.one_minus_auc_pct(tested, truth),
                1.0 - ranking.specificity_at_recall(tested, truth, 1.0),
            )
    corpora = [c for c in ALL if c in figures[str(ROBINSON_FISHER_SPEC)]]
    default = str(ROBINSON_FISHER_SPEC)
    print(
        f"Produced by `python bench/loo.py` on {time.strftime('%Y-%m-%d')} "
        f"({time.perf_counter() - t0:.0f} s); online (1−AUC)%, {len(grid)} candidates.\n"
    )
    print(
        "| left out | chosen on the other three | held out | default | best in hindsight |\n"
        "|---|---|---|---|---|"
    )
    for out in corpora:
        rest = [c for c in corpora if c != out]

        def geo(name: str, over: list[str] = rest) -> float:
            return float(np.exp(np.mean([np.log(figures[name][c]) for c in over])))

        chosen = min(grid, key=geo)
        best = min(grid, key=lambda n: figures[n][out])
        print(
            f"| {out} | {chosen} | {figures[chosen][out]:.3f} | {figures[default][out]:.3f} "
            f"| {best}: {figures[best][out]:.3f} |"
        )
    print(
        "\n| candidate | "
        + " | ".join(corpora)
        + " | geometric mean |\n|---|"
        + "---|" * (len(corpora) + 1)
    )
    order = sorted(
        grid, key=lambda n: float(np.exp(np.mean([np.log(figures[n][c]) for c in corpora])))
    )
    for name in order:
        cells = " | ".join(f"{figures[name][c]:.3f}" for c in corpora)
        mean = float(np.exp(np.mean([np.log(figures[name][c]) for c in corpora])))
        mark = " (default)" if name == default else ""
        print(f"| {name}{mark} | {cells} | {mean:.3f} |")
    every_measure(grid, figures, split, corpora)


def every_measure(
    grid: dict[str, ModelSpec],
    online: dict[str, dict[str, float]],
    split: dict[str, dict[str, tuple[float, float]]],
    corpora: list[str],
) -> None:
    """The choice on all three errors (module docstring), held out and in-sample."""

    def errors(name: str, corpus: str) -> tuple[float, float, float]:
        return (online[name][corpus], *split[name][corpus])

    def geo(name: str, over: list[str]) -> float:
        logs = [np.log(max(e, 1e-6)) for c in over for e in errors(name, c)]
        return float(np.exp(np.mean(logs)))

    default = str(ROBINSON_FISHER_SPEC)
    print("\nEvery measure: online (1−AUC)% / split (1−AUC)% / split 1 − spec@R=1\n")
    print("| left out | chosen on the other three | held out | default |\n|---|---|---|---|")
    for out in corpora:
        chosen = min(grid, key=lambda n: geo(n, [c for c in corpora if c != out]))
        held, mine = errors(chosen, out), errors(default, out)
        print(
            f"| {out} | {chosen} | {' / '.join(f'{e:.3f}' for e in held)} | "
            f"{' / '.join(f'{e:.3f}' for e in mine)} |"
        )
    ranked = sorted(grid, key=lambda n: geo(n, corpora))
    print(
        "\nGeometric mean of the twelve errors, best first: "
        + ", ".join(
            f"{n}{' (default)' if n == default else ''} {geo(n, corpora):.3f}" for n in ranked[:6]
        )
    )


if __name__ == "__main__":
    main()
