"""An online logistic fusion of several estimators that read the same statistics.

Each component c scores a message with its decision score s_c(x) (log-odds for the linear
estimators and Robinson–Fisher). The fusion's score is

    z(x) = w_0 + Σ_c w_c · g(s_c(x)),      g(s) = sign(s) · log(1 + |s|)

(g compresses the log-odds of long e-mails, which run to the hundreds, while keeping their
order). The weights are learned from labelled messages in arrival order by online logistic
regression, one gradient step per message (Lynam & Cormack, SIGIR 2006):

    w ← w + η (y − σ(w·x)) x,      x = (1, g(s_1), …, g(s_k)),   y ∈ {0, 1}

`window_weights` is one such pass from w = 0 over a window of rows, so the weights are a
function of the stored (component scores, label) rows: a relabel is exact — correct the row.
"""

from __future__ import annotations

import numpy as np

from filterd.bayes.arrays import BoolArray, FloatArray
from filterd.bayes.model import DEFAULT_SPEC, ModelSpec
from filterd.bayes.selection import Selection

RATE = 0.02

# Diverse views of the same statistics (bench/fusion.py, docs/benchmarks.md): Robinson–Fisher
# with fewer or more clues and other prior strengths, SpamBayes' 15 strongest clues, and PNBC.
COMPONENTS: tuple[ModelSpec, ...] = (
    DEFAULT_SPEC,
    ModelSpec("robinson_fisher", {"s": 0.025, "x": 0.52}, Selection.parse("local:1000000:alo:0.1")),
    ModelSpec("robinson_fisher", {"s": 0.1, "x": 0.5}, Selection.parse("local:1000000:alo:0.3")),
    ModelSpec("robinson_fisher", {"s": 0.45, "x": 0.5}, Selection.parse("local:15:alo")),
    ModelSpec("pnbc", selection=Selection.parse("local:6:alo")),
)


def features(scores: FloatArray) -> FloatArray:
    """(n, 1 + k): a bias column and g(s) of the (n, k) component scores.

    >>> features(np.array([[0.0, -(np.e - 1)]])).tolist()
    [[1.0, 0.0, -1.0]]
    """
    scores = np.asarray(scores, dtype=np.float64)
    compressed = np.sign(scores) * np.log1p(np.abs(scores))
    return np.column_stack([np.ones(len(scores)), compressed])


def _step(w: FloatArray, x: FloatArray, y: bool, rate: float) -> None:
    z = float(x @ w)
    p = 0.5 * (1.0 + np.tanh(z / 2.0))  # σ(z) without overflow
    w += rate * (float(y) - p) * x


def online_fusion(x: FloatArray, y: BoolArray, rate: float = RATE) -> FloatArray:
    """(n,) z of each row with the weights learned from the rows before it (prequential)."""
    w = np.zeros(x.shape[1])
    out = np.zeros(len(y))
    for t in range(len(y)):
        out[t] = float(x[t] @ w)
        _step(w, x[t], bool(y[t]), rate)
    return out


def window_weights(x: FloatArray, y: BoolArray, rate: float = RATE) -> FloatArray:
    """The weights of one pass from w = 0 over the rows in order.

    >>> x = features(np.array([[3.0], [-2.0]] * 200))
    >>> w = window_weights(x, np.array([True, False] * 200))
    >>> bool(w[1] > 0)  # the component's score points the right way
    True
    """
    w = np.zeros(x.shape[1])
    for t in range(len(y)):
        _step(w, x[t], bool(y[t]), rate)
    return w
