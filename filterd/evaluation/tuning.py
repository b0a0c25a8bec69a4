"""Hyper-parameters chosen on validation data.

- `grid_search`: every combination of a few values per parameter (α, PCN's A, WMNB's γ,
  the local-selection N and ranking, …), keeping the best by an objective.
- `tune_unb_lambda`: Kikuchi & Ozono's per-class λ_c ∈ {1e-9, …, 1e-1} by differential
  evolution maximizing macro-F1 (the paper's settings: 50 generations, population 30,
  F = 0.8, CR = 0.6). Each class's score depends only on its own λ_c, so the class scores
  are computed once per candidate λ and the search only recombines columns.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
from scipy.optimize import differential_evolution

from filterd.bayes.features import DocBatch
from filterd.bayes.model import Model, ModelSpec
from filterd.bayes.selection import Selection
from filterd.bayes.statistics import Statistics
from filterd.evaluation import ranking

Objective = Literal["auc", "spec_at_full_recall", "macro_f1"]
LAMBDA_GRID = tuple(10.0**e for e in range(-9, 0))


@dataclass(frozen=True)
class Tuned:
    spec: ModelSpec  # the best specification found
    value: float  # its objective on the validation data
    tried: list[tuple[ModelSpec, float]]  # every candidate with its objective


def objective_value(
    model: Model,
    batch: DocBatch,
    truth: Sequence[str],
    objective: Objective,
    target: str | None = None,
) -> float:
    """The objective of `model` on labelled validation documents (target: a binary task)."""
    scores = model.score(batch)
    if target is None:
        if objective != "macro_f1":
            raise ValueError(f"{objective} needs a target class; multi-class tuning uses macro_f1")
        return ranking.macro_f1(list(truth), scores.predict())
    decision = scores.binary(target)
    positive = np.array([t == target for t in truth])
    if objective == "auc":
        return ranking.auc(decision, positive)
    if objective == "spec_at_full_recall":
        return ranking.specificity_at_recall(decision, positive, 1.0)
    return ranking.macro_f1(positive, decision >= 0.0, labels=[True, False])


def grid_search(
    stats: Statistics,
    batch: DocBatch,
    truth: Sequence[str],
    spec: ModelSpec,
    grid: Mapping[str, Sequence[Any]],
    objective: Objective = "auc",
    target: str | None = None,
) -> Tuned:
    """Try every combination of `grid` (estimator parameters, and "select" for Selection specs)."""
    names = list(grid)
    tried = []
    for values in itertools.product(*(grid[n] for n in names)):
        candidate = _with(spec, dict(zip(names, values)))
        value = objective_value(
            Model.build(stats, candidate, target), batch, truth, objective, target
        )
        tried.append((candidate, value))
    best = max(tried, key=lambda item: item[1])  # first of equals: grid order breaks ties
    return Tuned(best[0], best[1], tried)


def _with(spec: ModelSpec, values: Mapping[str, Any]) -> ModelSpec:
    params = dict(spec.params)
    selection = spec.selection
    for name, value in values.items():
        if name == "select":
            selection = value if isinstance(value, Selection) else Selection.parse(value)
        else:
            params[name] = value
    return replace(spec, params=params, selection=selection)


def tune_unb_lambda(
    stats: Statistics,
    batch: DocBatch,
    truth: Sequence[str],
    spec: ModelSpec | None = None,
    target: str | None = None,
    grid: Sequence[float] = LAMBDA_GRID,
    generations: int = 50,
    population: int = 30,
    seed: int = 0,
) -> Tuned:
    """Per-class λ for UNB-R by differential evolution on validation macro-F1 (`spec`: UNB's, by
    default with its default parameters)."""
    spec = ModelSpec("unb") if spec is None else spec
    if spec.variant != "unb":
        raise ValueError("tune_unb_lambda tunes the unb variant")
    # class scores under each candidate λ (every class at once): (len(grid), n_docs, C)
    models = [
        Model.build(stats, replace(spec, params={**spec.params, "lam": lam}), target)
        for lam in grid
    ]
    labels = models[0].labels
    columns = np.stack([m.score(batch).class_scores for m in models])
    true_class = np.array([_row(labels, t, target) for t in truth])

    def negative_macro_f1(choice: np.ndarray) -> float:
        chosen = columns[choice.astype(int), :, np.arange(len(labels))]  # (C, n_docs)
        predicted = chosen.argmax(axis=0)
        return -ranking.macro_f1(true_class, predicted, labels=list(range(len(labels))))

    rng = np.random.default_rng(seed)
    init = rng.integers(0, len(grid), size=(max(population, 5), len(labels))).astype(float)
    found = differential_evolution(
        negative_macro_f1,
        bounds=[(0, len(grid) - 1)] * len(labels),
        integrality=[True] * len(labels),
        maxiter=generations,
        init=init,
        mutation=0.8,
        recombination=0.6,
        seed=seed,
        polish=False,
        tol=0,
    )
    lam = [float(grid[int(i)]) for i in found.x]
    best = replace(spec, params={**spec.params, "lam": lam})
    return Tuned(best, -float(found.fun), [(best, -float(found.fun))])


def _row(labels: tuple[str, ...], label: str, target: str | None) -> int:
    if target is not None:
        return 0 if label == target else 1
    return labels.index(label)
