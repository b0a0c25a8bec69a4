"""Consuming in batches: a consumer that commits only when told to, and the batch of one poll.

The loops built on this keep one rule (docs/architecture.md, "Reliability contract"): a batch's
offsets are committed only after everything it caused is in a topic or the store. When that fails,
the consumer is rewound to the batch's first offsets and the batch is read again, so a retry
never skips a record and never needs the consumer to stay out of `poll()` for long.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kafka import ConsumerRebalanceListener, KafkaConsumer, OffsetAndMetadata, TopicPartition

from filterd.kafka.settings import CONSUMER_DEFAULTS, client_settings
from filterd.service.decide import Source


class ConsumedRecord(Source, Protocol):
    """What filterd reads of a consumed record: where it was read (`Source`) and its value;
    kafka-python's `ConsumerRecord`, or `filterd.kafka.memory.MemoryRecord`."""

    @property
    def value(self) -> bytes | None: ...


Offsets = Mapping[TopicPartition, OffsetAndMetadata]
# called with the offsets and, as its result, the same offsets or the error that lost them
CommitCallback = Callable[[Offsets, Offsets | Exception], None]


class Consumer(Protocol):
    """What the loops use of a consumer: kafka-python's `KafkaConsumer` or
    `filterd.kafka.confluent.ConfluentConsumer` (`subscribed_consumer`), or
    `filterd.kafka.memory.MemoryConsumer` in tests of loop logic."""

    def poll(
        self, timeout_ms: int = ..., max_records: int | None = ...
    ) -> Mapping[TopicPartition, Sequence[ConsumedRecord]]: ...
    def assignment(self) -> set[TopicPartition]: ...
    def seek(self, partition: TopicPartition, offset: int) -> None: ...
    def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], timeout_ms: int | None = ...
    ) -> None: ...
    def commit_async(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], callback: CommitCallback
    ) -> object: ...
    def close(self, autocommit: bool = ..., timeout_ms: int | None = ...) -> None: ...
    def highwater(self, partition: TopicPartition) -> int | None:
        """The partition's end offset as the last fetch reported it (None before one)."""

    def position(self, partition: TopicPartition, timeout_ms: int | None = ...) -> int | None:
        """The offset of the next record `poll` returns from the partition."""

    def pause(self, *partitions: TopicPartition) -> None:
        """Fetch nothing more of `partitions` until resumed (a rebalance that assigns one
        again resumes it)."""

    def resume(self, *partitions: TopicPartition) -> None: ...


# Called (in the thread that polls) with the partitions a rebalance assigns or revokes.
RebalanceCallback = Callable[[set[TopicPartition]], None]
# kafka-python waits this long for the brokers when a consumer is made (its default: 30 s);
# the caller retries, and a stop request is honoured only between attempts
BOOTSTRAP_TIMEOUT_MS = 2000


def subscribed_consumer(
    kafka: Mapping[str, Any],
    topic: str,
    group: str,
    max_poll_records: int,
    on_assigned: RebalanceCallback,
    on_revoked: RebalanceCallback,
    defaults: Mapping[str, Any] = CONSUMER_DEFAULTS,
) -> Consumer:
    """A consumer in `group` subscribed to `topic`, committing only when told to: kafka-python's,
    or librdkafka's when `[kafka] client = "confluent"`."""
    if kafka.get("client") == "confluent":
        from filterd.kafka.confluent import subscribed_confluent_consumer  # an optional dependency

        return subscribed_confluent_consumer(
            kafka, topic, group, max_poll_records, on_assigned, on_revoked, defaults
        )
    settings = client_settings(
        kafka, KafkaConsumer, {"bootstrap_timeout_ms": BOOTSTRAP_TIMEOUT_MS, **defaults}
    )
    settings.update(group_id=group, enable_auto_commit=False, max_poll_records=max_poll_records)
    client = KafkaConsumer(**settings)
    client.subscribe([topic], listener=_Listener(on_assigned, on_revoked))
    subscribed: Consumer = client
    return subscribed


# `subscribe` accepts only instances of kafka-python's listener class (untyped: Any to mypy).
class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]  # kafka-python is untyped
    def __init__(self, on_assigned: RebalanceCallback, on_revoked: RebalanceCallback) -> None:
        self.on_assigned, self.on_revoked = on_assigned, on_revoked

    def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
        self.on_assigned(set(assigned))

    def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
        self.on_revoked(set(revoked))


@dataclass
class Batch:
    """The records of one poll, in partition order, and how to commit or re-read them."""

    records: list[ConsumedRecord]
    # time.monotonic() when poll() returned them: where decision latency starts
    polled_at: float = 0.0

    @classmethod
    def poll(cls, client: Consumer, timeout_ms: int, max_records: int) -> Batch:
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

    def rewind(self, client: Consumer) -> None:
        """Make the next polls return this batch's records again (partitions still assigned)."""
        assigned = client.assignment()
        for tp, (lo, _) in self._bounds().items():
            if tp in assigned:
                client.seek(tp, lo)
