"""Feature selection (Kołcz): token strength, and which tokens of a document count.

Strength is computed on a target-vs-rest view (row 0 the target t, row 1 its complement t̄):
    ALO  |W_mnb[t,w] − W_mnb[t̄,w]|                                absolute log odds
    MI   Σ_{e∈{0,1}, k∈{t,t̄}} p(e,k) log(p(e,k) / (p(e)p(k)))     token presence e vs class
    OR   log( P(w|t)(1−P(w|t̄)) / ((1−P(w|t))P(w|t̄)) )           P(w|c) = (DF[c,w]+1)/(D_c+2)
OR is signed, as Kołcz uses it: it prefers the tokens that predict the target class, so a
document keeps its most target-like evidence (ALO and MI are symmetric).
Unknown tokens have strength −∞ and are never selected.

Selections:
    none          every known token of the document
    local:N       NB-LOC: per document, its N strongest distinct tokens (optionally ≥ a minimum)
    global:N      NB-GLB: the N strongest tokens of the vocabulary, for every document
    ir            NB-IR: every known token, weighted i_w/‖i‖₂ with i_w = log(D/DF[w])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeGuard

import numpy as np

from filterd.bayes.arrays import BoolArray, FloatArray, Int64Array
from filterd.bayes.estimators import mnb
from filterd.bayes.statistics import Counts

c_local_top: Callable[[Int64Array, FloatArray, Int64Array, int, float], bytearray | None] | None
try:  # the per-document ranking in C, built where a compiler was at hand (setup.py)
    from filterd._speedups import local_top as c_local_top
except ImportError:  # pragma: no cover - depends on the build
    c_local_top = None

Ranking = Literal["alo", "mi", "or"]
RANKINGS: tuple[Ranking, ...] = ("alo", "mi", "or")
STRENGTH_DECIMALS = 9  # strengths are compared rounded to this many decimals (compile_weights)


def _is_ranking(name: str) -> TypeGuard[Ranking]:
    return name in RANKINGS


def strength(c: Counts, ranking: Ranking = "alo") -> FloatArray:
    """(V,) strength of each token for separating row 0 (target) from row 1 (the rest)."""
    if len(c.labels) != 2:
        raise ValueError("token strength needs a target-vs-rest view (Counts.binary)")
    if ranking == "alo":
        W = mnb(c).W
        s = np.abs(W[0] - W[1])
    elif ranking == "mi":
        s = _mutual_information(c.DF, c.D)
    elif ranking == "or":
        p_t = (c.DF[0] + 1) / (c.D[0] + 2)
        p_o = (c.DF[1] + 1) / (c.D[1] + 2)
        s = np.log(p_t) + np.log1p(-p_o) - np.log1p(-p_t) - np.log(p_o)
    else:
        raise ValueError(f"ranking must be one of {', '.join(RANKINGS)}, not {ranking!r}")
    return np.where(c.known, s, -np.inf)


def _mutual_information(DF: FloatArray, D: FloatArray) -> FloatArray:
    total = D.sum(axis=0)
    cells = np.stack([DF, D - DF])  # (presence, class, token) counts
    p = cells / total
    p_presence = p.sum(axis=1, keepdims=True)
    p_class = p.sum(axis=0, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p / (p_presence * p_class)), 0.0)
    information: FloatArray = terms.sum(axis=(0, 1))
    return information


@dataclass(frozen=True)
class Selection:
    kind: Literal["none", "local", "global", "ir"] = "none"
    n: int = 0
    ranking: Ranking = "alo"
    min_strength: float = 0.0

    @classmethod
    def parse(cls, spec: str) -> Selection:
        """'none' | 'ir' | 'local:N[:alo|mi|or[:MIN]]' | 'global:N[:alo|mi|or]'."""
        parts = spec.strip().lower().split(":")
        kind = parts[0]
        if kind in ("none", "ir") and len(parts) == 1:
            return cls("none" if kind == "none" else "ir")
        if kind not in ("local", "global") or not 2 <= len(parts) <= (4 if kind == "local" else 3):
            raise ValueError(
                f"bad selection {spec!r}: use none, ir, local:N[:alo|mi|or[:MIN]] "
                "or global:N[:alo|mi|or]"
            )
        try:
            n = int(parts[1])
            min_strength = float(parts[3]) if len(parts) == 4 else 0.0
        except ValueError:
            raise ValueError(
                f"bad selection {spec!r}: N must be an integer and MIN a number"
            ) from None
        ranking = parts[2] if len(parts) >= 3 else "alo"
        if n < 1:
            raise ValueError(f"bad selection {spec!r}: N must be at least 1")
        if not _is_ranking(ranking):
            raise ValueError(
                f"bad selection {spec!r}: ranking must be one of {', '.join(RANKINGS)}"
            )
        return cls("local" if kind == "local" else "global", n, ranking, min_strength)

    def __str__(self) -> str:
        if self.kind in ("none", "ir"):
            return self.kind
        tail = f":{self.min_strength:g}" if self.min_strength else ""
        return f"{self.kind}:{self.n}:{self.ranking}{tail}"


def local_top(
    doc: Int64Array, strength: FloatArray, tiebreak: Int64Array, n: int, min_strength: float = 0.0
) -> Int64Array:
    """Entries to keep: per document, its `n` strongest entries with strength ≥ `min_strength`,
    in ascending order.

    `doc` (sorted or not) names each entry's document; ties are broken by `tiebreak`
    (token keys, so that the choice does not depend on token order or vocabulary ids).
    With filterd._speedups and `doc` in order (as the scorer's are), one C loop over the
    documents; otherwise `local_top_python`, its reference.

    >>> local_top(np.array([0, 0, 0, 1]), np.array([0.2, 0.9, 0.5, 0.1]), np.arange(4), 2)
    array([1, 2, 3])
    """
    if c_local_top is not None:
        kept = c_local_top(
            np.ascontiguousarray(doc, dtype=np.int64),
            np.ascontiguousarray(strength, dtype=np.float64),
            np.ascontiguousarray(tiebreak, dtype=np.int64),
            n,
            min_strength,
        )
        if kept is not None:
            return np.frombuffer(kept, dtype=np.int64)
    return local_top_python(doc, strength, tiebreak, n, min_strength)


def local_top_python(
    doc: Int64Array, strength: FloatArray, tiebreak: Int64Array, n: int, min_strength: float = 0.0
) -> Int64Array:
    """`local_top` in numpy: every input, and the reference of the C loop."""
    if len(doc) <= n or np.bincount(doc).max(initial=0) <= n:
        # no document has more than n entries (the default's N is a million): no ranking needed,
        # and sorting by strength was the costliest step of scoring long e-mails
        return np.flatnonzero(strength >= min_strength)
    order = np.lexsort((tiebreak, -strength, doc))
    sorted_doc = doc[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = sorted_doc[1:] != sorted_doc[:-1]
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))
    rank = np.arange(len(order)) - group_start
    keep = order[(rank < n) & (strength[order] >= min_strength)]
    keep.sort()
    return keep


def global_top(strength: FloatArray, tiebreak: Int64Array, n: int) -> BoolArray:
    """(V,) mask of the `n` strongest known tokens of the vocabulary (ties broken by `tiebreak`)."""
    mask = np.zeros(len(strength), dtype=bool)
    candidates = np.flatnonzero(np.isfinite(strength))
    order = np.lexsort((tiebreak[candidates], -strength[candidates]))
    mask[candidates[order[:n]]] = True
    return mask
