"""A record batch the consumer cannot decode, on the session's real broker: its partition is held
at the batch (one error line naming it, readiness false, the gauge), the other partitions flow,
the loop does not spin, nothing is committed past it, and only an operator's skip, recorded in
the store, moves the partition on."""

import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Unpack

import pytest
import structlog
from click.testing import CliRunner, Result
from kafka import KafkaConsumer, TopicPartition

from filterd.cli import main
from filterd.daemon.guard import DeadLetterGuard
from filterd.daemon.loop import Loop, LoopSettings
from filterd.kafka.batches import batch_at
from filterd.kafka.consumer import Batch, ConsumedRecord, Consumer
from filterd.kafka.internals import DefaultRecordBatchBuilder
from filterd.kafka.memory import MemoryBroker, MemoryPublisher
from filterd.kafka.processor import Processed
from filterd.kafka.producer import BatchProducer
from filterd.kafka.settings import CODEC_INSTALLED
from filterd.observe.health import Health
from filterd.observe.metrics import Metrics
from filterd.store.handle import Store
from tests.daemon.conftest import StartDaemon, ids_of, message, read_all

ROOT = Path(__file__).resolve().parents[2]


def record_batch(values: list[bytes], codec: int = 0) -> bytearray:
    builder = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 1 << 20)
    for i, value in enumerate(values):
        builder.append(i, int(time.time() * 1000), None, value, [])
    return bytearray(builder.build())


def snappy(values: list[bytes]) -> bytes:
    """A batch compressed with snappy, whose library the test then hides from kafka-python."""
    return bytes(record_batch([value * 20 for value in values], codec=2))


def bad_crc(values: list[bytes]) -> bytes:
    """A batch one bit of whose records differs from what its CRC was computed on."""
    data = record_batch(values)
    data[-1] ^= 1
    return bytes(data)


class Reading(Loop):
    """Keeps the offsets of the records it is given, by partition."""

    role = "scorer"

    def __init__(self, **settings: Unpack[LoopSettings]) -> None:
        super().__init__(**settings)
        self.read: dict[int, list[int]] = {}

    def process(self, batch: Batch) -> Processed:
        for r in batch.records:
            self.read.setdefault(r.partition, []).append(r.offset)
        return Processed({"read": len(batch)})


class CountingPolls:
    """A consumer whose polls are counted."""

    def __init__(self, consumer: Consumer) -> None:
        self.consumer, self.polls = consumer, 0

    def poll(self, *args: Any, **kwargs: Any) -> Mapping[TopicPartition, Sequence[ConsumedRecord]]:
        self.polls += 1
        return self.consumer.poll(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.consumer, name)


def committed(kafka_config: dict[str, Any], group: str, tp: TopicPartition) -> int | None:
    consumer = KafkaConsumer(
        bootstrap_servers=kafka_config["bootstrap_servers"],
        group_id=group,
        enable_auto_commit=False,
    )
    try:
        offset: int | None = consumer.committed(tp)
        return offset
    finally:
        consumer.close()


def wait_until(
    condition: Callable[[], object], timeout: float = 30.0, what: str = "condition"
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


SNAPPY_MISSING = "compressed with snappy, whose library is not installed here"
CORRUPT = "corrupt: its CRC does not match its bytes"


@pytest.mark.parametrize(
    ("broken", "codec", "problem", "client"),
    [
        (snappy, "snappy", SNAPPY_MISSING, "kafka-python"),
        (bad_crc, "none", CORRUPT, "kafka-python"),
        # librdkafka decodes every codec itself: a corrupt batch is what it cannot read
        (bad_crc, "none", CORRUPT, "confluent"),
    ],
)
def test_an_undecodable_batch_holds_its_partition_until_an_operator_skips_it(
    broken: Callable[[list[bytes]], bytes],
    codec: str,
    problem: str,
    client: str,
    kafka_config: dict[str, Any],
    topics: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("filterd.daemon.stuck.CHECK_SECONDS", 0.2)
    topic, group = topics["messages"], f"stuck-{topics['messages']}"
    stuck_at = TopicPartition(topic, 2)
    producer = BatchProducer({"bootstrap_servers": kafka_config["bootstrap_servers"]})
    before, after = [b"before %d" % i for i in range(5)], [b"after %d" % i for i in range(5)]
    producer.publish_batches(
        [(TopicPartition(topic, p), bytes(record_batch(before))) for p in range(4)]
        + [
            (stuck_at, broken([b"spam %d" % i for i in range(3)])),
            (stuck_at, bytes(record_batch(after))),
        ],
        timeout=30,
    )
    producer.close()
    if codec == "snappy":  # as a consumer without the library: kafka-python looks at each read
        monkeypatch.setattr("kafka.codec.has_snappy", lambda: False)
        monkeypatch.setitem(CODEC_INSTALLED, "snappy", lambda: False)
    held = batch_at(kafka_config, stuck_at, 5)
    assert held is not None and held.problem == problem  # as the broker keeps it
    url = f"sqlite:///{tmp_path / 'store.db'}"
    store = Store.open(url)
    store.upgrade()
    stop, health, metrics = threading.Event(), Health(), Metrics()
    if client == "confluent":
        pytest.importorskip("confluent_kafka")
    loop = Reading(
        kafka={**kafka_config, "client": client},
        topic=topic,
        group=group,
        max_records=100,
        publisher=MemoryPublisher(MemoryBroker({})),  # the loop publishes nothing
        guard=DeadLetterGuard(),
        dead_letter_topic="unused",
        payload_limit=100,
        metrics=metrics,
        health=health,
        log=structlog.get_logger(),
        store=store,
    )
    consumer: list[CountingPolls] = []

    def counted() -> Consumer:
        consumer.append(CountingPolls(loop.processor.subscribe()))
        return consumer[-1]

    loop.processor.connect = counted
    with structlog.testing.capture_logs() as logged:
        thread = threading.Thread(target=loop.run, args=(stop,))
        thread.start()
        try:
            wait_until(
                lambda: (
                    {p: len(o) for p, o in loop.read.items()} == {0: 5, 1: 5, 2: 5, 3: 5}
                    and not health.ready()[0]
                ),
                what="the other partitions read, the stuck one held",
            )
            polls, held_since = consumer[0].polls, time.monotonic()
            time.sleep(2.0)
            # held: no spinning (a poll waits up to 500 ms when there is nothing to read), nothing
            # committed past the batch, and what an operator needs said once
            assert consumer[0].polls - polls <= 2.0 / 0.5 * 1.5 + 2
            assert committed(kafka_config, group, stuck_at) == 5
            ready, body = health.ready()
            assert (
                not ready and f"{topic}[2] offset 5: {problem}" in body["failing"]["scorer input"]
            )
            gauge = {"role": "scorer", "topic": topic, "partition": "2"}
            assert metrics.registry.get_sample_value("filterd_undecodable_batches", gauge) == 1
            errors = [e for e in logged if e["log_level"] == "error"]
            assert len(errors) == 1 and errors[0]["event"].startswith("undecodable record batch")
            assert {
                k: errors[0][k]
                for k in (
                    "topic",
                    "partition",
                    "offset",
                    "last_offset",
                    "records",
                    "codec",
                    "problem",
                )
            } == {
                "topic": topic,
                "partition": 2,
                "offset": 5,
                "last_offset": 7,
                "records": 3,
                "codec": codec,
                "problem": problem,
            }
            assert not [e for e in logged if e["event"] == "broker unreachable, retrying"]
            (reported,) = store.undecodable_batches()
            assert (reported.consumer_group, reported.kafka_offset, reported.next_offset) == (
                group,
                5,
                8,
            )
            assert reported.skip_requested_at is None and time.monotonic() - held_since >= 2.0
            assert loop.read[2] == [0, 1, 2, 3, 4]

            store.request_skip(group, topic, 2, 5, "ops", "producer bug, batch resent")
            wait_until(
                lambda: len(loop.read[2]) == 10, what="the partition read past the skipped batch"
            )
            assert loop.read[2] == [0, 1, 2, 3, 4, 8, 9, 10, 11, 12]
            wait_until(lambda: health.ready()[0], what="ready again")
            assert metrics.registry.get_sample_value("filterd_undecodable_batches", gauge) is None
        finally:
            stop.set()
            thread.join(30)
    (skipped,) = store.undecodable_batches()
    assert skipped.skip_requested_by == "ops" and skipped.skipped_at is not None
    (line,) = [e for e in logged if e["event"] == "undecodable record batch skipped"]
    assert (line["offset"], line["next_offset"], line["records"], line["reason"]) == (
        5,
        8,
        3,
        "producer bug, batch resent",
    )
    assert committed(kafka_config, group, stuck_at) == 13


def test_filterd_run_without_the_snappy_library_holds_the_partition_and_topics_skip_moves_it_on(
    start_daemon: StartDaemon, kafka_config: dict[str, Any], topics: dict[str, str], tmp_path: Path
) -> None:
    """A producer on librdkafka compresses with snappy, and filterd's environment lacks the
    library. Readiness names the codec, topic and partition, the alert's gauge is 1, the
    other partitions are decided, the log does not fill, and `filterd topics skip` (audited)
    moves the partition on."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "snappy.py").write_text("raise ImportError('hidden by the test')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hidden), str(ROOT)])}
    db = f"sqlite:///{tmp_path / 'store.db'}"
    daemon = start_daemon(db, env=env)
    topic, stuck_at = topics["messages"], 1
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": kafka_config["bootstrap_servers"],
            "compression.type": "snappy",
            "linger.ms": 50,
        }
    )
    plain = confluent_kafka.Producer({"bootstrap.servers": kafka_config["bootstrap_servers"]})
    for i in range(40):  # partitions 0, 2, 3: plain; 1: one snappy batch between plain ones
        text = f"message {i} " + "the same words again and again " * 10
        plain.produce(topic, message(i, text), partition=i % 4 if i % 4 != stuck_at else 0)
    plain.flush(10)
    for i in range(40, 45):
        plain.produce(topic, message(i, "before"), partition=stuck_at)
    plain.flush(10)
    for i in range(45, 65):
        producer.produce(topic, message(i, "squeeze " * 40), partition=stuck_at)
    producer.flush(10)
    for i in range(65, 70):
        plain.produce(topic, message(i, "after"), partition=stuck_at)
    plain.flush(10)
    daemon.wait_for(
        lambda: daemon.get("/readyz")[0] == 503 and "scorer input" in daemon.get("/readyz")[1],
        what="readiness false for the scorer's input",
    )
    decided = read_all(kafka_config, topics["decisions"], until=lambda r: len(r) >= 45)
    assert sorted(ids_of(decided)) == sorted(
        f"m{i}" for i in range(45)
    )  # all but the snappy batch on
    gauge = {"role": "scorer", "topic": topic, "partition": str(stuck_at)}
    assert daemon.metric("filterd_undecodable_batches", **gauge) == 1
    time.sleep(3)  # held a while: the log does not fill and the other partitions do not stop
    lines = [json.loads(line) for line in daemon.log().splitlines() if line.startswith("{")]
    assert [
        line["codecs"] for line in lines if line["event"].startswith("codec libraries missing")
    ] == [["snappy"]]
    held = [line for line in lines if line["event"].startswith("undecodable record batch:")]
    assert len(held) == 1 and (held[0]["topic"], held[0]["partition"], held[0]["offset"]) == (
        topic,
        stuck_at,
        5,
    )
    assert held[0]["codec"] == "snappy" and held[0]["level"] == "error" and held[0]["records"] == 20
    assert held[0]["problem"] == "compressed with snappy, whose library is not installed here"
    assert not [line for line in lines if line["event"] == "broker unreachable, retrying"]
    assert len(lines) < 40

    config = str(daemon.config_path)
    refused = filterd(
        "topics", "skip", topic, str(stuck_at), "6", "--config", config, "--reason", "typo"
    )
    assert refused.exit_code != 0 and "reported there: offset 5" in refused.stderr
    unconfirmed = filterd(
        "topics", "skip", topic, str(stuck_at), "5", "--config", config, "--reason", "r"
    )
    assert unconfirmed.exit_code != 0 and "passes over 20 records" in unconfirmed.stderr
    assert "add --yes" in unconfirmed.stderr
    skipped = filterd(
        "topics",
        "skip",
        topic,
        str(stuck_at),
        "5",
        "--config",
        config,
        "--by",
        "alice",
        "--reason",
        "snappy library missing; batch re-sent",
        "--yes",
    )
    assert skipped.exit_code == 0 and "skip requested" in skipped.stdout, skipped.stderr
    decided = read_all(kafka_config, topics["decisions"], until=lambda r: len(r) >= 50)
    assert sorted(ids_of(decided)) == sorted(f"m{i}" for i in [*range(45), *range(65, 70)])
    daemon.wait_for(
        lambda: "scorer input" not in daemon.get("/readyz")[1], what="the input ready again"
    )
    assert daemon.metric("filterd_undecodable_batches", **gauge) == 0
    listed = filterd("topics", "stuck", "--config", config, "--json")
    (row,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert (row["kafka_offset"], row["next_offset"], row["records"], row["skip_requested_by"]) == (
        5,
        25,
        20,
        "alice",
    )
    assert row["skip_reason"] == "snappy library missing; batch re-sent" and row["skipped_at"]
    assert row["status"].startswith("skipped at")


def filterd(*args: str) -> Result:
    """The command line in this process (the daemon it talks to is a process of its own)."""
    return CliRunner().invoke(main, args)
