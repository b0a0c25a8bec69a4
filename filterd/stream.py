"""Kafka through kafka-python: clients from the `[kafka]` settings, batches, publishing.

The loops built on this keep one rule (DESIGN.md "Reliability contract"): a batch's offsets
are committed only after everything it caused is in a topic or the store. When that fails,
the consumer is rewound to the batch's first offsets and the batch is read again, so a retry
never skips a record and never needs the consumer to stay out of `poll()` for long.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import structlog
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.errors import KafkaError, TopicAlreadyExistsError, for_code
from kafka.structs import OffsetAndMetadata

from filterd.produce import BatchProducer, PublishError
from filterd.records import DeadLetter

# Our choices where kafka-python's defaults do not suit a filter; `[kafka]` settings override them.
PRODUCER_DEFAULTS = {
    "acks": "all",
    "batch_size": 256 * 1024,  # bytes of one record batch: a poll's decisions per partition in one
}
CONSUMER_DEFAULTS = {
    "auto_offset_reset": "earliest",
    "enable_auto_commit": False,
    # Some Kafka-protocol brokers (Tansu) hold an empty fetch for the whole wait even when
    # records arrive meanwhile; a short wait keeps the decision latency low at low rates.
    "fetch_max_wait_ms": 20,
}


# The learner: feedback has no latency target, and each empty fetch cycle costs kafka-python
# ~1–2 ms of CPU; with 20 ms an idle learner thread took 0.04–0.07 core (and the broker 0.02)
# from the scorer beside it (`--role all`), with 500 ms (kafka-python's default) almost none.
LEARNER_CONSUMER_DEFAULTS = {**CONSUMER_DEFAULTS, "fetch_max_wait_ms": 500}


def client_settings(kafka: Mapping[str, Any], client: type,
                    defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """The `[kafka]` settings `client` (KafkaConsumer, KafkaProducer, KafkaAdminClient) knows, over
    `defaults` (by default ours for that client)."""
    if defaults is None:
        defaults = {KafkaProducer: PRODUCER_DEFAULTS, KafkaConsumer: CONSUMER_DEFAULTS}.get(client, {})
    known = client.DEFAULT_CONFIG
    return {**defaults, **{k: v for k, v in kafka.items() if k in known}}


def consumer(kafka: Mapping[str, Any], topic: str, group: str, max_poll_records: int,
             log: structlog.typing.FilteringBoundLogger,
             defaults: Mapping[str, Any] = CONSUMER_DEFAULTS) -> KafkaConsumer:  # fmt: skip
    """A consumer in `group` subscribed to `topic`, committing only when told to."""
    settings = client_settings(kafka, KafkaConsumer, defaults)
    settings.update(group_id=group, enable_auto_commit=False, max_poll_records=max_poll_records)
    client = KafkaConsumer(**settings)
    client.subscribe([topic], listener=_LoggingListener(log.bind(topic=topic, group=group)))
    return client


def create_topics(kafka: Mapping[str, Any], names: Iterable[str], partitions: int = 4,
                  replication_factor: int = 1) -> list[str]:  # fmt: skip
    """Create the topics of `names` that do not exist yet; returns those created, in order.
    Existing topics are left as they are, whatever their partition count."""
    names = list(dict.fromkeys(names))
    if not names:
        return []
    admin = KafkaAdminClient(**client_settings(kafka, KafkaAdminClient))
    try:
        spec = {"num_partitions": partitions, "replication_factor": replication_factor}
        response = admin.create_topics({name: dict(spec) for name in names}, raise_errors=False)
    finally:
        admin.close()
    created = set()
    for topic in response["topics"]:
        if topic["error_code"] == 0:
            created.add(topic["name"])
        elif topic["error_code"] != TopicAlreadyExistsError.errno:
            raise for_code(topic["error_code"])(f"creating topic {topic['name']!r}: {topic.get('error_message')}")
    return [name for name in names if name in created]


class _LoggingListener(ConsumerRebalanceListener):
    def __init__(self, log) -> None:
        self.log = log

    def on_partitions_assigned(self, assigned) -> None:
        self.log.info("partitions assigned", partitions=sorted(tp.partition for tp in assigned))

    def on_partitions_revoked(self, revoked) -> None:
        if revoked:
            self.log.info("partitions revoked", partitions=sorted(tp.partition for tp in revoked))


@dataclass
class Batch:
    """The records of one poll, in partition order, and how to commit or re-read them."""

    records: list
    polled_at: float = 0.0  # time.monotonic() when poll() returned them: where decision latency starts

    @classmethod
    def poll(cls, client: KafkaConsumer, timeout_ms: int, max_records: int) -> Batch:
        polled = client.poll(timeout_ms=timeout_ms, max_records=max_records)
        return cls([record for tp in sorted(polled) for record in polled[tp]], time.monotonic())

    def __len__(self) -> int:
        return len(self.records)

    def _bounds(self) -> dict[TopicPartition, tuple[int, int]]:
        bounds: dict[TopicPartition, tuple[int, int]] = {}
        for r in self.records:
            tp = TopicPartition(r.topic, r.partition)
            lo, hi = bounds.get(tp, (r.offset, r.offset))
            bounds[tp] = (min(lo, r.offset), max(hi, r.offset))
        return bounds

    def offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """The offsets to commit once this batch is done: after each partition's last record."""
        return {tp: OffsetAndMetadata(hi + 1, "", -1) for tp, (_, hi) in self._bounds().items()}

    def rewind(self, client: KafkaConsumer) -> None:
        """Make the next polls return this batch's records again (partitions still assigned)."""
        assigned = client.assignment()
        for tp, (lo, _) in self._bounds().items():
            if tp in assigned:
                client.seek(tp, lo)


class Publisher:
    """Collects records and delivers them at `flush()`, in one `BatchProducer.publish` call;
    its client is recreated after a failure, which may have left a connection broken."""

    def __init__(self, kafka: Mapping[str, Any], timeout: float = 30.0) -> None:
        self.settings = client_settings(kafka, KafkaProducer)
        self.timeout = timeout
        # created here, so that settings it cannot use stop the start-up (it connects when used)
        self._producer: BatchProducer | None = BatchProducer(self.settings)
        self._pending: list[tuple[str, bytes | None, bytes]] = []

    def send(self, topic: str, key: str | None, value: bytes) -> None:
        self._pending.append((topic, None if key is None else key.encode("utf-8", "surrogatepass"), value))

    def send_keyed(self, topic: str, records: Sequence[tuple[str, bytes]]) -> None:
        """`send` each (key, value)."""
        self._pending += [(topic, key.encode("utf-8", "surrogatepass"), value) for key, value in records]

    def flush(self) -> None:
        """Deliver every record sent since the last flush, or raise PublishError (they are then
        dropped: the caller sends its batch again)."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        try:
            if self._producer is None:
                self._producer = BatchProducer(self.settings)
            self._producer.publish(pending, self.timeout)
        except (KafkaError, PublishError) as error:
            self.reset()
            raise PublishError(f"{len(pending)} records not delivered: {error}") from None

    def reset(self) -> None:
        if self._producer is not None:
            try:
                self._producer.close()
            except Exception:  # noqa: BLE001 - a broken client may fail to close; it is dropped anyway
                pass
        self._producer, self._pending = None, []

    def close(self) -> None:
        if self._producer is not None:
            self._producer.close()
            self._producer = None


def dead_letter(record, reason: str, error: str, payload_limit: int) -> DeadLetter:
    """The dead-letter record of a consumed Kafka record."""
    payload = record.value or b""
    return DeadLetter(source_topic=record.topic, partition=record.partition, offset=record.offset,
                      error=error, reason=reason,
                      payload=payload[:payload_limit].decode("utf-8", "replace"),
                      payload_truncated=len(payload) > payload_limit,
                      failed_at=datetime.now(timezone.utc))  # fmt: skip
