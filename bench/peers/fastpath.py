"""What a per-message fast path would give filterd's online protocol (a sketch, not filterd code).

    .venv/bin/python bench/peers/fastpath.py [--corpus sms-spam] [--repeats 3]

filterd's online replay builds a numpy model for every message (`Model.build(..., lazy=True)`):
about a hundred small numpy calls per message, whatever its size. This computes the same
Robinson–Fisher scores (s = 0.025, x = 0.52, every clue with |f − 0.5| ≥ 0.18) with plain
dictionaries of document frequencies, one message at a time, with filterd's own tokenizer,
and checks that the scores match filterd's (filterd.evaluate) before printing both speeds.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from scipy.special import chdtr

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
CORPORA = HERE.parents[2] / "shared" / "corpora"

S, X, MIN_STRENGTH = 0.025, 0.52, 0.18


def online_dicts(records, tokenizer) -> np.ndarray:
    df_spam: dict[str, int] = {}
    df_ham: dict[str, int] = {}
    d_spam = d_ham = 0
    scores = np.zeros(len(records))
    sx = S * X
    for i, r in enumerate(records):
        tokens = set(tokenizer(r.message()).tokens)
        if d_spam and d_ham:
            log_1mf = log_f = 0.0
            n = 0
            for t in tokens:
                a, b = df_spam.get(t, 0), df_ham.get(t, 0)
                if not (a or b):
                    continue
                rate_t, rate_o = a / d_spam, b / d_ham
                p = rate_t / (rate_t + rate_o)
                f = (sx + (a + b) * p) / (S + a + b)
                if abs(f - 0.5) >= MIN_STRENGTH:
                    f = min(max(f, 1e-12), 1 - 1e-12)
                    log_1mf += math.log1p(-f)
                    log_f += math.log(f)
                    n += 1
            if n:
                scores[i] = chdtr(2 * n, -2.0 * log_1mf) - chdtr(2 * n, -2.0 * log_f)
        target = df_spam if r.label == "spam" else df_ham
        for t in tokens:
            target[t] = target.get(t, 0) + 1
        if r.label == "spam":
            d_spam += 1
        else:
            d_ham += 1
    return scores


def main() -> None:
    from adapters import FILTERD_CANDIDATES
    from filterd import metrics
    from filterd.corpus import read_corpus
    from filterd.tokenize import Tokenizer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    reference = next(p for p in FILTERD_CANDIDATES if p.variant == "robinson_fisher")
    reference.warm()
    for name in args.corpus or ["sms-spam", "spamassassin"]:
        records = read_corpus(CORPORA / name / "messages.jsonl.gz")
        truth = np.array([r.label == "spam" for r in records])
        fast_times, filterd_times = [], []
        for _ in range(args.repeats):
            started = time.perf_counter()
            fast = online_dicts(records, Tokenizer())
            fast_times.append(time.perf_counter() - started)
            started = time.perf_counter()
            slow = reference.online_records(records)
            filterd_times.append(time.perf_counter() - started)
        same = np.allclose(fast, slow, atol=1e-9)
        print(f"{name}: dictionaries {len(records) / statistics.median(fast_times):,.0f} msg/s, "
              f"filterd online path {len(records) / statistics.median(filterd_times):,.0f} msg/s "
              f"(medians of {args.repeats}, tokenization included); scores equal: {same} "
              f"(max |Δ| {np.max(np.abs(fast - slow)):.2e}); (1−AUC)% {metrics.one_minus_auc_pct(fast, truth):.3f} "
              f"vs {metrics.one_minus_auc_pct(slow, truth):.3f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
