"""The consume loop both roles share: poll a batch → process it → commit its offsets.

`process` publishes or stores everything the batch causes before returning; only then are the
offsets committed (at-least-once, docs/architecture.md, "Reliability contract"). A `Retry` from `process`
(store or broker unavailable) rewinds the consumer to the batch's first offsets and backs off,
so the batch is read and processed again — its effects are idempotent. A stop request is
honoured between batches: the in-flight batch is finished, flushed and committed first.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, NotRequired, TypedDict

from kafka import TopicPartition
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata
from structlog.typing import FilteringBoundLogger

from filterd.daemon.guard import DeadLetterGuard
from filterd.kafka.consumer import Batch, ConsumedRecord, Consumer, subscribed_consumer
from filterd.kafka.producer import PublishError
from filterd.kafka.publisher import Publishing, dead_letter_of
from filterd.kafka.settings import CONSUMER_DEFAULTS
from filterd.observe.health import Health
from filterd.observe.metrics import Metrics
from filterd.service.records import DeadLetter, encode

POLL_TIMEOUT_MS = 500
BACKOFF_FIRST, BACKOFF_MAX = 0.2, 5.0
CLOSE_TIMEOUT_MS = 5000  # a broker in the middle of a rebalance must not hold a shutdown for long


class Retry(RuntimeError):
    """The batch could not be completed now (store or broker unavailable); read it again."""


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


class Loop:
    """One consumer group member: subclasses define `role`, `topic`, `group` and `process`."""

    role = "loop"
    consumer_defaults: dict[str, Any] = CONSUMER_DEFAULTS  # under the [kafka] settings

    def __init__(self, kafka: Mapping[str, Any], topic: str, group: str, max_records: int,
                 publisher: Publishing, guard: DeadLetterGuard, dead_letter_topic: str,
                 payload_limit: int, metrics: Metrics, health: Health, log: FilteringBoundLogger,
                 connect: Callable[[], Consumer] | None = None) -> None:  # fmt: skip
        """`connect` makes the consumer (default: one subscribed to `topic` in `group` through
        the `kafka` settings); KafkaError from it is an unreachable broker, retried."""
        self.kafka, self.topic, self.group, self.max_records = kafka, topic, group, max_records
        self.publisher, self.guard = publisher, guard
        self.dead_letter_topic, self.payload_limit = dead_letter_topic, payload_limit
        self.metrics, self.health = metrics, health
        self.log = log.bind(role=self.role)
        self.connect = connect or self._subscribe
        self.batches = 0
        self._last_summary = 0.0
        self._summary: dict[str, int] = {}
        # partition → offset committed asynchronously, not yet confirmed
        self._uncommitted: dict[TopicPartition, OffsetAndMetadata] = {}

    def process(self, batch: Batch) -> dict[str, int]:
        """Handle one batch completely (or raise Retry); returns counts for the batch summary."""
        raise NotImplementedError

    def on_idle(self) -> None:
        """Called between polls (model sync and threshold reload in the scorer)."""

    def run(self, stop: threading.Event) -> None:
        self.health.register_loop(self.role, stall_seconds=60.0)
        consumer = self._connect(stop)
        if consumer is None:
            self.health.unregister_loop(self.role)
            return
        backoff = BACKOFF_FIRST
        try:
            while not stop.is_set():
                self.health.beat(self.role)
                self.on_idle()
                batch = Batch.poll(consumer, POLL_TIMEOUT_MS, self.max_records)
                if not batch:
                    continue
                started = time.perf_counter()
                try:
                    counts = self.process(batch)
                except Retry as error:
                    batch.rewind(consumer)
                    self.log.warning("batch not completed, will read it again", error=str(error),
                                     backoff_seconds=backoff, **_position(batch))  # fmt: skip
                    stop.wait(backoff)
                    backoff = min(2 * backoff, BACKOFF_MAX)
                    continue
                backoff = BACKOFF_FIRST
                self._commit(batch, consumer)
                self.metrics.batch_seconds.labels(role=self.role).observe(
                    time.perf_counter() - started
                )
                self._summarize(counts)
        finally:
            self.health.unregister_loop(self.role)
            self._close(consumer)

    def _connect(self, stop: threading.Event) -> Consumer | None:
        """The consumer, once the brokers answer (None if stopped before): an unreachable broker at
        start-up is an outage like any other, retried with back-off."""
        delay, condition = BACKOFF_FIRST, f"{self.role} broker"
        while not stop.is_set():
            self.health.beat(self.role)
            try:
                consumer = self.connect()
            except KafkaError as error:
                self.health.set_ready(condition, False, str(error))
                self.log.warning("broker unreachable, retrying", bootstrap_servers=self.kafka.get("bootstrap_servers"),
                                 error=str(error), retry_seconds=delay)  # fmt: skip
                stop.wait(delay)
                delay = min(2 * delay, BACKOFF_MAX)
                continue
            self.health.set_ready(condition, True)
            return consumer
        return None

    def _subscribe(self) -> Consumer:
        return subscribed_consumer(self.kafka, self.topic, self.group, self.max_records, self.log,
                                   self.consumer_defaults)  # fmt: skip

    def _commit(self, batch: Batch, consumer: Consumer) -> None:
        """Commit without waiting: the batch's effects are durable already, so a commit that is
        lost only means reading the batch again. The last one is committed synchronously on close."""
        offsets = batch.offsets()
        self._uncommitted.update(offsets)
        consumer.commit_async(offsets, callback=self._committed)

    def _committed(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        result: Mapping[TopicPartition, OffsetAndMetadata] | Exception,
    ) -> None:
        if isinstance(result, Exception):
            # e.g. the partitions moved to another member, which reads the batch again: its
            # effects are idempotent, so this costs duplicates, not losses
            self.log.warning("offsets not committed", error=repr(result),
                             partitions=sorted(tp.partition for tp in offsets))  # fmt: skip
        else:
            for tp, offset in offsets.items():
                if self._uncommitted.get(tp) == offset:
                    del self._uncommitted[tp]

    def _close(self, consumer: Consumer) -> None:
        try:
            self.publisher.close()
        except KafkaError as error:
            self.log.warning("producer did not close cleanly", error=repr(error))
        assigned = consumer.assignment()
        pending = {tp: offset for tp, offset in self._uncommitted.items() if tp in assigned}
        if pending:
            try:
                consumer.commit(pending, timeout_ms=CLOSE_TIMEOUT_MS)
            except KafkaError as error:
                self.log.warning("last offsets not committed", error=repr(error))
        consumer.close(autocommit=False, timeout_ms=CLOSE_TIMEOUT_MS)
        self.log.info("stopped", batches=self.batches)

    def dead_letter(self, record: ConsumedRecord, reason: str, error: str) -> DeadLetter:
        """Send `record` to the dead-letter topic (delivered at the next flush)."""
        letter = dead_letter_of(record, reason, error, self.payload_limit)
        self.publisher.send(self.dead_letter_topic, None, encode(letter))
        self.metrics.dead_letters.labels(reason=reason, topic=record.topic).inc()
        self.log.warning("dead-lettered", reason=reason, error=error[:300], topic=record.topic,
                         partition=record.partition, offset=record.offset)  # fmt: skip
        return letter

    def flush(self) -> None:
        try:
            self.publisher.flush()
        except PublishError as error:
            raise Retry(str(error)) from None

    def _summarize(self, counts: dict[str, int], every: float = 10.0) -> None:
        """One log line per `every` seconds at most, with the counts since the last one."""
        self.batches += 1
        for key, value in counts.items():
            self._summary[key] = self._summary.get(key, 0) + value
        now = time.monotonic()
        if now - self._last_summary >= every:
            self.log.info("batches", batches=self.batches, **self._summary)
            self._last_summary, self._summary = now, {}


def _position(batch: Batch) -> dict[str, Any]:
    first = batch.records[0]
    return {
        "topic": first.topic,
        "partition": first.partition,
        "offset": first.offset,
        "records": len(batch),
    }
