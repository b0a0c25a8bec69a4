"""The daemon's side of the consume loop (`filterd.kafka.processor.Processor`, which owns poll →
process → commit only what is durable): `Loop`, the base of the scorer's and the learner's
strategies, with what both do with a batch (dead letters), and `LoopHooks`, which reports the
processor's progress to the daemon's health check, metrics and log. Undecodable batches are
held by `filterd.daemon.stuck.StuckPartitions`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, NotRequired, TypedDict

from kafka import TopicPartition
from kafka.errors import KafkaError
from structlog.typing import FilteringBoundLogger

from filterd.daemon.guard import DeadLetterGuard
from filterd.daemon.stuck import StuckPartitions
from filterd.kafka.consumer import Batch, ConsumedRecord, Consumer
from filterd.kafka.processor import Processed, Processor
from filterd.kafka.publisher import Publishing, dead_letter_of
from filterd.kafka.settings import CONSUMER_DEFAULTS
from filterd.observe.health import Health
from filterd.observe.logs import Repeats
from filterd.observe.metrics import Metrics
from filterd.service.records import DeadLetter, encode
from filterd.store.handle import Store

STALL_SECONDS = 60.0  # without a beat: the health check says the loop is stalled


class LoopSettings(TypedDict):
    """What every loop is made with: the keyword arguments of `Loop` that subclasses pass on."""

    kafka: Mapping[str, Any]
    topic: str
    group: str
    max_records: int
    publisher: Publishing
    guard: DeadLetterGuard
    dead_letter_topic: str
    payload_limit: int
    metrics: Metrics
    health: Health
    log: FilteringBoundLogger
    connect: NotRequired[Callable[[], Consumer]]
    store: NotRequired[Store | None]


class LoopHooks:
    """`filterd.kafka.processor.Hooks` for one role: its beats and broker readiness in `health`,
    its lag and batch timings in `metrics`, its repeated warnings counted by `repeats`."""

    def __init__(
        self,
        role: str,
        health: Health,
        metrics: Metrics,
        repeats: Repeats,
        log: FilteringBoundLogger,
    ) -> None:
        self.role, self.health, self.metrics, self.repeats, self.log = (
            role,
            health,
            metrics,
            repeats,
            log,
        )
        self._lag_shown: set[TopicPartition] = set()  # partitions the lag gauge has a value for

    def started(self) -> None:
        self.health.register_loop(self.role, stall_seconds=STALL_SECONDS)

    def beat(self) -> None:
        self.health.beat(self.role)

    def stopped(self) -> None:
        self.health.unregister_loop(self.role)

    def reachable(self, error: Exception | None) -> None:
        self.health.set_ready(
            f"{self.role} broker", error is None, "" if error is None else str(error)
        )

    def warning(self, event: str, **fields: Any) -> None:
        self.repeats.warning(self.log, event, **fields)

    def flush_warnings(self, everything: bool = False) -> None:
        self.repeats.flush(everything=everything)

    def lag(self, lags: Mapping[TopicPartition, int]) -> None:
        for tp, lag in lags.items():
            self.metrics.consumer_lag.labels(
                role=self.role, topic=tp.topic, partition=str(tp.partition)
            ).set(lag)
        for tp in self._lag_shown - set(lags):  # no longer ours: another member reports it
            self.metrics.consumer_lag.remove(self.role, tp.topic, str(tp.partition))
        self._lag_shown = set(lags)

    def processed(self, seconds: float) -> None:
        self.metrics.batch_seconds.labels(role=self.role).observe(seconds)


class Loop:
    """One consumer group member of the daemon: subclasses define `role` and `process` (a
    `filterd.kafka.processor.Strategy`), which `processor` runs."""

    role = "loop"
    consumer_defaults: dict[str, Any] = CONSUMER_DEFAULTS  # under the [kafka] settings

    def __init__(
        self,
        kafka: Mapping[str, Any],
        topic: str,
        group: str,
        max_records: int,
        publisher: Publishing,
        guard: DeadLetterGuard,
        dead_letter_topic: str,
        payload_limit: int,
        metrics: Metrics,
        health: Health,
        log: FilteringBoundLogger,
        connect: Callable[[], Consumer] | None = None,
        store: Store | None = None,
    ) -> None:
        """`connect` makes the consumer (default: one subscribed to `topic` in `group` through
        the `kafka` settings); KafkaError from it is an unreachable broker, retried. `store`
        records the record batches the consumer cannot decode, and the skips operators ask for
        (`filterd.daemon.stuck`; None: such a batch holds its partition until a restart)."""
        self.kafka, self.max_records = kafka, max_records
        self.publisher, self.guard = publisher, guard
        self.dead_letter_topic, self.payload_limit = dead_letter_topic, payload_limit
        self.metrics, self.health = metrics, health
        self.log = log.bind(role=self.role)
        self.repeats = Repeats()
        self.stuck = StuckPartitions(self.role, group, kafka, store, metrics, health, self.log)
        self.processor = Processor(
            self,
            kafka,
            topic,
            group,
            max_records,
            LoopHooks(self.role, health, metrics, self.repeats, self.log),
            self.log,
            held=self.stuck,
            connect=connect,
            consumer_defaults=self.consumer_defaults,
        )

    @property
    def joined(self) -> bool:
        """The group gave this member its first assignment."""
        return self.processor.joined

    def run(self, stop: threading.Event) -> None:
        self.processor.run(stop)

    def process(self, batch: Batch) -> Processed:
        """Handle one batch completely, or hand what is left to something that completes it
        (`Processed.pending`), or raise Retry (or PublishError from `publisher.flush`)."""
        raise NotImplementedError

    def on_idle(self) -> None:
        """Called between polls (model sync and threshold reload in the scorer)."""

    def on_stop(self) -> None:
        """Called once the loop has stopped, before its consumer closes: release what it holds
        (subclasses first release their own), and close the publisher."""
        try:
            self.publisher.close()
        except KafkaError as error:
            self.log.warning("producer did not close cleanly", error=repr(error))

    def dead_letter(self, record: ConsumedRecord, reason: str, error: str) -> DeadLetter:
        """Send `record` to the dead-letter topic (delivered at the next flush)."""
        letter = dead_letter_of(record, reason, error, self.payload_limit)
        self.publisher.send(self.dead_letter_topic, None, encode(letter))
        self.metrics.dead_letters.labels(reason=reason, topic=record.topic).inc()
        self.repeats.warning(
            self.log,
            "dead-lettered",
            {"reason": reason, "topic": record.topic},
            error=error[:300],
            partition=record.partition,
            offset=record.offset,
        )
        return letter
