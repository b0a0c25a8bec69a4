"""librdkafka (confluent-kafka) behind filterd's `Consumer` and `Publishing` protocols, for
`[kafka] client = "confluent"`. Imported only when that client is chosen: confluent-kafka is an
optional dependency (`pip install 'filterd[confluent]'`).

The loops see what they see of kafka-python: kafka-python's `TopicPartition` and
`OffsetAndMetadata`, its `KafkaError` for every failure, and its `UnsupportedCodecError` /
`CorruptRecordError` out of `poll` for a batch librdkafka cannot decode, so that the
undecodable-batch handling (`filterd.daemon.stuck`) holds the partition as with kafka-python.

One difference: `ConfluentPublisher.flush` cannot deliver all or none. librdkafka sends each
record on its own and reports each delivery; a flush waits for every report and raises
PublishError if any failed, some records of the batch having been delivered. The loops send
the whole batch again, and what they publish is idempotent by message id (decisions, dead
letters), so the cost is duplicates in the topics, never a loss.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import confluent_kafka
from confluent_kafka import KafkaError as RdError
from kafka import OffsetAndMetadata, TopicPartition
from kafka.errors import CorruptRecordError, KafkaError, UnsupportedCodecError

from filterd.kafka.consumer import CommitCallback, RebalanceCallback
from filterd.kafka.producer import PublishError
from filterd.kafka.publisher import Collecting
from filterd.kafka.rdkafka_settings import librdkafka_settings
from filterd.kafka.settings import PRODUCER_DEFAULTS

# librdkafka's errors for a batch it cannot decode: they name the topic, partition and offset
UNDECODABLE = {
    RdError._BAD_COMPRESSION: UnsupportedCodecError,
    RdError._BAD_MSG: CorruptRecordError,
    RdError.INVALID_RECORD: CorruptRecordError,
    RdError.UNSUPPORTED_COMPRESSION_TYPE: UnsupportedCodecError,
}
# librdkafka's offset for "none known" (OFFSET_INVALID and the other logical offsets are < 0)
NO_OFFSET = 0


@dataclass(frozen=True, slots=True)
class ConfluentRecord:
    """A consumed record as filterd reads it (the fields of kafka-python's ConsumerRecord)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int  # ms since the epoch, as the producer or the broker set it (-1: none)


def _kafka_error(error: Any) -> KafkaError:
    """kafka-python's error for librdkafka's (a KafkaError object or a KafkaException)."""
    found = KafkaError(str(error))
    found.retriable = bool(getattr(error, "retriable", lambda: False)())
    return found


def _ours(tps: Sequence[Any]) -> set[TopicPartition]:
    return {TopicPartition(tp.topic, tp.partition) for tp in tps}


def _theirs(
    offsets: Mapping[TopicPartition, OffsetAndMetadata],
) -> list[confluent_kafka.TopicPartition]:
    return [
        confluent_kafka.TopicPartition(tp.topic, tp.partition, o.offset)
        for tp, o in offsets.items()
    ]


def _triples(offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> set[tuple[str, int, int]]:
    return {(tp.topic, tp.partition, o.offset) for tp, o in offsets.items()}


class ConfluentConsumer:
    """A librdkafka consumer in `group` subscribed to `topic`, committing only when told to."""

    def __init__(
        self,
        kafka: Mapping[str, Any],
        topic: str,
        group: str,
        max_poll_records: int,
        on_assigned: RebalanceCallback,
        on_revoked: RebalanceCallback,
        defaults: Mapping[str, Any],
    ) -> None:
        settings = librdkafka_settings({**defaults, **kafka}, "consumer")
        settings.update(
            {"group.id": group, "enable.auto.commit": False, "on_commit": self._on_commit}
        )
        # a corrupt batch is an error, as with kafka-python (librdkafka's default skips the check)
        settings.setdefault("check.crcs", True)
        self.max_poll_records = max_poll_records
        self.on_assigned, self.on_revoked = on_assigned, on_revoked
        self._client = confluent_kafka.Consumer(settings)
        # commit_async's offsets and callbacks, until librdkafka reports the commit
        self._commits: deque[tuple[Mapping[TopicPartition, OffsetAndMetadata], CommitCallback]] = (
            deque()
        )
        self._positions: dict[TopicPartition, int] = {}
        self._pending_error: KafkaError | None = None
        self._client.subscribe([topic], on_assign=self._assigned, on_revoke=self._revoked)

    def _assigned(self, client: Any, partitions: list[Any]) -> None:
        client.assign(partitions)  # before the callback, which may pause some
        self.on_assigned(_ours(partitions))

    def _revoked(self, client: Any, partitions: list[Any]) -> None:
        ours = _ours(partitions)
        for tp in ours:
            self._positions.pop(tp, None)
        self.on_revoked(ours)
        client.unassign()

    def poll(
        self, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConfluentRecord]]:
        """Up to `max_records` records, grouped by partition. A batch librdkafka cannot decode
        raises kafka-python's error for it, once the records polled with it were returned."""
        if self._pending_error is not None:
            error, self._pending_error = self._pending_error, None
            raise error
        # as kafka-python: return what has arrived as soon as anything has (librdkafka's
        # consume() would wait for a full batch or the whole timeout)
        first = self._client.poll(timeout_ms / 1000)
        wanted = (max_records or self.max_poll_records) - 1
        messages = (
            [] if first is None else [first, *(self._client.consume(wanted, 0) if wanted else [])]
        )
        out: dict[TopicPartition, list[ConfluentRecord]] = {}
        held: set[TopicPartition] = set()  # at a batch it cannot decode: nothing past it counts
        for m in messages:
            error = m.error()
            if error is not None:
                if error.fatal():
                    raise _kafka_error(error)
                kind = UNDECODABLE.get(error.code())
                if kind is None or m.topic() is None:
                    continue  # librdkafka recovers by itself (a broker down, a reconnection)
                tp, at = TopicPartition(m.topic(), m.partition()), m.offset() or 0
                held.add(tp)
                self.seek(tp, at)
                found = kind(
                    f"{error.str()} (topic {tp.topic}, partition {tp.partition}, offset {at})"
                )
                # the other partitions' messages after it are returned all the same:
                # librdkafka has moved past them
                self._pending_error = self._pending_error or found
                continue
            tp = TopicPartition(m.topic(), m.partition())
            if tp in held:
                continue
            _, timestamp = m.timestamp()
            out.setdefault(tp, []).append(
                ConfluentRecord(
                    tp.topic, tp.partition, m.offset() or 0, m.key(), m.value(), timestamp
                )
            )
        for tp, records in out.items():
            self._positions[tp] = records[-1].offset + 1
        if not out and self._pending_error is not None:
            error, self._pending_error = self._pending_error, None
            raise error
        return out

    def assignment(self) -> set[TopicPartition]:
        return _ours(self._client.assignment())

    def seek(self, partition: TopicPartition, offset: int) -> None:
        try:
            self._client.seek(
                confluent_kafka.TopicPartition(partition.topic, partition.partition, offset)
            )
        except confluent_kafka.KafkaException as error:
            raise _kafka_error(error) from None
        self._positions[partition] = offset

    def pause(self, *partitions: TopicPartition) -> None:
        self._client.pause(
            [confluent_kafka.TopicPartition(tp.topic, tp.partition) for tp in partitions]
        )

    def resume(self, *partitions: TopicPartition) -> None:
        self._client.resume(
            [confluent_kafka.TopicPartition(tp.topic, tp.partition) for tp in partitions]
        )

    def highwater(self, partition: TopicPartition) -> int | None:
        ctp = confluent_kafka.TopicPartition(partition.topic, partition.partition)
        try:
            _, high = self._client.get_watermark_offsets(ctp, cached=True)
        except confluent_kafka.KafkaException:
            return None
        return high if high >= NO_OFFSET else None

    def position(self, partition: TopicPartition, timeout_ms: int | None = None) -> int | None:
        if partition in self._positions:
            return self._positions[partition]
        ctp = confluent_kafka.TopicPartition(partition.topic, partition.partition)
        try:
            (found,) = self._client.position([ctp])
        except confluent_kafka.KafkaException as error:
            raise _kafka_error(error) from None
        if found.offset >= NO_OFFSET:
            return int(found.offset)
        if timeout_ms == 0:
            return None  # not known without asking the broker
        # nothing consumed yet: the group's committed offset is where reading starts
        try:
            (committed,) = self._client.committed([ctp], timeout=(timeout_ms or 5000) / 1000)
        except confluent_kafka.KafkaException as error:
            raise _kafka_error(error) from None
        return int(committed.offset) if committed.offset >= NO_OFFSET else None

    def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], timeout_ms: int | None = None
    ) -> None:
        try:
            done = self._client.commit(offsets=_theirs(offsets), asynchronous=False)
        except confluent_kafka.KafkaException as error:
            raise _kafka_error(error.args[0]) from None
        failed = [tp for tp in done or [] if tp.error is not None]
        if failed:
            raise _kafka_error(failed[0].error)

    def commit_async(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], callback: CommitCallback
    ) -> None:
        """Commit without waiting: `callback` is called from a later `poll`."""
        self._commits.append((offsets, callback))
        try:
            self._client.commit(offsets=_theirs(offsets), asynchronous=True)
        except confluent_kafka.KafkaException as error:
            self._commits.pop()
            callback(offsets, _kafka_error(error.args[0]))

    def _on_commit(self, error: Any, partitions: list[Any]) -> None:
        reported = {(tp.topic, tp.partition, tp.offset) for tp in partitions}
        found = [c for c in self._commits if reported == _triples(c[0])]
        if not found:
            return  # not an asynchronous commit's report
        self._commits.remove(found[0])
        offsets, callback = found[0]
        failed = [tp.error for tp in partitions if tp.error is not None]
        if error is not None or failed:
            callback(offsets, _kafka_error(error if error is not None else failed[0]))
        else:
            callback(offsets, offsets)

    def close(self, autocommit: bool = False, timeout_ms: int | None = None) -> None:
        self._client.close()


def subscribed_confluent_consumer(
    kafka: Mapping[str, Any],
    topic: str,
    group: str,
    max_poll_records: int,
    on_assigned: RebalanceCallback,
    on_revoked: RebalanceCallback,
    defaults: Mapping[str, Any],
) -> ConfluentConsumer:
    """`filterd.kafka.consumer.subscribed_consumer` with librdkafka."""
    try:
        return ConfluentConsumer(
            kafka, topic, group, max_poll_records, on_assigned, on_revoked, defaults
        )
    except confluent_kafka.KafkaException as error:
        raise _kafka_error(error.args[0]) from None


class _Deadline:
    """When a flush gives up: at `at`, or `grace` seconds after `stop` is seen set."""

    def __init__(self, at: float, stop: threading.Event | None, grace: float) -> None:
        self.at, self.stop, self.grace, self.stopping = at, stop, grace, False

    def check(self) -> None:
        now = time.monotonic()
        if not self.stopping and self.stop is not None and self.stop.is_set():
            self.stopping, self.at = True, min(self.at, now + self.grace)
        if now >= self.at:
            raise PublishError(
                "stopping" if self.stopping else "timed out waiting for delivery reports"
            )


class ConfluentPublisher(Collecting):
    """`filterd.kafka.publisher.Publisher` with librdkafka: collects records and delivers them at
    `flush()`, waiting for every delivery report. A flush gives up after `timeout` seconds, or
    `stop_grace` seconds after `stop` is set."""

    def __init__(
        self,
        kafka: Mapping[str, Any],
        timeout: float = 30.0,
        stop: threading.Event | None = None,
        stop_grace: float = 0.0,
    ) -> None:
        super().__init__()
        self.settings = librdkafka_settings({**PRODUCER_DEFAULTS, **kafka}, "producer")
        # keyed records go where kafka-python and the Java client put them, as filterd's readers
        # of decisions expect (filterd.kafka.partitioner); librdkafka's own default differs
        self.settings.setdefault("partitioner", "murmur2_random")
        self.timeout, self.stop, self.stop_grace = timeout, stop, stop_grace
        # created here, so that settings it cannot use stop the start-up
        self._producer: confluent_kafka.Producer | None = self._new()

    def _new(self) -> confluent_kafka.Producer:
        try:
            return confluent_kafka.Producer(self.settings)
        except confluent_kafka.KafkaException as error:
            raise _kafka_error(error.args[0]) from None

    def flush(self) -> None:
        """Deliver every record sent since the last flush, or raise PublishError (some of them
        may have been delivered: the caller sends its batch again)."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        failures: list[str] = []

        def delivered(error: Any, _message: Any) -> None:
            if error is not None:
                failures.append(str(error))

        deadline = _Deadline(time.monotonic() + self.timeout, self.stop, self.stop_grace)
        try:
            if self._producer is None:
                self._producer = self._new()
            producer = self._producer
            for topic, key, value in pending:
                while True:
                    try:
                        producer.produce(topic, value, key, on_delivery=delivered)
                        break
                    except BufferError:  # the client's queue is full: let it send
                        producer.poll(0.05)
                        deadline.check()
            while producer.flush(0.1) > 0:
                deadline.check()
            if failures:
                raise PublishError(failures[0])
        except (KafkaError, PublishError, confluent_kafka.KafkaException) as error:
            self.reset()
            raise PublishError(f"{len(pending)} records not all delivered: {error}") from None

    def reset(self) -> None:
        if self._producer is not None:
            # what is still queued would be delivered later, after the batch was sent again
            with contextlib.suppress(Exception):
                self._producer.purge()
                self._producer.flush(0)
        self._producer, self._pending = None, []

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(self.timeout)
            self._producer = None
