"""Publishing a batch of records: one record batch per partition, one produce request per
leader, every acknowledgement awaited — through kafka-python's network client and record
builder (undocumented: `filterd.kafka.internals`), without its `KafkaProducer`.

The daemon publishes what one poll() caused, waits until the broker has acknowledged all of
it, and on any failure publishes the whole batch again (at-least-once; decisions are keyed by
message id). `KafkaProducer` does much more — an accumulator shared with a sender thread,
lingering, per-record futures and retries — and costs for it in CPU time per record, in the
calling thread and in its sender; none of that is needed to publish a whole batch and wait.

Records with a key go where Kafka's default partitioner puts them (`filterd.kafka.partitioner`);
records without one go to one available partition per call, chosen at random.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from kafka import KafkaProducer, TopicPartition
from kafka.errors import KafkaError, for_code

from filterd.kafka.internals import (
    DefaultRecordBatchBuilder,
    Future,
    KafkaNetClient,
    MetadataRequest,
    ProduceRequest,
)
from filterd.kafka.partitioner import partitions_of
from filterd.kafka.settings import COMPRESSION, check_compression

Partition: TypeAlias = ProduceRequest.TopicProduceData.PartitionProduceData


# The longest a wait for the broker goes without looking at the stop request.
WAIT_SLICE_SECONDS = 0.1


class PublishError(RuntimeError):
    """Records could not be delivered to the broker; the batch must be retried."""


class NotSent(PublishError):
    """No record was sent to any broker (none answered in time, or none leads a partition):
    none can be appended later, and sending them again makes no duplicate."""


class Deadline:
    """When waits for the broker give up: `timeout` seconds from now, or `stop_grace` seconds
    after `stop` is set (counted from the first `left()` that sees it), whichever comes first."""

    def __init__(
        self, timeout: float, stop: threading.Event | None = None, stop_grace: float = 0.0
    ) -> None:
        self.started = time.monotonic()
        self.at = self.started + timeout
        self.stop, self.stop_grace = stop, stop_grace

    def left(self) -> float:
        """Seconds left (0 once passed)."""
        now = time.monotonic()
        if self.stop is not None and self.stop.is_set():
            self.at, self.stop = min(self.at, now + self.stop_grace), None
        return max(0.0, self.at - now)

    def waited(self) -> float:
        return time.monotonic() - self.started


def probe_request() -> MetadataRequest:
    """A metadata request of no topic: what a broker answers at once while it is running."""
    return MetadataRequest(
        topics=MetadataRequest.NO_TOPICS,
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )


class BatchProducer:
    """Sends batches of (topic, key, value) records and waits for their acknowledgement.

    `settings` are KafkaProducer settings (bootstrap servers, security, acks, batch_size,
    max_request_size, compression_type, request_timeout_ms, …); those about lingering,
    retries and idempotence do not apply: a failed call is retried whole by the caller.
    """

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.config = {**KafkaProducer.DEFAULT_CONFIG, **settings}
        try:
            check_compression(self.config["compression_type"])
        except ValueError as error:
            raise ValueError(f"compression_type: {error}") from None
        acks = self.config["acks"]
        self.acks = -1 if acks == "all" else int(acks)
        self.client = KafkaNetClient(**self.config)

    def publish(
        self,
        records: Sequence[tuple[str, bytes | None, bytes]],
        timeout: float,
        stop: threading.Event | None = None,
        stop_grace: float = 0.0,
        probe: bool = False,
    ) -> None:
        """Deliver every (topic, key, value) of `records`, or raise PublishError (or KafkaError);
        NotSent when it gave up before sending any.

        Gives up after `timeout` seconds, or `stop_grace` seconds after `stop` is set: a stop
        request does not wait out a broker outage (the caller's batch is then not committed).

        With `probe`, each leader must first answer a metadata request: records are not sent
        to a broker that has stopped answering (a stalled process still takes bytes into its
        socket, and would append them when it resumes, after the caller gave up). A broker
        that stalls after answering may still do so: the PublishError then says the records
        were sent."""
        deadline = Deadline(timeout, stop, stop_grace)
        try:
            requests = self._requests(self._batches(records, deadline))
            if probe:
                self._probe({node for node, _ in requests}, deadline)
        except NotSent:
            raise
        except (KafkaError, PublishError) as failure:
            raise NotSent(str(failure)) from None
        self._send(requests, deadline)

    def publish_batches(
        self, batches: Sequence[tuple[TopicPartition, bytes]], timeout: float
    ) -> None:
        """Deliver record batches built elsewhere, as they are, each (partition, batch) to its
        partition: records a consumer reads as their producer wrote them, whatever that was."""
        deadline = Deadline(timeout)
        for topic in dict.fromkeys(tp.topic for tp, _ in batches):
            self._partitions(topic, deadline)  # their leaders known
        self._send(self._requests(list(batches)), deadline)

    def _send(self, requests: list[tuple[int, ProduceRequest]], deadline: Deadline) -> None:
        in_flight: dict[int, list[Future]] = {}
        refused: list[tuple[str, int, type]] = []
        for node, request in requests:
            waiting = in_flight.setdefault(node, [])
            if len(waiting) >= self.config["max_in_flight_requests_per_connection"]:
                refused += self._acknowledged(waiting.pop(0), deadline)
            waiting.append(self.client.send(node, request))
        for waiting in in_flight.values():
            for future in waiting:
                refused += self._acknowledged(future, deadline)
        if refused:
            self.client.cluster.request_update()  # most refusals are about leaders that moved
            topic, partition, error = refused[0]
            raise PublishError(
                f"{len(refused)} partition(s) refused records: "
                f"{topic}[{partition}]: {error.__name__}"
            )

    def _wait(self, future: Future, deadline: Deadline) -> None:
        """Until `future` is done or the deadline passes, in slices: a stop request may move it."""
        while not future.is_done and (left := deadline.left()) > 0:
            self.client.poll(future=future, timeout_ms=min(left, WAIT_SLICE_SECONDS) * 1000)

    def _probe(self, nodes: set[int], deadline: Deadline) -> None:
        """Each of `nodes` answers a metadata request (of no topic) before the deadline, or
        NotSent."""
        request = probe_request()
        asked = {node: self.client.send(node, request) for node in sorted(nodes)}
        for node, future in asked.items():
            self._wait(future, deadline)
            if not future.is_done or future.failed():
                waited = deadline.waited()
                raise NotSent(f"broker {node} did not answer within {waited:.1f} s")

    def _acknowledged(self, future: Future, deadline: Deadline) -> list[tuple[str, int, type]]:
        """Wait for a produce request's response; the (topic, partition, error) it refused."""
        self._wait(future, deadline)
        if not future.is_done:
            raise PublishError(f"no acknowledgement within {deadline.waited():.1f} s")
        if future.failed():
            raise PublishError(f"produce request failed: {future.exception!r}")
        if self.acks == 0:
            return []
        return [
            (topic.name, p.index, for_code(p.error_code))
            for topic in future.value.responses
            for p in topic.partition_responses
            if p.error_code
        ]

    def close(self) -> None:
        self.client.close()

    def _partitions(self, topic: str, deadline: Deadline) -> set[int]:
        cluster = self.client.cluster
        partitions: set[int] | None = cluster.partitions_for_topic(topic)
        while partitions is None and deadline.left() > 0:
            cluster.add_topic(topic)
            self._wait(cluster.request_update(), deadline)
            partitions = cluster.partitions_for_topic(topic)
        if not partitions:
            raise PublishError(
                f"no partitions known for topic {topic!r} (broker unreachable, or no such topic)"
            )
        return partitions

    def _batches(
        self, records: Sequence[tuple[str, bytes | None, bytes]], deadline: Deadline
    ) -> list[tuple[TopicPartition, bytes]]:
        """Each partition's records as record batches of at most `batch_size` bytes, in order."""
        by_topic: dict[str, list[tuple[bytes | None, bytes]]] = {}
        for topic, key, value in records:
            by_topic.setdefault(topic, []).append((key, value))
        timestamp = int(time.time() * 1000)
        out = []
        for topic, pairs in by_topic.items():
            partitions = self._partitions(topic, deadline)
            keyed = [key for key, _ in pairs if key is not None]
            placed = iter(partitions_of(keyed, partitions) if keyed else ())
            unkeyed: int | None = None  # the partition of the records without a key
            built: dict[int, list[DefaultRecordBatchBuilder]] = {}
            count: dict[
                int, int
            ] = {}  # records in each partition's last batch: the next offset delta
            for key, value in pairs:
                if key is not None:
                    partition = next(placed)
                else:
                    if unkeyed is None:
                        available = self.client.cluster.available_partitions_for_topic(topic)
                        unkeyed = random.choice(sorted(available or partitions))
                    partition = unkeyed
                n = count.get(partition)
                if (
                    n is None or built[partition][-1].append(n, timestamp, key, value, []) is None
                ):  # full
                    built.setdefault(partition, []).append(self._builder())
                    built[partition][-1].append(0, timestamp, key, value, [])
                    n = 0
                count[partition] = n + 1
            out += [
                (TopicPartition(topic, p), bytes(b.build()))
                for p, batches in built.items()
                for b in batches
            ]
        return out

    def _builder(self) -> DefaultRecordBatchBuilder:
        return DefaultRecordBatchBuilder(
            magic=2,
            compression_type=COMPRESSION[self.config["compression_type"]],
            is_transactional=False,
            producer_id=-1,
            producer_epoch=-1,
            base_sequence=-1,
            batch_size=self.config["batch_size"],
        )

    def _requests(
        self, batches: list[tuple[TopicPartition, bytes]]
    ) -> list[tuple[int, ProduceRequest]]:
        """Batches grouped into produce requests by leader: at most `max_request_size` bytes
        and one batch per partition in each (the broker takes no more)."""
        cluster, limit = self.client.cluster, self.config["max_request_size"]
        groups: list[tuple[int, dict[TopicPartition, bytes]]] = []
        sizes: list[int] = []
        open_group: dict[int, int] = {}  # leader → its group still taking batches
        for tp, data in batches:
            leader = cluster.leader_for_partition(tp)
            if leader is None or leader == -1:
                cluster.request_update()
                raise PublishError(f"no leader known for {tp.topic}[{tp.partition}]")
            i = open_group.get(leader)
            if i is None or tp in groups[i][1] or sizes[i] + len(data) > limit:
                i = open_group[leader] = len(groups)
                groups.append((leader, {}))
                sizes.append(0)
            groups[i][1][tp] = data
            sizes[i] += len(data)
        return [(leader, self._request(group)) for leader, group in groups]

    def _request(self, group: dict[TopicPartition, bytes]) -> ProduceRequest:
        topics: dict[str, list[Partition]] = {}
        for tp, data in group.items():
            topics.setdefault(tp.topic, []).append(Partition(index=tp.partition, records=data))
        return ProduceRequest(
            transactional_id=None,
            acks=self.acks,
            timeout_ms=self.config["request_timeout_ms"],
            topic_data=[
                ProduceRequest.TopicProduceData(name=name, partition_data=partitions)
                for name, partitions in topics.items()
            ],
            min_version=0,
            max_version=9,
        )
