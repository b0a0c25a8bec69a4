"""The consume/publish contract the daemon's loops rely on (`Consumer`, `Publishing`), one suite
run against each client: the in-memory double, kafka-python and librdkafka (confluent-kafka),
the last two on the session's broker."""

import time

import pytest
from kafka.structs import OffsetAndMetadata, TopicPartition

from filterd.kafka.consumer import Batch, ConsumedRecord, Consumer, Offsets, subscribed_consumer
from filterd.kafka.memory import MemoryBroker, MemoryConsumer, MemoryPublisher
from filterd.kafka.partitioner import partitions_of
from filterd.kafka.producer import PublishError
from filterd.kafka.publisher import Publishing, publisher_of
from filterd.kafka.settings import CONSUMER_DEFAULTS

CLIENTS = ("memory", "kafka-python", "confluent")


class Client:
    """Makes consumers and publishers of one client on one topic."""

    def __init__(self, name: str, request: pytest.FixtureRequest) -> None:
        self.name = name
        if name == "memory":
            self.topic = "messages"
            self.broker = MemoryBroker({self.topic: 4})
            return
        if name == "confluent":
            pytest.importorskip("confluent_kafka")
        self.kafka = {**request.getfixturevalue("kafka_config"), "client": name}
        self.topic = request.getfixturevalue("topics")["messages"]

    def publisher(self) -> Publishing:
        return MemoryPublisher(self.broker) if self.name == "memory" else publisher_of(self.kafka)

    def consumer(self, group: str, events: list[tuple[str, set[TopicPartition]]]) -> Consumer:
        if self.name == "memory":
            return MemoryConsumer(self.broker, self.topic, group)
        return subscribed_consumer(
            self.kafka,
            self.topic,
            group,
            500,
            lambda tps: events.append(("assigned", tps)),
            lambda tps: events.append(("revoked", tps)),
            CONSUMER_DEFAULTS,
        )


@pytest.fixture(params=CLIENTS)
def client(request: pytest.FixtureRequest) -> Client:
    return Client(request.param, request)


def poll_until(
    consumer: Consumer, count: int, timeout: float = 30.0
) -> dict[TopicPartition, list[ConsumedRecord]]:
    """Records by partition from polls until `count` are read (or `timeout` s)."""
    got: dict[TopicPartition, list[ConsumedRecord]] = {}
    deadline = time.monotonic() + timeout
    while sum(map(len, got.values())) < count and time.monotonic() < deadline:
        for tp, records in consumer.poll(timeout_ms=200, max_records=500).items():
            got.setdefault(tp, []).extend(records)
    return got


def published(client: Client, n: int = 200) -> list[tuple[str, bytes]]:
    records = [(f"message-{i}", f'{{"n": {i}}}'.encode()) for i in range(n)]
    publisher = client.publisher()
    publisher.send_keyed(client.topic, records)
    publisher.flush()
    publisher.close()
    return records


def test_published_records_are_consumed_by_partition_where_the_key_puts_them(
    client: Client,
) -> None:
    records = published(client)
    events: list[tuple[str, set[TopicPartition]]] = []
    consumer = client.consumer("g1", events)
    got = poll_until(consumer, len(records))
    by_key = {r.value: (tp, r) for tp, rs in got.items() for r in rs}
    assert set(by_key) == {value for _, value in records}
    expected = partitions_of([key.encode() for key, _ in records], range(4))
    for (_, value), partition in zip(records, expected, strict=True):
        tp, record = by_key[value]
        assert tp == TopicPartition(client.topic, partition)
        assert (record.topic, record.partition) == (tp.topic, tp.partition)
    for tp, rs in got.items():
        assert [r.offset for r in rs] == list(range(len(rs)))  # in order, none missing
        assert consumer.position(tp, timeout_ms=0) == len(rs) == consumer.highwater(tp)
    assert consumer.assignment() == {TopicPartition(client.topic, p) for p in range(4)}
    if client.name != "memory":  # the in-memory consumer has no group and no rebalance
        assert ("assigned", consumer.assignment()) in events
    consumer.close()


def test_a_rewound_batch_is_read_again_and_committed_offsets_are_where_a_new_member_starts(
    client: Client,
) -> None:
    records = published(client, 100)
    consumer = client.consumer("g2", [])
    got = poll_until(consumer, len(records))
    batch = Batch([r for tp in sorted(got) for r in got[tp]])
    batch.rewind(consumer)
    again = poll_until(consumer, len(records))
    values = [r.value for rs in again.values() for r in rs]
    assert sorted(v for v in values if v is not None) == sorted(v for _, v in records)
    # commit all but the last record of each partition, half of them without waiting
    offsets = {tp: OffsetAndMetadata(len(rs) - 1, "", -1) for tp, rs in got.items()}
    first, rest = dict(list(offsets.items())[:2]), dict(list(offsets.items())[2:])
    reports: list[tuple[Offsets, Offsets | Exception]] = []
    consumer.commit_async(first, callback=lambda o, result: reports.append((o, result)))
    consumer.commit(rest)
    deadline = time.monotonic() + 10
    while not reports and time.monotonic() < deadline:
        consumer.poll(timeout_ms=100)
    # the result is the error that lost the offsets, or not an exception
    assert [o for o, _ in reports] == [first] and not isinstance(reports[0][1], Exception)
    consumer.close()
    consumer = client.consumer("g2", [])
    left = poll_until(consumer, len(got))
    # every record here has a value: a None would leave the lists of unequal length
    assert sorted(r.value for rs in left.values() for r in rs if r.value is not None) == sorted(
        v for rs in got.values() if (v := rs[-1].value) is not None
    )
    consumer.close()


def test_a_paused_partition_yields_nothing_until_resumed(client: Client) -> None:
    records = published(client, 100)
    consumer = client.consumer("g3", [])
    got = poll_until(consumer, len(records))
    held = sorted(got)[0]
    for tp in got:
        consumer.seek(tp, 0)
    consumer.pause(held)
    others = len(records) - len(got[held])
    while_paused = poll_until(consumer, others, timeout=5)
    assert held not in while_paused and sum(map(len, while_paused.values())) == others
    assert poll_until(consumer, 1, timeout=2) == {}
    consumer.resume(held)
    resumed = poll_until(consumer, len(got[held]))
    assert [r.offset for r in resumed[held]] == list(range(len(got[held])))
    consumer.close()


def test_a_flush_no_broker_acknowledges_raises_publish_error_within_its_timeout(
    client: Client,
) -> None:
    if client.name == "memory":
        pytest.skip(
            "the in-memory publisher fails only when told to (MemoryPublisher.fail_flushes)"
        )
    unreachable = {**client.kafka, "bootstrap_servers": "127.0.0.1:9"}  # nothing listens
    publisher = publisher_of(unreachable, timeout=2)
    publisher.send_keyed(client.topic, [("k", b"v")])
    started = time.monotonic()
    with pytest.raises(PublishError):
        publisher.flush()
    assert time.monotonic() - started < 10
    publisher.close()


def test_poll_returns_what_has_arrived_without_waiting_for_a_full_batch(client: Client) -> None:
    published(client, 3)
    consumer = client.consumer("g5", [])
    poll_until(consumer, 3)
    published(client, 1)
    time.sleep(0.5)  # fetched meanwhile
    started = time.monotonic()
    got = consumer.poll(timeout_ms=8000, max_records=500)
    assert sum(map(len, got.values())) == 1 and time.monotonic() - started < 4
    consumer.close()
