"""The daemon's Prometheus metrics, in a registry of its own (never the global default one)."""

from __future__ import annotations

import bisect
import threading

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import HistogramMetricFamily
from prometheus_client.registry import Collector

BATCH_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


# Fine around the 50 ms latency target, so that the share of decisions within it is exact.
LATENCY_BUCKETS = (
    0.001,
    0.002,
    0.003,
    0.004,
    0.005,
    0.0075,
    0.01,
    0.0125,
    0.015,
    0.0175,
    0.02,
    0.025,
    0.03,
    0.035,
    0.04,
    0.045,
    0.05,
    0.06,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)


MESSAGE_OUTCOMES = ("decided", "dead_lettered")


FEEDBACK_OUTCOMES = (
    "learned",
    "duplicate",
    "relabelled",
    "held_out",
    "kept_analyst_label",
    "dead_lettered",
    "parked",  # by id, its message not found yet: kept in the store and tried again
    "unresolved",  # parked for longer than feedback.resolve_ttl: dead-lettered
)


ROLES = ("scorer", "learner")


class WeightedHistogram(Collector):
    """A Prometheus histogram whose `observe` takes a count: the decisions of one batch share
    their latency, where prometheus_client's Histogram takes one call per observation."""

    def __init__(
        self, name: str, documentation: str, buckets: tuple[float, ...], registry: CollectorRegistry
    ) -> None:
        self.name, self.documentation = name, documentation
        self.bounds = (*buckets, float("inf"))
        self._counts = [0] * len(self.bounds)  # per bucket, not cumulative
        self._sum = 0.0
        self._lock = threading.Lock()
        registry.register(self)

    def observe(self, seconds: float, count: int = 1) -> None:
        """`count` observations of `seconds`."""
        if count <= 0:
            return
        bucket = bisect.bisect_left(self.bounds, seconds)  # the first bound ≥ seconds, as le= means
        with self._lock:
            self._counts[bucket] += count
            self._sum += seconds * count

    def collect(self) -> list[HistogramMetricFamily]:
        with self._lock:
            counts, total = list(self._counts), self._sum
        cumulative, buckets = 0, []
        for bound, count in zip(self.bounds, counts):
            cumulative += count
            buckets.append(("+Inf" if bound == float("inf") else repr(bound), cumulative))
        return [
            HistogramMetricFamily(self.name, self.documentation, buckets=buckets, sum_value=total)
        ]


class Metrics:
    """The daemon's Prometheus metrics, in a registry of its own (never the global default
    registry, so tests and several daemons in one process do not clash)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.messages = Counter(
            "filterd_messages",
            "Messages consumed from the messages topic, by outcome.",
            ["outcome"],
            registry=r,
        )
        self.decisions = Counter(
            "filterd_decisions",
            "Decisions published, by label and by what decided (model, list or rule).",
            ["label", "decided_by"],
            registry=r,
        )
        self.dead_letters = Counter(
            "filterd_dead_letters",
            "Records sent to the dead-letter topic, by reason and source topic.",
            ["reason", "topic"],
            registry=r,
        )
        self.feedback = Counter(
            "filterd_feedback", "Feedback records consumed, by outcome.", ["outcome"], registry=r
        )
        self.parked_feedback = Gauge(
            "filterd_parked_feedback",
            "Feedback records by id waiting for their message (counted at each retry round).",
            registry=r,
        )
        self.batch_seconds = Histogram(
            "filterd_batch_seconds",
            "Time to process one batch, by role.",
            ["role"],
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        self.decision_latency = WeightedHistogram(
            "filterd_decision_latency_seconds",
            "Per decision: from the poll() that returned its message to the broker's "
            "acknowledgement of the decision (the producer flush returned).",
            LATENCY_BUCKETS,
            r,
        )
        self.model_version = Gauge(
            "filterd_model_version", "Version of the model in use.", registry=r
        )
        self.threshold_version = Gauge(
            "filterd_threshold_version",
            "Version of the decision threshold in use (-1 when none).",
            registry=r,
        )
        self.model_staleness = Gauge(
            "filterd_model_staleness_seconds",
            "Seconds since the last successful sync with the model store.",
            registry=r,
        )
        self.not_ready = Gauge(
            "filterd_not_ready", "1 while the daemon is not ready, else 0.", registry=r
        )
        self.rolling_auc = Gauge(
            "filterd_rolling_auc",
            "AUC of the last drift.window feedback records, scored before learning.",
            registry=r,
        )
        self.rolling_recall = Gauge(
            "filterd_rolling_recall",
            "Target-class recall at the current threshold over that window.",
            registry=r,
        )
        self.target_recall = Gauge(
            "filterd_target_recall",
            "The recall target of the threshold in use (decision.target_recall until a threshold "
            "version is loaded): what filterd_rolling_recall is held to.",
            registry=r,
        )
        self.rolling_specificity = Gauge(
            "filterd_rolling_specificity",
            "Specificity at the current threshold over that window.",
            registry=r,
        )
        self.rolling_count = Gauge(
            "filterd_rolling_count", "Feedback records in that window.", registry=r
        )
        delivered = (
            "scope",
        )  # window: each record at the τ then in force; in_force: since it was written
        self.delivered_recall = Gauge(
            "filterd_delivered_recall",
            "Target-class recall the thresholds delivered on the feedback scored while they were "
            "in force (scope=window: the last drift.window records, each at the τ then in force; "
            "scope=in_force: since the τ in force was written).",
            delivered,
            registry=r,
        )
        self.delivered_specificity = Gauge(
            "filterd_delivered_specificity",
            "Specificity the thresholds delivered, in the same scopes.",
            delivered,
            registry=r,
        )
        self.delivered_positives = Gauge(
            "filterd_delivered_positives",
            "Target-class feedback records the delivered recall rests on, in the same scopes.",
            delivered,
            registry=r,
        )
        self.http_requests = Counter(
            "filterd_http_requests",
            "HTTP API requests answered, by route and status.",
            ["route", "status"],
            registry=r,
        )
        self.http_seconds = Histogram(
            "filterd_http_request_seconds",
            "HTTP API request time, from receipt to the end of the answer, by route.",
            ["route"],
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        self.consumer_lag = Gauge(
            "filterd_consumer_lag",
            "Records between the consumer's position and the partition's end offset, per "
            "partition held (updated every few seconds).",
            ["role", "topic", "partition"],
            registry=r,
        )
        self.undecodable_batches = Gauge(
            "filterd_undecodable_batches",
            "1 per partition held at a record batch this process cannot decode (a codec whose "
            "library is missing or unknown, a corrupt batch), until an operator skips it.",
            ["role", "topic", "partition"],
            registry=r,
        )
        self.store_errors = Counter(
            "filterd_store_errors",
            "Failed operations on the model store, by role.",
            ["role"],
            registry=r,
        )
        # Known label values start at 0 so that rate() and absence alerts see them from start-up.
        for outcome in MESSAGE_OUTCOMES:
            self.messages.labels(outcome=outcome)
        for outcome in FEEDBACK_OUTCOMES:
            self.feedback.labels(outcome=outcome)
        for role in ROLES:
            self.batch_seconds.labels(role=role)
        self.threshold_version.set(-1)
        self.not_ready.set(1)

    def render(self) -> bytes:
        """The metrics in the Prometheus text exposition format."""
        return prometheus_client.generate_latest(self.registry)
