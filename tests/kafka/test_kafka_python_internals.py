"""The parts of kafka-python filterd uses that kafka-python does not document
(`filterd.kafka.internals`), each checked the way filterd uses it, on the session's real broker:
a kafka-python release that changes one fails a test here before the batch publisher or the
reader of undecodable batches misbehaves. pyproject.toml pins the versions these pass with."""

import inspect
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import UnsupportedCodecError

from filterd.kafka import internals
from filterd.kafka.admin import create_topics
from filterd.kafka.batches import CODECS, fetch_request
from filterd.kafka.internals import (
    DefaultRecordBatchBuilder,
    Future,
    KafkaNetClient,
    MemoryRecords,
)
from filterd.kafka.producer import BatchProducer, Deadline, probe_request
from tests.daemon.conftest import Consumed

# (key, value, headers) of the records each batch of these tests holds: a key and none, an empty
# value, headers none, one and two (one of them empty)
Record = tuple[bytes | None, bytes, list[tuple[str, bytes]]]  # (key, value, headers)
# (offset, timestamp, key, value, headers)
Read = tuple[int, int, bytes | None, bytes, list[tuple[str, bytes]]]
RECORDS: list[Record] = [
    (b"k0", b"spam and eggs " * 40, [("trace", b"t-0")]),
    (None, b"", []),
    (b"k2", "ünïcode".encode() * 30, [("a", b""), ("b", b"2")]),
]
TIMESTAMP = 1_700_000_000_000  # ms; each record one ms after the previous


def servers(kafka_config: dict[str, Any]) -> dict[str, str]:
    return {"bootstrap_servers": kafka_config["bootstrap_servers"]}


def new_topic(kafka_config: dict[str, Any], partitions: int = 1) -> str:
    name = f"internals-{uuid.uuid4().hex[:10]}"
    create_topics(kafka_config, [name], partitions=partitions)
    return name


def built(codec: str, records: list[Record] = RECORDS) -> bytes:
    """`records` in one batch compressed with `codec`, built as the publisher builds batches,
    at offsets 0, 1, …"""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=CODECS.index(codec),
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    for offset, (key, value, headers) in enumerate(records):
        assert builder.append(offset, TIMESTAMP + offset, key, value, headers) is not None
    return bytes(builder.build())


def as_read(records: Iterable[Consumed]) -> list[Read]:
    """(offset, timestamp, key, value, headers) of records read back."""
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in records]


def as_written(base_offset: int = 0, records: list[Record] = RECORDS) -> list[Read]:
    return [
        (base_offset + i, TIMESTAMP + i, key, value, headers)
        for i, (key, value, headers) in enumerate(records)
    ]


def consumed(bootstrap_servers: str, tp: TopicPartition, n: int) -> list[Consumed]:
    """The first `n` records of `tp`, read by a KafkaConsumer (no group)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, enable_auto_commit=False)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    records: list[Consumed] = []
    deadline = time.monotonic() + 10
    while len(records) < n and time.monotonic() < deadline:
        records += consumer.poll(timeout_ms=200).get(tp, [])
    consumer.close()
    return records


def leader_of(client: KafkaNetClient, tp: TopicPartition) -> int:
    """`tp`'s leader, after one metadata update through the client's cluster metadata."""
    client.cluster.add_topic(tp.topic)
    update = client.cluster.request_update()
    client.poll(future=update, timeout_ms=5000)
    assert update.is_done and not update.failed()
    leader = client.cluster.leader_for_partition(tp)
    assert isinstance(leader, int) and leader >= 0
    return leader


def test_the_record_builder_and_network_client_take_the_arguments_filterd_passes() -> None:
    """Fails when kafka-python renames or reorders a parameter filterd passes to the record
    builder (by keyword in filterd.kafka.producer, by position in tests and docstrings), or to
    the network client's send, poll, send_and_receive and close."""

    def parameters(function: Callable[..., object]) -> list[str]:
        return list(inspect.signature(function).parameters)

    assert parameters(DefaultRecordBatchBuilder.__init__)[:8] == [
        "self",
        "magic",
        "compression_type",
        "is_transactional",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "batch_size",
    ]
    assert parameters(DefaultRecordBatchBuilder.append)[:6] == [
        "self",
        "offset",
        "timestamp",
        "key",
        "value",
        "headers",
    ]
    assert parameters(KafkaNetClient.send)[:3] == ["self", "node_id", "request"]
    assert {"timeout_ms", "future"} <= set(parameters(KafkaNetClient.poll))
    assert parameters(KafkaNetClient.send_and_receive)[:4] == [
        "self",
        "node_id",
        "request",
        "timeout_ms",
    ]
    assert parameters(KafkaNetClient.close) == ["self", "node_id"]
    assert isinstance(inspect.getattr_static(KafkaNetClient, "cluster"), property)


def test_a_future_tells_done_failed_value_and_exception_as_filterd_reads_them() -> None:
    """Fails when kafka-python's Future (what the network client's send returns) changes
    `is_done`, `failed()`, `value` or `exception`, which the publisher reads of each request."""
    pending, succeeded, failed = Future(), Future(), Future()
    succeeded.success("response")
    error = RuntimeError("no answer")
    failed.failure(error)
    assert (pending.is_done, pending.failed()) == (False, False)
    assert (succeeded.is_done, succeeded.failed(), succeeded.value) == (True, False, "response")
    assert (failed.is_done, failed.failed(), failed.exception) == (True, True, error)


def test_the_clients_default_settings_name_the_settings_filterd_reads() -> None:
    """Fails when kafka-python drops a client's `DEFAULT_CONFIG` (filterd.kafka.settings checks
    `[kafka]` keys against them) or a setting in it that the publisher or the batch reader
    reads."""
    assert {
        "acks",
        "batch_size",
        "compression_type",
        "max_in_flight_requests_per_connection",
        "max_request_size",
        "request_timeout_ms",
    } <= set(KafkaProducer.DEFAULT_CONFIG)
    assert {"check_crcs", "fetch_max_bytes", "max_partition_fetch_bytes"} <= set(
        KafkaConsumer.DEFAULT_CONFIG
    )
    assert "bootstrap_servers" in KafkaAdminClient.DEFAULT_CONFIG


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_the_codec_probes_are_what_kafka_python_decodes_by(
    codec: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fails when kafka-python's codec probe (`has_<codec>`, filterd.kafka.settings's
    CODEC_INSTALLED) says a library filterd installs is missing, or no longer decides whether
    kafka-python decodes a batch: filterd names a batch undecodable by it."""
    probe = f"has_{codec}"
    assert getattr(internals, probe)() is True
    data = built(codec)
    monkeypatch.setattr(f"kafka.codec.{probe}", lambda: False)
    with pytest.raises(UnsupportedCodecError):
        list(MemoryRecords(data).next_batch())


def test_a_full_batch_refuses_a_record_and_a_fresh_one_takes_any() -> None:
    """Fails when the record builder stops answering None to a record that does not fit (the
    publisher then starts a new batch), or refuses the first record of a fresh batch, however
    large (the publisher would lose it)."""
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1024)
    fitted = 0
    while builder.append(fitted, TIMESTAMP, None, b"x" * 200, []) is not None:
        fitted += 1
    assert 2 <= fitted <= 5
    batch = MemoryRecords(bytes(builder.build())).next_batch()
    assert [r.offset for r in batch] == list(range(fitted))
    fresh = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1024)
    assert fresh.append(0, TIMESTAMP, None, b"x" * 5000, []) is not None
    assert [len(r.value) for r in MemoryRecords(bytes(fresh.build())).next_batch()] == [5000]


@pytest.mark.parametrize("codec", CODECS)
def test_a_built_batch_reads_back_whole_through_memory_records_and_a_consumer(
    codec: str, kafka_config: dict[str, Any]
) -> None:
    """Fails when what kafka-python's record builder writes (with each codec) is not read back
    with its offsets, timestamps, keys, values and headers intact, by kafka-python's own batch
    reader (MemoryRecords) and, once on the broker, by a KafkaConsumer; or when the batch
    header no longer says the codec."""
    data = built(codec)
    batch = MemoryRecords(data).next_batch()
    assert CODECS[batch.compression_type] == codec
    assert as_read(batch) == as_written()
    tp = TopicPartition(new_topic(kafka_config), 0)
    producer = BatchProducer(servers(kafka_config))
    producer.publish_batches([(tp, data)], timeout=10)
    producer.close()
    assert as_read(consumed(kafka_config["bootstrap_servers"], tp, len(RECORDS))) == as_written()


@pytest.mark.parametrize("acks", ["all", 0])
def test_the_network_client_bootstraps_answers_a_probe_and_acknowledges_produce_requests(
    acks: str | int, kafka_config: dict[str, Any]
) -> None:
    """Fails when kafka-python's network client no longer bootstraps from the producer's
    settings, keeps the cluster metadata the publisher reads (partitions, available ones,
    leaders), completes the future of a metadata request (the publisher's probe) or of a
    produce request (with `acks=0` at once, with no response), or answers the produce request
    filterd builds with its `responses[].name` and `partition_responses[].index`, `error_code`."""
    topic = new_topic(kafka_config, partitions=2)
    producer = BatchProducer({**servers(kafka_config), "acks": acks})
    client = producer.client
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    leader = leader_of(client, tps[0])
    assert client.cluster.partitions_for_topic(topic) == {0, 1}
    assert client.cluster.available_partitions_for_topic(topic) == {0, 1}
    assert client.cluster.leader_for_partition(tps[1]) == leader  # one broker
    probe = client.send(leader, probe_request())
    client.poll(future=probe, timeout_ms=5000)
    assert probe.is_done and not probe.failed()
    request = producer._request({tps[0]: built("none"), tps[1]: built("lz4", RECORDS[:1])})
    acknowledged = client.send(leader, request)
    deadline = Deadline(5)
    while not acknowledged.is_done and deadline.left() > 0:
        client.poll(future=acknowledged, timeout_ms=100)
    assert acknowledged.is_done and not acknowledged.failed()
    if acks == 0:
        assert acknowledged.value is None
    else:
        assert sorted(
            (response.name, p.index, p.error_code)
            for response in acknowledged.value.responses
            for p in response.partition_responses
        ) == [(topic, 0, 0), (topic, 1, 0)]
    producer.close()
    assert [
        as_read(consumed(kafka_config["bootstrap_servers"], tp, n)) for tp, n in zip(tps, (3, 1))
    ] == [as_written(), as_written(records=RECORDS[:1])]


def test_a_raw_fetch_gives_the_batch_headers_the_batch_reader_reads(
    kafka_config: dict[str, Any],
) -> None:
    """Fails when kafka-python's network client (with the consumer's settings) no longer sends
    the Fetch request filterd.kafka.batches builds and returns its response (`responses[].topic`,
    `partitions[].partition_index`, `error_code`, `records`), or when MemoryRecords no longer
    reads from those bytes each batch's codec, base offset, last offset delta, record count,
    next offset and CRC checks, which describe an undecodable batch without decoding it."""
    topic = new_topic(kafka_config)
    tp = TopicPartition(topic, 0)
    sent = [("none", 3), ("gzip", 1), ("zstd", 2)]  # (codec, records) of each batch, in order
    producer = BatchProducer(servers(kafka_config))
    producer.publish_batches([(tp, built(codec, RECORDS[:n])) for codec, n in sent], timeout=10)
    producer.close()
    client = KafkaNetClient(**{**KafkaConsumer.DEFAULT_CONFIG, **servers(kafka_config)})
    try:
        response = client.send_and_receive(
            leader_of(client, tp), fetch_request(tp, 0, 1 << 20, 1 << 20), timeout_ms=5000
        )
    finally:
        client.close()
    parts = [(t, p) for t in response.responses for p in t.partitions]
    assert [(t.topic, p.partition_index, p.error_code) for t, p in parts] == [(topic, 0, 0)]
    records = MemoryRecords(bytes(parts[0][1].records))
    batches = []
    while (batch := records.next_batch()) is not None:
        assert batch.validate_crc() and all(r.validate_crc() for r in batch)
        batches.append(
            (
                CODECS[batch.compression_type],
                batch.base_offset,
                batch.last_offset_delta,
                batch.records_count,
                batch.next_offset,
            )
        )
    assert batches == [("none", 0, 2, 3, 3), ("gzip", 3, 0, 1, 4), ("zstd", 4, 1, 2, 6)]
