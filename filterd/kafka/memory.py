"""An in-memory broker with a consumer and a publisher behind the interfaces the daemon's loops
use (`Consumer`, `Publishing`), for tests of loop logic without a broker (as Arroyo's local
backend). Production and the integration tests use Kafka itself.

    broker = MemoryBroker({"filterd.messages": 2, "filterd.decisions": 2})
    broker.produce("filterd.messages", b"m-1", b'{"id": "m-1", "text": "hi"}')
    consumer = MemoryConsumer(broker, "filterd.messages", group="scorer")
    publisher = MemoryPublisher(broker)

Records with a key go to the partition Kafka's default partitioner chooses; the consumer is the
group's only member, starts at the group's committed offsets (else the earliest), and commits
into the broker. `MemoryPublisher.fail_flushes` and `MemoryConsumer.fail_commits` make the next
calls fail, as a broker outage would; `MemoryConsumer.rebalances` makes the next polls begin
with a rebalance, as another member joining or leaving would.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from kafka import OffsetAndMetadata, TopicPartition
from kafka.errors import KafkaError

from filterd.kafka.consumer import CommitCallback, RebalanceCallback
from filterd.kafka.partitioner import partitions_of
from filterd.kafka.producer import PublishError


@dataclass(frozen=True)
class MemoryRecord:
    """The fields of kafka-python's ConsumerRecord that filterd reads."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes


@dataclass
class MemoryBroker:
    """Topics as lists of partitions of records, and each group's committed offsets."""

    partitions: dict[str, int]  # topic → number of partitions
    records: dict[TopicPartition, list[MemoryRecord]] = field(default_factory=dict)
    committed: dict[tuple[str, TopicPartition], int] = field(default_factory=dict)

    def produce(
        self, topic: str, key: bytes | None, value: bytes, partition: int | None = None
    ) -> MemoryRecord:
        """Append one record (keyed: on Kafka's default partition; else `partition` or 0)."""
        if topic not in self.partitions:
            raise KeyError(f"no topic {topic!r}")
        if partition is None:
            partition = 0 if key is None else partitions_of([key], range(self.partitions[topic]))[0]
        log = self.records.setdefault(TopicPartition(topic, partition), [])
        record = MemoryRecord(topic, partition, len(log), key, value)
        log.append(record)
        return record

    def read(self, topic: str) -> list[MemoryRecord]:
        """Every record of `topic`, partition by partition."""
        return [
            record
            for p in range(self.partitions.get(topic, 0))
            for record in self.records.get(TopicPartition(topic, p), [])
        ]


@dataclass
class MemoryFetcher:
    """`filterd.kafka.fetch.RecordFetcher` over a `MemoryBroker`."""

    broker: MemoryBroker

    def fetch(
        self, topic: str, wanted: Collection[tuple[int, int]]
    ) -> dict[tuple[int, int], bytes]:
        found = {}
        for partition, offset in wanted:
            log = self.broker.records.get(TopicPartition(topic, partition), [])
            if 0 <= offset < len(log):
                found[(partition, offset)] = log[offset].value
        return found

    def close(self) -> None:
        pass


class MemoryConsumer:
    """The only member of `group` on `topic`: every partition is assigned to it. A rebalance
    (`rebalances`) calls `on_revoked` with every partition, reads on from the group's committed
    offsets and calls `on_assigned` with every partition, in `poll` as Kafka's consumers do."""

    def __init__(
        self,
        broker: MemoryBroker,
        topic: str,
        group: str,
        on_assigned: RebalanceCallback | None = None,
        on_revoked: RebalanceCallback | None = None,
    ) -> None:
        self.broker, self.group = broker, group
        self.on_assigned, self.on_revoked = on_assigned, on_revoked
        self._assigned = {TopicPartition(topic, p) for p in range(broker.partitions[topic])}
        self._position = self._committed_positions()
        self.fail_commits = 0  # the next this many commits fail
        self.rebalances = 0  # the next this many polls begin with a rebalance
        self.closed = False
        self.paused: set[TopicPartition] = set()

    def poll(
        self, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[MemoryRecord]]:
        """Up to `max_records` records past the positions, in partition order; never waits."""
        if self.rebalances:
            self.rebalances -= 1
            self._rebalance()
        out: dict[TopicPartition, list[MemoryRecord]] = {}
        room = max_records if max_records is not None else float("inf")
        for tp in sorted(self._assigned - self.paused):
            log = self.broker.records.get(tp, [])
            start = self._position[tp]
            taken = log[start : start + int(min(room, len(log)))]
            if taken:
                out[tp] = taken
                self._position[tp] += len(taken)
                room -= len(taken)
            if room <= 0:
                break
        return out

    def _rebalance(self) -> None:
        if self.on_revoked is not None:
            self.on_revoked(set(self._assigned))
        self._position = self._committed_positions()
        self.paused.clear()  # as a rebalance does with the partitions it assigns
        if self.on_assigned is not None:
            self.on_assigned(set(self._assigned))

    def _committed_positions(self) -> dict[TopicPartition, int]:
        """Where the group reads on from: its committed offsets, else the earliest."""
        return {tp: self.broker.committed.get((self.group, tp), 0) for tp in self._assigned}

    def assignment(self) -> set[TopicPartition]:
        return set(self._assigned)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._position[tp] = offset

    def pause(self, *partitions: TopicPartition) -> None:
        self.paused.update(partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        self.paused.difference_update(partitions)

    def highwater(self, tp: TopicPartition) -> int | None:
        return len(self.broker.records.get(tp, []))

    def position(self, tp: TopicPartition, timeout_ms: int | None = None) -> int | None:
        return self._position[tp]

    def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], timeout_ms: int | None = None
    ) -> None:
        if self.fail_commits:
            self.fail_commits -= 1
            raise KafkaError("commit failed (MemoryConsumer.fail_commits)")
        for tp, offset in offsets.items():
            self.broker.committed[(self.group, tp)] = offset.offset

    def commit_async(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], callback: CommitCallback
    ) -> None:
        try:
            self.commit(offsets)
        except KafkaError as error:
            callback(offsets, error)
        else:
            callback(offsets, offsets)

    def close(self, autocommit: bool = False, timeout_ms: int | None = None) -> None:
        self.closed = True


class MemoryPublisher:
    """Collects records and appends them to the broker at `flush()`, all or none."""

    def __init__(self, broker: MemoryBroker) -> None:
        self.broker = broker
        self.fail_flushes = 0  # the next this many flushes fail, dropping their records
        self._pending: list[tuple[str, bytes | None, bytes]] = []

    def send(self, topic: str, key: str | None, value: bytes) -> None:
        self._pending.append(
            (topic, None if key is None else key.encode("utf-8", "surrogatepass"), value)
        )

    def send_keyed(self, topic: str, records: Sequence[tuple[str, bytes]]) -> None:
        for key, value in records:
            self.send(topic, key, value)

    def flush(self) -> None:
        pending, self._pending = self._pending, []
        if self.fail_flushes:
            self.fail_flushes -= 1
            raise PublishError(
                f"{len(pending)} records not delivered (MemoryPublisher.fail_flushes)"
            )
        # the keyed records' partitions a topic at a time: Kafka's partitioner is vectorized
        keyed: dict[str, list[bytes]] = {}
        for topic, key, _ in pending:
            if key is not None:
                keyed.setdefault(topic, []).append(key)
        placed = {
            topic: iter(partitions_of(keys, range(self.broker.partitions[topic])))
            for topic, keys in keyed.items()
            if topic in self.broker.partitions
        }
        for topic, key, value in pending:
            partition = next(placed[topic]) if key is not None and topic in placed else None
            self.broker.produce(topic, key, value, partition)

    def reset(self) -> None:
        self._pending = []

    def close(self) -> None:
        self._pending = []
