"""Publishing what a batch caused: decisions and dead letters, delivered together at `flush()`."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from kafka import KafkaProducer
from kafka.errors import KafkaError

from filterd.kafka.consumer import ConsumedRecord
from filterd.kafka.producer import BatchProducer, NotSent, PublishError
from filterd.kafka.settings import client_settings
from filterd.service.records import DeadLetter


class Publishing(Protocol):
    """What the loops use to publish: `Publisher`, or `filterd.kafka.memory.MemoryPublisher` in
    tests of loop logic. `flush` delivers everything sent since the last flush or raises
    PublishError, having delivered none of it (`ConfluentPublisher`: possibly some of it)."""

    def send(self, topic: str, key: str | None, value: bytes) -> None: ...
    def send_keyed(self, topic: str, records: Sequence[tuple[str, bytes]]) -> None: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


class Collecting:
    """The records sent since the last flush, as (topic, key, value) with the keys encoded."""

    def __init__(self) -> None:
        self._pending: list[tuple[str, bytes | None, bytes]] = []

    def send(self, topic: str, key: str | None, value: bytes) -> None:
        self._pending.append(
            (topic, None if key is None else key.encode("utf-8", "surrogatepass"), value)
        )

    def send_keyed(self, topic: str, records: Sequence[tuple[str, bytes]]) -> None:
        """`send` each (key, value)."""
        self._pending += [
            (topic, key.encode("utf-8", "surrogatepass"), value) for key, value in records
        ]


class Publisher(Collecting):
    """Collects records and delivers them at `flush()`, in one `BatchProducer.publish` call;
    its client is recreated after a failure, which may have left a connection broken.

    A flush gives up after `timeout` seconds, or `stop_grace` seconds after `stop` is set."""

    def __init__(
        self,
        kafka: Mapping[str, Any],
        timeout: float = 30.0,
        stop: threading.Event | None = None,
        stop_grace: float = 0.0,
    ) -> None:
        super().__init__()
        self.settings = client_settings(kafka, KafkaProducer)
        self.timeout, self.stop, self.stop_grace = timeout, stop, stop_grace
        # created here, so that settings it cannot use stop the start-up (it connects when used)
        self._producer: BatchProducer | None = BatchProducer(self.settings)

    def flush(self, timeout: float | None = None, probe: bool = False) -> None:
        """Deliver every record sent since the last flush, or raise PublishError (they are then
        dropped: the caller sends its batch again); NotSent if none was sent. `timeout`
        replaces the publisher's own for this flush; `probe`: see `BatchProducer.publish`."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        seconds = self.timeout if timeout is None else timeout
        try:
            if self._producer is None:
                self._producer = BatchProducer(self.settings)
            self._producer.publish(pending, seconds, self.stop, self.stop_grace, probe)
        except (KafkaError, PublishError) as error:
            self.reset()
            kind = NotSent if isinstance(error, NotSent) else PublishError
            raise kind(f"{len(pending)} records not delivered: {error}") from None

    def reset(self) -> None:
        if self._producer is not None:
            # a broken client may fail to close; it is dropped anyway
            with contextlib.suppress(Exception):
                self._producer.close()
        self._producer, self._pending = None, []

    def close(self) -> None:
        if self._producer is not None:
            self._producer.close()
            self._producer = None


def publisher_of(
    kafka: Mapping[str, Any],
    timeout: float = 30.0,
    stop: threading.Event | None = None,
    stop_grace: float = 0.0,
) -> Publishing:
    """The publisher of the `[kafka]` client: `Publisher` (kafka-python), or
    `filterd.kafka.confluent.ConfluentPublisher` when `client = "confluent"` (a flush that fails
    may have delivered part of the batch there)."""
    if kafka.get("client") == "confluent":
        from filterd.kafka.confluent import ConfluentPublisher  # an optional dependency

        return ConfluentPublisher(kafka, timeout, stop, stop_grace)
    return Publisher(kafka, timeout, stop, stop_grace)


def dead_letter_of(
    record: ConsumedRecord, reason: str, error: str, payload_limit: int
) -> DeadLetter:
    """The dead-letter record of a consumed Kafka record."""
    payload = record.value or b""
    return DeadLetter(
        source_topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        error=error,
        reason=reason,
        payload=payload[:payload_limit].decode("utf-8", "replace"),
        payload_truncated=len(payload) > payload_limit,
        failed_at=datetime.now(UTC),
    )
