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
from kafka.errors import BrokerResponseError, KafkaError, TopicAlreadyExistsError, for_code
from kafka.partitioner.default import DefaultPartitioner
from kafka.structs import OffsetAndMetadata

from filterd.partitioner import partitions_of
from filterd.records import DeadLetter

# Our choices where kafka-python's defaults do not suit a filter; `[kafka]` settings override them.
PRODUCER_DEFAULTS = {
    "acks": "all",
    "linger_ms": 5,
    "batch_size": 256 * 1024,
    # Decisions are idempotent by message id; kafka-python's idempotent producer fails every
    # send after a broker restart until it is recreated (DESIGN.md, measured pitfalls).
    "enable_idempotence": False,
}
CONSUMER_DEFAULTS = {
    "auto_offset_reset": "earliest",
    "enable_auto_commit": False,
    # Some Kafka-protocol brokers (Tansu) hold an empty fetch for the whole wait even when
    # records arrive meanwhile; a short wait keeps the decision latency low at low rates.
    "fetch_max_wait_ms": 20,
}


class PublishError(RuntimeError):
    """Records could not be delivered to the broker; the batch must be retried."""


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


def producer(kafka: Mapping[str, Any]) -> KafkaProducer:
    return KafkaProducer(**client_settings(kafka, KafkaProducer))


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
    """Sends records and confirms their delivery; recreated after a failure, because a
    kafka-python producer can stay broken after a broker restart."""

    def __init__(self, kafka: Mapping[str, Any], timeout: float = 30.0) -> None:
        self.kafka = kafka
        self.timeout = timeout
        self._producer: KafkaProducer | None = None
        self._pending: list = []

    def _client(self) -> KafkaProducer:
        if self._producer is None:
            self._producer = producer(self.kafka)
        return self._producer

    def send(self, topic: str, key: str | None, value: bytes) -> None:
        key_bytes = None if key is None else key.encode("utf-8", "surrogatepass")
        self._pending.append(self._client().send(topic, key=key_bytes, value=value))

    def send_keyed(self, topic: str, records: Sequence[tuple[str, bytes]]) -> None:
        """`send` each (key, value), with the partitions Kafka's default partitioner would choose
        computed for the whole batch (`filterd.partitioner`): kafka-python's per-record
        partitioning was half the cost of a send."""
        if not records:
            return
        client = self._client()
        keys = [key.encode("utf-8", "surrogatepass") for key, _ in records]
        partitions: Iterable[int | None] = [None] * len(keys)  # kafka-python partitions them
        if type(client.config["partitioner"]) is DefaultPartitioner:
            try:
                partitions = partitions_of(keys, client.partitions_for(topic))
            except BrokerResponseError:
                pass  # send() meets it again and reports it through the records' futures, as usual
        send, pending = client.send, self._pending
        for key, (_, value), partition in zip(keys, records, partitions):
            pending.append(send(topic, key=key, value=value, partition=partition))

    def flush(self) -> None:
        """Wait until every record sent is acknowledged, or raise PublishError."""
        pending, self._pending = self._pending, []
        if self._producer is None or not pending:
            return
        try:
            self._producer.flush(timeout=self.timeout)
            failed = [f.exception for f in pending if not f.succeeded()]
        except KafkaError as error:
            failed = [error]
        if failed:
            self.reset()
            raise PublishError(f"{len(failed)} of {len(pending)} records not delivered: {failed[0]!r}")

    def reset(self) -> None:
        if self._producer is not None:
            try:
                self._producer.close(timeout=1)
            except Exception:  # noqa: BLE001 - a broken producer may fail to close; it is dropped anyway
                pass
        self._producer, self._pending = None, []

    def close(self) -> None:
        if self._producer is not None:
            self._producer.close(timeout=self.timeout)
            self._producer = None


def dead_letter(record, reason: str, error: str, payload_limit: int) -> DeadLetter:
    """The dead-letter record of a consumed Kafka record."""
    payload = record.value or b""
    return DeadLetter(source_topic=record.topic, partition=record.partition, offset=record.offset,
                      error=error, reason=reason,
                      payload=payload[:payload_limit].decode("utf-8", "replace"),
                      payload_truncated=len(payload) > payload_limit,
                      failed_at=datetime.now(timezone.utc))  # fmt: skip
