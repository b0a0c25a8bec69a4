"""Interoperability: librdkafka (confluent-kafka), the client most producers in the wild are built
on, producing into a real `filterd run` on the session's broker — every codec, idempotent and
transactional producers, null keys, record headers, a large batch — and reading the decisions
and dead letters back; feedback produced by it reaches the store.

`FILTERD_CLIENTS` lists the Kafka clients filterd itself may run with, as `[kafka]` settings:
each case runs once per client.
"""

import json
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from confluent_kafka import KafkaError, Message, Producer

from filterd.kafka.batches import batch_at
from filterd.store.handle import Store
from tests.daemon.conftest import StartDaemon, valid

confluent_kafka = pytest.importorskip("confluent_kafka")
TopicPartition = pytest.importorskip("kafka").TopicPartition

FILTERD_CLIENTS = {"kafka-python": {}, "confluent": {"kafka": {"client": "confluent"}}}
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
# compressible, so that librdkafka does compress (it sends a batch as it is when that is smaller)
TEXT = "Congratulations, you have won a prize: claim it today at our office. " * 3


@pytest.fixture(params=sorted(FILTERD_CLIENTS))
def client_settings(request: pytest.FixtureRequest) -> dict[str, Any]:
    return FILTERD_CLIENTS[request.param]


def producer(kafka_config: dict[str, Any], **settings: object) -> "Producer":
    made: Producer = confluent_kafka.Producer(
        {"bootstrap.servers": kafka_config["bootstrap_servers"], **settings}
    )
    return made


def record(message_id: str, text: str = TEXT) -> bytes:
    return json.dumps({"id": message_id, "text": f"{text} ({message_id})"}).encode()


def value_of(message: "Message") -> bytes:
    """The value of a record that has one (all of these tests' records)."""
    value = message.value()
    assert value is not None, message
    return value


class Delivered:
    """Delivery reports: where each record landed, and any error."""

    def __init__(self) -> None:
        self.at: dict[str, tuple[int, int]] = {}  # message id → (partition, offset)
        self.errors: list[str] = []

    def __call__(self, error: "KafkaError | None", message: "Message") -> None:
        if error is not None:
            self.errors.append(str(error))
        else:
            partition, offset = message.partition(), message.offset()
            assert partition is not None and offset is not None
            self.at[json.loads(value_of(message))["id"]] = (partition, offset)


def consume(
    kafka_config: dict[str, Any],
    topic: str,
    until: Callable[[list["Message"]], bool],
    timeout: float = 60.0,
) -> list["Message"]:
    """Every record of `topic` from the start, read by librdkafka until `until(records)`."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": kafka_config["bootstrap_servers"],
            "group.id": f"interop-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            # Tansu holds a group join for half the session timeout
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 1000,
        }
    )
    consumer.subscribe([topic])
    records: list[Message] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and not until(records):
            for m in consumer.consume(1000, 0.5):
                assert m.error() is None, m.error()
                records.append(m)
    finally:
        consumer.close()
    return records


def test_librdkafka_producers_of_every_kind_are_decided_and_read_back(
    client_settings: dict[str, Any],
    start_daemon: StartDaemon,
    kafka_config: dict[str, Any],
    topics: dict[str, str],
    sqlite_url: str,
) -> None:
    daemon = start_daemon(sqlite_url, **client_settings)
    messages, delivered, sent = topics["messages"], Delivered(), []
    for codec in CODECS:  # idempotent where compressed, a header on every record
        p = producer(
            kafka_config,
            **{"compression.type": codec, "enable.idempotence": codec != "none", "linger.ms": 20},
        )
        for i in range(150):
            sent.append(f"{codec}-{i}")
            p.produce(
                messages,
                record(sent[-1]),
                key=sent[-1],
                on_delivery=delivered,
                headers=[("trace-id", uuid.uuid4().bytes), ("source", b"interop")],
            )
        assert p.flush(30) == 0
    p = producer(kafka_config, **{"compression.type": "lz4"})
    for i in range(100):  # no key: librdkafka spreads them
        sent.append(f"nokey-{i}")
        p.produce(messages, record(sent[-1]), on_delivery=delivered)
    assert p.flush(30) == 0
    p = producer(
        kafka_config,
        **{"transactional.id": f"interop-{uuid.uuid4().hex[:8]}", "compression.type": "zstd"},
    )
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(100):
        sent.append(f"txn-{i}")
        p.produce(messages, record(sent[-1]), key=sent[-1], on_delivery=delivered)
    p.commit_transaction(30)
    # a large batch: thousands of records lingering into a few batches of one partition
    p = producer(
        kafka_config,
        **{
            "compression.type": "gzip",
            "linger.ms": 1000,
            "batch.size": 4_000_000,
            "batch.num.messages": 10_000,
        },
    )
    for i in range(4000):
        sent.append(f"bulk-{i}")
        p.produce(messages, record(sent[-1], "bulk"), partition=3, on_delivery=delivered)
    assert p.flush(30) == 0
    bad = producer(kafka_config, **{"compression.type": "snappy"})
    for i in range(3):  # not JSON: dead-lettered
        bad.produce(messages, b"not json %d" % i * 20, key=b"bad")
    assert bad.flush(30) == 0
    assert delivered.errors == [] and set(delivered.at) == set(sent)

    # each codec went over the wire as such, and the bulk batch holds thousands of records
    for codec in CODECS:
        partition, offset = delivered.at[f"{codec}-0"]
        batch = batch_at(kafka_config, TopicPartition(messages, partition), offset)
        assert batch is not None and batch.codec == codec
    partition, offset = delivered.at["bulk-0"]
    bulk = batch_at(kafka_config, TopicPartition(messages, partition), offset)
    assert bulk is not None and bulk.records >= 1000

    decisions = consume(kafka_config, topics["decisions"], lambda rs: len(rs) >= len(sent))
    decided = [valid("decision", value_of(m)) for m in decisions]
    assert sorted(d["message_id"] for d in decided) == sorted(sent)  # each once
    assert all(m.key() == d["message_id"].encode() for m, d in zip(decisions, decided))
    for d in decided:
        assert (d["partition"], d["offset"]) == delivered.at[d["message_id"]]
    letters = consume(kafka_config, topics["dead_letter"], lambda rs: len(rs) >= 3)
    assert (
        sorted(valid("dead-letter", value_of(m))["reason"] for m in letters) == ["invalid_json"] * 3
    )

    # feedback by librdkafka, compressed, with headers and without keys, reaches the store
    labels = producer(kafka_config, **{"compression.type": "zstd", "enable.idempotence": True})
    for i in range(30):
        label = "spam" if i % 2 else "ham"
        value = {"message_id": f"fb-{i}", "label": label, "text": f"{label} words {i} " * 5}
        labels.produce(
            topics["feedback"], json.dumps(value).encode(), headers=[("analyst", b"interop")]
        )
    assert labels.flush(30) == 0
    store = Store.open(sqlite_url)
    model = store.model("default")
    daemon.wait_for(
        lambda: len(list(model.events(limit=None))) >= 30,
        what="the labels in the audit trail",
    )
    events = list(model.events(limit=None))
    assert sorted(e.message_id for e in events) == sorted(f"fb-{i}" for i in range(30))
    assert {e.outcome for e in events} <= {"learned", "held_out"}
    store.close()
    assert daemon.metric("filterd_undecodable_batches") == 0
