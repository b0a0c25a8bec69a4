"""Robinson–Fisher's combination in log space: the χ² tails against exact arithmetic, and
scores that stay distinct where S − H rounds to ±1."""

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from scipy.stats import chi2

from filterd.bayes.model import _fisher, chi2_log_tails


def exact_log_tails(m: float, n: int) -> tuple[float, float]:
    """log Q and log C of χ² with 2n degrees of freedom at 2m, in 300-digit decimals: Q and C
    each summed from their own Poisson terms (C's until they no longer count)."""
    with localcontext() as ctx:
        ctx.prec = 300
        big = Decimal(m)
        q = (-big).exp() * sum(big**k / math.factorial(k) for k in range(n))
        if m > n:
            return float(q.ln()), float((1 - q).ln())
        term = (-big).exp() * big**n / math.factorial(n)
        c, k = Decimal(0), n
        while term > c * Decimal(10) ** -60:
            c += term
            k += 1
            term = term * big / k
        return float(q.ln()), float(c.ln())


CASES = [
    (m, n)
    for n in (1, 2, 5, 30, 200)
    for m in (1e-6, 0.5, n / 3, n - 1.0, n, n + 5.0, 3.0 * n, 50.0 * n, 2000.0)
    if m > 0
]


@pytest.mark.parametrize(("m", "n"), CASES)
def test_the_tails_match_exact_arithmetic_at_both_ends(m: float, n: int) -> None:
    log_q, log_c = chi2_log_tails(np.array([m]), np.array([n]))
    exact_q, exact_c = exact_log_tails(m, n)
    assert log_q[0] == pytest.approx(exact_q, rel=1e-9, abs=1e-12)
    assert log_c[0] == pytest.approx(exact_c, rel=1e-9, abs=1e-12)


def test_the_tails_agree_with_scipy_where_it_does_not_underflow() -> None:
    rng = np.random.default_rng(0)
    n = rng.integers(1, 400, 500)
    m = n * rng.uniform(0.2, 3.0, 500)
    log_q, log_c = chi2_log_tails(m, n)
    usable = (chi2.sf(2 * m, 2 * n) > 1e-250) & (chi2.cdf(2 * m, 2 * n) > 1e-250)
    assert usable.sum() > 400
    assert np.allclose(log_q[usable], chi2.logsf(2 * m[usable], 2 * n[usable]), rtol=1e-8)
    assert np.allclose(log_c[usable], chi2.logcdf(2 * m[usable], 2 * n[usable]), rtol=1e-8)


def direct_s_minus_h(f: np.ndarray) -> float:
    """SpamBayes' S − H for one document, from the χ² CDFs in linear space, as SpamBayes
    computes it (it rounds to ±1 on long documents)."""
    f = np.clip(f, 1e-12, 1 - 1e-12)
    s = chi2.cdf(-2 * np.log1p(-f).sum(), 2 * len(f))
    h = chi2.cdf(-2 * np.log(f).sum(), 2 * len(f))
    return float(s - h)


def test_long_documents_keep_distinct_scores_where_s_minus_h_saturates() -> None:
    rng = np.random.default_rng(1)
    docs = [rng.uniform(0.55, 0.99, size) for size in (300, 301, 400, 800)]  # four spammy mails
    docs += [1 - d for d in docs]  # and four hammy ones
    f = np.concatenate(docs)
    doc = np.repeat(np.arange(len(docs)), [len(d) for d in docs])
    scores = _fisher(f, doc, len(docs))
    decision = scores[:, 0] - scores[:, 1]
    direct = [direct_s_minus_h(d) for d in docs]
    assert set(direct) == {1.0, -1.0}  # all tied in linear space
    assert len(set(decision.tolist())) == len(docs)  # all distinct in log space
    assert np.all(np.sign(decision) == np.sign(direct))
    assert np.all(np.isfinite(decision))


def test_the_score_is_the_logit_of_p_where_s_minus_h_is_representable() -> None:
    """A strictly increasing function of S − H: logit((1 + S − H)/2), so decisions at a τ
    carried over by the same map are the same."""
    rng = np.random.default_rng(2)
    docs = [rng.uniform(0.05, 0.95, rng.integers(1, 12)) for _ in range(300)]
    f = np.concatenate(docs)
    doc = np.repeat(np.arange(len(docs)), [len(d) for d in docs])
    decision = (lambda s: s[:, 0] - s[:, 1])(_fisher(f, doc, len(docs)))
    direct = np.array([direct_s_minus_h(d) for d in docs])
    assert np.allclose(decision, np.log((1 + direct) / (1 - direct)), rtol=1e-7, atol=1e-9)


def test_a_document_without_clues_scores_zero() -> None:
    scores = _fisher(np.array([0.9, 0.8]), np.array([0, 0]), 2)
    assert scores[1].tolist() == [0.0, 0.0] and scores[0, 0] > 0
