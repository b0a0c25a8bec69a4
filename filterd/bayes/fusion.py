"""The fusion variant: an online logistic combination of estimators that read the same statistics.

Each component c scores a message with its decision score s_c(x) (log-odds for the linear
estimators and Robinson–Fisher). The fusion's decision score is

    z(x) = w_0 + Σ_c w_c · g(s_c(x)) + w_L · clip(s_k(x), ±C),      g(s) = sign(s) · log(1 + |s|)

(g compresses the log-odds of long e-mails, which run to the hundreds, while keeping their
order). The last component, the logistic component, enters twice: compressed like the others,
and as it is, clipped at ±C (`LINEAR_CLIP`). Its z is fitted log-odds, not a naive-Bayes sum
that grows with a message's length, and among the messages it scores highest the compression
would hide the differences it ranks by (on card payments, where it ranks the top best); the
clip keeps an e-mail's z of ±100 from unsettling the passes. The weights are learned from
labelled messages in arrival order by online logistic regression, one gradient step per
message (Lynam & Cormack, SIGIR 2006):

    w ← w + η (y − σ(w·x)) x,      x = (1, g(s_1), …, g(s_k), clip(s_k, ±C)),   y ∈ {0, 1}

The daemon keeps the window form: `window_weights` is `PASSES` such passes from w = 0 over the
newest rows of each class (`newest_of_each`: a rare target's rows reach further back, so that
the fit sees enough of them) of (component scores on arrival, label), in arrival order, a
minority target weighing as much as the rest:
each step of a row of the rest counts 1 / `target_weight` (no step is larger than η, however
rare the target), so the weights are a function of stored rows and a relabel is exact — correct
the row. The calibration job computes them with each threshold version (the τ is chosen on the
window re-scored with them), and scorers load the two together. Until the first version the
weights are `INITIAL_WEIGHTS`: the first component alone, whose order and sign (z > 0 iff
s_1 > 0) are those of the default model.

The last component is not an estimator of the counts: the logistic component
(`filterd.bayes.logistic`), online logistic regression on the tokens' presence, whose weights
are learned with the counts, one step per labelled message.

A `FusionModel` scores a batch with every component (`FusedScores`); the explanation of a
decision is the first component's clues.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from filterd.bayes.arrays import BoolArray, FloatArray, Int64Array
from filterd.bayes.features import DocBatch, only_view
from filterd.bayes.logistic import LogisticScorer, replay_logistic, sigmoid
from filterd.bayes.model import FUSION, ROBINSON_FISHER_SPEC, Model, ModelSpec, Scores
from filterd.bayes.replay import Progress, replay_many
from filterd.bayes.selection import Selection
from filterd.bayes.statistics import Statistics
from filterd.bayes.view_scores import ViewScores, supports

c_logistic_pass: Callable[[FloatArray, BoolArray, float, float, int], bytearray] | None
try:
    from filterd._speedups import logistic_pass as c_logistic_pass
except ImportError:  # pragma: no cover - depends on the build
    c_logistic_pass = None

RATE = 0.02
# Passes over the window's rows: one pass from w = 0 leaves the weights short of the fit; two
# were chosen by leaving one corpus out (docs/benchmarks.md, "Which components does the fusion
# combine?").
PASSES = 2
WINDOW = 5000  # rows of each class the weights are learned from (the newest)
REFIT_EVERY = 100  # the online protocol, once the window is full: messages between two fits

# Estimators reading the token views of one statistics table (`filterd.bayes.vocab.VIEWS`):
# over words, Robinson–Fisher with fewer or more clues and other prior strengths, SpamBayes' 15
# strongest clues, and PNBC over the 6 strongest; over character 4-grams and over word pairs,
# Robinson–Fisher and PNBC over the 6 strongest; and MNB over every token of each view. The
# first, the default model over words, scores alone until the first weights. The set was chosen
# by leaving one corpus out (bench/components.py; docs/benchmarks.md, "Which components does
# the fusion combine?").
_RF = "robinson_fisher"
COMPONENTS: tuple[ModelSpec, ...] = (
    replace(ROBINSON_FISHER_SPEC, view="words"),
    ModelSpec(_RF, {"s": 0.025, "x": 0.52}, Selection.parse("local:1000000:alo:0.1"), view="words"),
    ModelSpec(_RF, {"s": 0.1, "x": 0.5}, Selection.parse("local:1000000:alo:0.3"), view="words"),
    ModelSpec(_RF, {"s": 0.45, "x": 0.5}, Selection.parse("local:15:alo"), view="words"),
    ModelSpec("pnbc", selection=Selection.parse("local:6:alo"), view="words"),
    replace(ROBINSON_FISHER_SPEC, view="chars"),
    ModelSpec("pnbc", selection=Selection.parse("local:6:alo"), view="chars"),
    replace(ROBINSON_FISHER_SPEC, view="pairs"),
    ModelSpec("pnbc", selection=Selection.parse("local:6:alo"), view="pairs"),
    ModelSpec("mnb", view="words"),
    ModelSpec("mnb", view="chars"),
    ModelSpec("mnb", view="pairs"),
)
# the columns of the component scores: each of COMPONENTS, then the logistic component's z
COLUMNS = len(COMPONENTS) + 1
# The bound of the last component's linear feature (the module docstring), chosen among 2, 3, 4
# and 8 by leaving one corpus out (docs/benchmarks.md, "The logistic component").
LINEAR_CLIP = 3.0


def views_read(spec: ModelSpec) -> frozenset[str]:
    """The token views a model of `spec` reads on their own: its view, or its components' for
    the fusion (the tokenizer must make them: `filterd.service.decide.tokenizer_of`).

    >>> sorted(views_read(ModelSpec(FUSION)))
    ['chars', 'pairs', 'words']
    >>> views_read(ROBINSON_FISHER_SPEC)
    frozenset()
    """
    specs = COMPONENTS if spec.variant == FUSION else (spec,)
    return frozenset(s.view for s in specs if s.view is not None)


def initial_weights(k: int) -> tuple[float, ...]:
    """No bias, the first of `k` components alone: z = g(s_1) (2 + k weights: `features`).

    >>> initial_weights(3)
    (0.0, 1.0, 0.0, 0.0, 0.0)
    """
    return (0.0, 1.0) + (0.0,) * k


INITIAL_WEIGHTS = initial_weights(COLUMNS)


def weights_or_initial(weights: Sequence[float] | None, k: int) -> tuple[float, ...]:
    """`weights` if they combine `k` components (2 + k entries), else `initial_weights(k)`:
    for None, and for the weights of another set of components or features (an older
    release's, until the next calibration learns them anew).

    >>> weights_or_initial((0.5, 1.0, 2.0, 0.1), 2), weights_or_initial((0.5, 1.0, 2.0), 2)
    ((0.5, 1.0, 2.0, 0.1), (0.0, 1.0, 0.0, 0.0))
    """
    if weights is None or len(weights) != k + 2:
        return initial_weights(k)
    return tuple(float(w) for w in weights)


def features(scores: FloatArray, clip: float | None = LINEAR_CLIP) -> FloatArray:
    """(n, 2 + k): a bias column, g(s) of the (n, k) component scores, and the last
    component's score clipped at ±`clip` (None: no such column, (n, 1 + k): for estimators
    combined without the logistic component, bench/components.py).

    >>> features(np.array([[0.0, -(np.e - 1)], [0.0, 10.0]])).round(3).tolist()
    [[1.0, 0.0, -1.0, -1.718], [1.0, 0.0, 2.398, 3.0]]
    >>> features(np.array([[0.0, 10.0]]), clip=None).round(3).tolist()
    [[1.0, 0.0, 2.398]]
    """
    scores = np.asarray(scores, dtype=np.float64)
    compressed = np.sign(scores) * np.log1p(np.abs(scores))
    columns = [np.ones(len(scores)), compressed]
    if clip is not None:
        columns.append(np.clip(scores[:, -1], -clip, clip))
    return np.column_stack(columns)


def combine(scores: FloatArray, weights: Sequence[float]) -> FloatArray:
    """(n,) z of the (n, k) component scores with `weights` (2 + k: `features`).

    >>> combine(np.array([[np.e - 1, 5.0]]), (0.5, 1.0, 0.0, 0.25)).tolist()
    [2.25]
    """
    w = np.asarray(weights, dtype=np.float64)
    if len(w) != np.shape(scores)[1] + 2:
        raise ValueError(f"{len(w)} weights for {np.shape(scores)[1]} components (give 2 + k)")
    z: FloatArray = features(scores) @ w
    return z


def _step(
    w: list[float], row: list[float], target: bool, rate: float, target_rate: float
) -> tuple[float, list[float]]:
    """(z, w'): z = w·x, then w' = w + r (y − σ(z)) x, r = `target_rate` for a target row, else
    `rate` (summed and rounded in the order of the C loop `logistic_pass`)."""
    z = 0.0
    for a, b in zip(row, w):
        z += a * b
    p = sigmoid(z)
    step = target_rate * (1.0 - p) if target else rate * (0.0 - p)
    return z, [b + step * a for a, b in zip(row, w)]


def target_weight(y: BoolArray) -> float:
    """How many times a target row weighs what a row of the rest weighs in a pass over rows
    labelled `y`: n_rest / n_target, and at least 1. The decision is recall-targeted, its
    threshold set by the target's lowest scores, so a target class that is a minority weighs as
    much as the rest, and never less.

    >>> target_weight(np.array([True, False, False, False])), target_weight(np.array([1, 1, 0]))
    (3.0, 1.0)
    """
    y = np.asarray(y, dtype=bool)
    targets = int(np.count_nonzero(y))
    return max(1.0, (len(y) - targets) / targets) if targets else 1.0


def online_fusion(x: FloatArray, y: BoolArray, rate: float = RATE) -> FloatArray:
    """(n,) z of each row with the weights learned from the rows before it (prequential; Lynam &
    Cormack's form, every row's step counting once)."""
    w = [0.0] * np.shape(x)[1]
    out = np.zeros(len(y))
    for t, (row, target) in enumerate(zip(np.asarray(x).tolist(), np.asarray(y).tolist())):
        out[t], w = _step(w, row, bool(target), rate, rate)
    return out


def window_weights(
    x: FloatArray, y: BoolArray, rate: float = RATE, passes: int = PASSES
) -> FloatArray:
    """The weights of `passes` passes from w = 0 over the rows in order (the second starting
    where the first ended), a target row's step of `rate` and the others' `target_weight(y)`
    times smaller. (Scaling the target's steps up instead made steps of 140 η with frauds at
    0.7 % of the traffic: the pass did not settle.)

    >>> x = features(np.array([[3.0], [-2.0]] * 200))
    >>> w = window_weights(x, np.array([True, False] * 200))
    >>> bool(w[1] > 0)  # the component's score points the right way
    True
    """
    rest_rate = rate / target_weight(y)
    x = np.tile(np.asarray(x, dtype=np.float64), (passes, 1))  # the rows, again and again
    y = np.tile(np.asarray(y, dtype=bool), passes)
    if c_logistic_pass is None:
        return logistic_pass_python(x, y, rest_rate, rate)
    weights = c_logistic_pass(x, y, rest_rate, rate, x.shape[1])
    return np.frombuffer(weights, dtype=np.float64).copy()


def logistic_pass_python(
    x: FloatArray, y: BoolArray, rate: float, target_rate: float
) -> FloatArray:
    """One pass from w = 0 over the rows in order, a step of `target_rate` for a row with y,
    of `rate` for the others (the reference of the C loop `logistic_pass`, which sums and
    rounds in the same order)."""
    w = [0.0] * np.shape(x)[1]
    for row, target in zip(np.asarray(x, dtype=np.float64).tolist(), np.asarray(y).tolist()):
        _, w = _step(w, row, bool(target), rate, target_rate)
    return np.array(w)


def newest_of_each(targets: Int64Array, rest: Int64Array, end: int, window: int) -> Int64Array:
    """The positions, in order, of the newest `window` rows of each class before `end`, given
    the positions of the target's rows and of the rest's (each in order). With frauds at 0.7 %
    of the traffic, the newest 5,000 rows hold some 35 frauds: too few for the weights to learn
    which component ranks the top best.

    >>> newest_of_each(np.array([0, 5]), np.array([1, 2, 3, 4, 6]), end=6, window=2).tolist()
    [0, 3, 4, 5]
    """
    t, r = np.searchsorted(targets, end), np.searchsorted(rest, end)
    newest = np.concatenate([targets[max(0, t - window) : t], rest[max(0, r - window) : r]])
    return np.sort(newest)


def fit_weights(scores: FloatArray, y: BoolArray, window: int = WINDOW) -> tuple[float, ...]:
    """The weights the daemon would hold after `scores` (n, k) with labels `y`, in arrival order:
    `window_weights` over the newest `window` rows of each class (`initial_weights` for no
    rows)."""
    if len(y) == 0:
        return initial_weights(np.shape(scores)[1])
    y = np.asarray(y, dtype=bool)
    rows = newest_of_each(np.flatnonzero(y), np.flatnonzero(~y), len(y), window)
    w = window_weights(features(scores[rows]), y[rows])
    return tuple(float(v) for v in w)


def replay_fused(
    scores: FloatArray,
    y: BoolArray,
    refit_every: int = REFIT_EVERY,
    window: int = WINDOW,
    visible: Int64Array | None = None,
    passes: int = PASSES,
    arrival: FloatArray | None = None,
    clip: float | None = LINEAR_CLIP,
) -> FloatArray:
    """(n,) z of the online protocol: message t is combined with the weights of `passes` passes
    over the newest `window` rows of each class learned before it (`fit_weights`, the daemon's
    formula): of the rows before t, or with late labels of the first v_t (`visible`). The
    weights are recomputed for every new row while the rows fit the window and every
    `refit_every` new rows after; `initial_weights` before the first row.

    A row is a message's component scores when its label arrived (`arrival`, (n, k); default
    `scores`): the daemon's learner scores each labelled message then, with every label that
    came before learned, and those are the rows its calibration job fits the weights on. With
    labels at once they are the scores on arrival (`scores`); with late labels, the replay's
    scores with labels at once, not the scores message t was decided with. `clip`: as `features`
    takes it."""
    x = features(scores, clip)
    rows_x = x if arrival is None else features(arrival, clip)
    y = np.asarray(y, dtype=bool)
    targets, rest = np.flatnonzero(y), np.flatnonzero(~y)
    out = np.zeros(len(y))
    w = np.zeros(x.shape[1])
    w[1] = 1.0  # `initial_weights`: the first component alone
    fitted = 0  # rows the weights were learned from
    for t in range(len(y)):
        learned = t if visible is None else int(visible[t])
        if learned > fitted and (learned <= window or learned - fitted >= refit_every):
            rows = newest_of_each(targets, rest, learned, window)
            w = window_weights(rows_x[rows], y[rows], passes=passes)
            fitted = learned
        out[t] = float(x[t] @ w)
    return out


def replay_components(
    batch: DocBatch,
    is_target: BoolArray,
    target: str = "spam",
    progress: Progress = iter,
    visible: Int64Array | None = None,
) -> FloatArray:
    """(n, COLUMNS) every component's scores in the online replay of `batch` (`online_scores`,
    the components of a view from one history: `replay_many`; the logistic component's
    `replay_logistic`); `progress` sees the first component's pass."""
    estimators = replay_many(batch, is_target, COMPONENTS, target, progress, visible)
    return np.column_stack([estimators, replay_logistic(batch, is_target, visible)[0]])


@dataclass(frozen=True)
class FusedScores:
    """The component scores of a batch (n × k), combined with `weights`; the first component's
    `Scores` explain the decisions."""

    components: FloatArray
    first: Scores
    weights: tuple[float, ...]

    @property
    def labels(self) -> tuple[str, ...]:
        return self.first.labels

    def binary(self) -> FloatArray:
        """(n,) z(x), the fusion's decision score for the target class."""
        return combine(self.components, self.weights)

    def predict(self) -> list[str]:
        """The target where z(x) ≥ 0, else the rest."""
        return [self.labels[0] if z >= 0 else self.labels[1] for z in self.binary()]

    def explain(self, i: int) -> list[tuple[str, float]]:
        return self.first.explain(i)

    def explanations(
        self, limit: int, decimals: int | None = None
    ) -> list[list[tuple[str, float]]]:
        return self.first.explanations(limit, decimals=decimals)


class FusionModel:
    """The components of `COMPONENTS` and the logistic component on one statistics version,
    target vs the rest, and the weights that combine them."""

    def __init__(
        self,
        components: Sequence[Model],
        logistic: LogisticScorer,
        weights: Sequence[float] = INITIAL_WEIGHTS,
        tables: Sequence[_ViewTable] | None = None,
    ) -> None:
        if len(weights) != len(components) + 3:
            raise ValueError(
                f"{len(weights)} weights for {len(components)} components and the logistic "
                "component (give 3 + k: `features`)"
            )
        self.components = tuple(components)
        self.logistic = logistic
        self.weights = tuple(float(w) for w in weights)
        first = self.components[0]
        self.spec = ModelSpec(FUSION)
        self.hasher, self.version, self.labels = first.hasher, first.version, first.labels
        self._tables = tuple(_view_tables(self.components) if tables is None else tables)

    @classmethod
    def build(cls, stats: Statistics, target: str, lazy: bool = False) -> FusionModel:
        """The components on `stats`; those of one view share its vocabulary snapshot."""
        snapshots = {
            view: None if lazy else stats.vocab.snapshot(view)
            for view in {spec.view_id for spec in COMPONENTS}
        }
        return cls(
            [
                Model.build(stats, spec, target, lazy=lazy, vocab=snapshots[spec.view_id])
                for spec in COMPONENTS
            ],
            LogisticScorer(stats),
        )

    @property
    def target(self) -> str:
        return self.labels[0]

    def with_weights(self, weights: Sequence[float] | None) -> FusionModel:
        """The same components combined with `weights` (`weights_or_initial`)."""
        return FusionModel(
            self.components,
            self.logistic,
            weights_or_initial(weights, len(self.components) + 1),
            self._tables,
        )

    def score(self, batch: DocBatch) -> FusedScores:
        """Every component's scores: the batch is split into views, each view's entries are
        looked up once, and the components of a view scored together (`ViewScores`); the
        first, whose clues explain the decisions, and any a table cannot take, on their own; the
        logistic component's z last."""
        scores = np.zeros((len(batch), len(self.components) + 1))
        scores[:, -1] = self.logistic.bias
        first: Scores | None = None
        for table in self._tables:
            of_view = only_view(batch, table.view)
            ids = self.components[table.reader].columns_of(of_view)
            # the components' views hold every token once: the logistic component's z is the
            # sum of its views', each with the ids its components looked up
            assert table.view is not None
            scores[:, -1] += self.logistic.view_sums(of_view, ids, table.view)
            for i in table.own:
                own = self.components[i].score_columns_of(of_view, ids)
                scores[:, i] = own.binary()
                first = own if i == 0 else first
            if table.scores is not None:
                scores[:, table.shared] = table.scores.scores(of_view, ids)
        assert first is not None  # the first component is always scored on its own
        return FusedScores(scores, first, self.weights)

    def score_each(self, batch: DocBatch) -> FloatArray:
        """(n, k + 1) every component's decision scores, each on its own path: the reference of
        `score`'s."""
        each = [model.score(batch).binary() for model in self.components]
        return np.column_stack([*each, self.logistic.score(batch)])


@dataclass(frozen=True)
class _ViewTable:
    """How the fusion scores one view: the components it scores on their own (`own`: the
    first, and any `view_scores.supports` refuses) and those it scores together (`shared`)."""

    view: int | None
    reader: int  # a component whose `columns_of` serves every one of the view (one snapshot)
    own: tuple[int, ...]
    shared: list[int]
    scores: ViewScores | None


def _view_tables(components: Sequence[Model]) -> list[_ViewTable]:
    tables = []
    for view in dict.fromkeys(model.spec.view_id for model in components):
        mine = [i for i, model in enumerate(components) if model.spec.view_id == view]
        shared = [i for i in mine if i > 0 and supports(components[i])]
        own = tuple(i for i in mine if i not in shared)
        together = ViewScores([components[i] for i in shared]) if shared else None
        tables.append(_ViewTable(view, mine[0], own, shared, together))
    return tables


DecisionModel = Model | FusionModel


def build_model(
    stats: Statistics, spec: ModelSpec, target: str | None = None, lazy: bool = False
) -> DecisionModel:
    """A model of `spec` on `stats` (the fusion for variant "fusion", which needs a target)."""
    if spec.variant != FUSION:
        return Model.build(stats, spec, target, lazy=lazy)
    if target is None:
        raise ValueError("fusion is a two-class model: give a target class")
    return FusionModel.build(stats, target, lazy=lazy)


def with_weights(model: DecisionModel, weights: Sequence[float] | None) -> DecisionModel:
    """`model` combining with the weights of a threshold version; a single model has none."""
    return model.with_weights(weights) if isinstance(model, FusionModel) else model


def component_scores(scores: Scores | FusedScores) -> FloatArray | None:
    """(n, k) component scores of a fusion's batch, None for a single model's."""
    return scores.components if isinstance(scores, FusedScores) else None
