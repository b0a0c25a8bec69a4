"""What a daemon's /metrics says: counters summed over labels, rates between scrapes, and its
latency histograms between two scrapes (quantiles, the share within the target, a table)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

# Each scrape of /metrics costs the daemon CPU (its HTTP thread renders every family), so scrapes
# are sparse (Prometheus scrapes every 15–60 s); rates below are taken between scrapes, so the
# interval costs no precision.
METRICS_EVERY = 0.5
TARGETS = {"throughput": 10_000, "p99_ms": 50.0, "learner": 5_000, "rss_mb": 500.0}

# every sample of one scrape, by (sample name, labels)
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
# (time.time(), samples) of the scrapes of a window
Scrapes = list[tuple[float, Samples]]


@dataclass(frozen=True)
class Batches:
    """The batches between two scrapes: cumulative counts by upper bound in seconds (the
    `filterd_batch_seconds` histogram), their count and their seconds in all."""

    buckets: dict[float, float]
    count: float
    seconds: float


def parse_samples(text: str) -> Samples:
    """The samples of a /metrics page (Prometheus' text format)."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def total(m: Samples, name: str, **labels: str) -> float:
    """The sum of the samples `name` whose labels include `labels`."""
    want = set(labels.items())
    return sum(v for (n, ls), v in m.items() if n == name and want <= ls)


def decided(m: Samples) -> float:
    return total(m, "filterd_messages_total", outcome="decided")


def feedback_done(m: Samples) -> float:
    """Feedback records done with: a parked one counts again with what it did once resolved."""
    return total(m, "filterd_feedback_total") - total(m, "filterd_feedback_total", outcome="parked")


def counted_rate(scrapes: Scrapes, count: Callable[[Samples], float], start: float) -> float:
    """Per second, the growth of `count(metrics)` from the scrape at time `start` to the last
    scrape before the final one. The final scrape came up to METRICS_EVERY after the work was
    done; every earlier one was taken while the daemon was still busy, so this rate has no such
    overshoot. Work done entirely between the scrape before `start` and the one at `start`
    (a run shorter than METRICS_EVERY) is rated over that interval: a lower bound.

    >>> busy = [(0.0, {"n": 0.0}), (0.5, {"n": 100.0}), (1.0, {"n": 300.0}), (1.5, {"n": 300.0})]
    >>> short = [(0.0, {"n": 0.0}), (0.5, {"n": 300.0}), (1.0, {"n": 300.0})]
    >>> counted_rate(busy, lambda m: m["n"], 0.5), counted_rate(short, lambda m: m["n"], 0.5)
    (400.0, 600.0)
    """
    window = [(t, count(m)) for t, m in scrapes if t >= start]
    (t0, c0), (t1, c1) = window[0], window[-2] if len(window) > 2 else window[-1]
    if c1 > c0:
        return (c1 - c0) / (t1 - t0)
    before = [(t, count(m)) for t, m in scrapes if t < start]
    if not before:
        return 0.0
    tb, cb = before[-1]
    return (c0 - cb) / (t0 - tb)


def histogram(m: Samples, role: str, name: str = "filterd_batch_seconds") -> dict[float, float]:
    """Cumulative bucket counts of histogram `name` (for `role` if it has that label), by upper
    bound."""
    out = {}
    for (sample, labels), value in m.items():
        d = dict(labels)
        if sample == f"{name}_bucket" and d.get("role", role) == role:
            out[float(d["le"])] = value
    return dict(sorted(out.items()))


def decision_latency(before: Samples, after: Samples) -> dict[str, float]:
    """The daemon's filterd_decision_latency_seconds between two snapshots: p50, p90, p99 in ms
    (interpolated inside a bucket, as Prometheus' histogram_quantile does), the share of
    decisions within the 50 ms target (a bucket bound: exact), the count and the mean."""
    b = histogram(before, "", "filterd_decision_latency_seconds")
    buckets = {
        le: v - b.get(le, 0.0)
        for le, v in histogram(after, "", "filterd_decision_latency_seconds").items()
    }
    count = buckets.get(float("inf"), 0.0)
    seconds = total(after, "filterd_decision_latency_seconds_sum") - total(
        before, "filterd_decision_latency_seconds_sum"
    )
    out = {f"p{q}": 1000 * bucket_quantile(buckets, q / 100) for q in (50, 90, 99)}
    target = TARGETS["p99_ms"] / 1000
    out |= {
        "within": buckets.get(target, 0.0) / max(count, 1),
        "count": count,
        "mean": 1000 * seconds / max(count, 1),
    }
    return out


def bucket_quantile(buckets: dict[float, float], q: float) -> float:
    """The q-quantile of cumulative histogram buckets (by upper bound), linear inside a bucket.

    >>> bucket_quantile({0.01: 50.0, 0.02: 100.0, float("inf"): 100.0}, 0.75)
    0.015
    """
    count = buckets.get(float("inf"), 0.0)
    rank, lower, below = q * count, 0.0, 0.0
    for le, cumulative in buckets.items():
        if cumulative >= rank and cumulative > below:
            if le == float("inf"):
                return lower  # beyond the last finite bound: its value is all that is known
            return lower + (le - lower) * (rank - below) / (cumulative - below)
        lower, below = le, cumulative
    return float("nan")


def histogram_delta(before: Samples, after: Samples, role: str) -> Batches:
    """The batches of `role` between two snapshots."""
    b, a = histogram(before, role), histogram(after, role)
    buckets = {le: a[le] - b.get(le, 0.0) for le in a}
    count = total(after, "filterd_batch_seconds_count", role=role) - total(
        before, "filterd_batch_seconds_count", role=role
    )
    seconds = total(after, "filterd_batch_seconds_sum", role=role) - total(
        before, "filterd_batch_seconds_sum", role=role
    )
    return Batches(buckets, count, seconds)


def histogram_lines(batches: Batches, records: float) -> list[str]:
    """`batches` as markdown: a summary line and a table of the non-empty buckets."""
    count = batches.count
    lines = [
        f"{count:,.0f} batches, {records / max(count, 1):,.0f} records/batch on average, "
        f"mean {1000 * batches.seconds / max(count, 1):.1f} ms per batch "
        "(poll returned → offsets committed)",
        "",
        "| batch seconds ≤ | batches | cumulative share |",
        "|---:|---:|---:|",
    ]
    previous = 0.0
    for le, cumulative in batches.buckets.items():
        if cumulative - previous or le == float("inf"):
            bound = "+Inf" if le == float("inf") else f"{le * 1000:g} ms"
            lines.append(
                f"| {bound} | {cumulative - previous:,.0f} | {cumulative / max(count, 1):.1%} |"
            )
        previous = cumulative
    return lines
