"""How fast could a daemon that does nothing go on this broker, with kafka-python?

    .venv/bin/python bench/kafka_ceiling.py [-n 200000] [--bootstrap-servers HOST:PORT] [--json]

Without --bootstrap-servers it starts a LocalBroker (Tansu, memory storage). It produces `n`
SMS-size JSON records (~150 bytes, keyed by message id) to a topic of 4 partitions and measures,
in records/s:
- produce: KafkaProducer (enable_idempotence=False, linger_ms=5, batch_size=64 KiB), send all
  then flush, with acks=1 and acks='all' (each into its own topic);
- consume: KafkaConsumer in a fresh group, max_poll_records=500, from the first record to the
  n-th (the group join is reported apart);
- pipeline: consume + one ~250-byte record published per record consumed to a second topic,
  keyed by the record's key, through the daemon's own `filterd.kafka.publisher.Publisher` + flush +
  synchronous commit per poll() batch, which is what a do-nothing daemon does per batch: the
  client-library ceiling. Its p50/p99 batch latency is from poll() returning to the commit
  returning. The same again with KafkaProducer (send per record, then flush) instead of the
  Publisher, for reference: the path the daemon took before it had its own Publisher.
`ceiling()` returns the figures as a dict and `table()` formats them, so that the end-to-end
benchmark can print the ceiling beside its own figures. `client_ceiling()` measures the pipeline
through filterd's own consumer and publisher of either client (`[kafka] client`, kafka-python or
confluent): the ceiling the end-to-end benchmark's client comparison divides by.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import statistics
import time
import uuid
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple, TypedDict, get_args

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from filterd.demo.broker import LocalBroker
from filterd.kafka.admin import create_topics
from filterd.kafka.consumer import Batch, subscribed_consumer
from filterd.kafka.publisher import Publisher, publisher_of
from filterd.kafka.settings import client_settings

# Tuned group timeouts: Tansu makes a join wait about session_timeout_ms / 2.
GROUP_CONFIG = {
    "session_timeout_ms": 6000,
    "heartbeat_interval_ms": 1000,
    "max_poll_interval_ms": 10000,
}
PRODUCER_CONFIG = {"enable_idempotence": False, "linger_ms": 5, "batch_size": 64 * 1024}
# ~250 bytes, as a decision record
DECISION = json.dumps(
    {
        "label": "ham",
        "score": 0.0123,
        "threshold": 0.5,
        "target_recall": 0.95,
        "model_version": 1,
        "threshold_version": 1,
        "explanation": [["prize", 2.1], ["call", 1.3]],
    }
).encode()
WORDS = [
    "free",
    "call",
    "now",
    "claim",
    "your",
    "prize",
    "txt",
    "win",
    "cash",
    "urgent",
    "reply",
    "stop",
    "meet",
    "me",
    "at",
    "the",
    "station",
    "later",
    "ok",
    "see",
    "you",
    "tomorrow",
    "lunch",
    "thanks",
    "love",
    "home",
    "soon",
]


def sms_records(n: int, seed: int = 1) -> list[tuple[bytes, bytes]]:
    """`n` (key, value) pairs: message-contract JSON of ~150 bytes, keyed by id."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(14, 20)))
        mid = f"m{i:09d}"
        value = {"id": mid, "text": text, "format": "text", "ts": 1_700_000_000 + i}
        out.append((mid.encode(), json.dumps(value, separators=(",", ":")).encode()))
    return out


def produce(
    config: Mapping[str, object],
    topic: str,
    records: list[tuple[bytes, bytes]],
    acks: int | str,
    batch_size: int = 64 * 1024,
) -> float:
    """Send all records through a KafkaProducer (enable_idempotence=False, linger_ms=5,
    `batch_size` bytes) and flush; returns records/s."""
    settings = {**config, **PRODUCER_CONFIG, "batch_size": batch_size}
    producer = KafkaProducer(
        **{**client_settings(client=KafkaProducer, kafka=settings), "acks": acks}
    )
    try:
        producer.partitions_for(topic)  # the metadata fetch is not part of the rate
        start = time.perf_counter()
        for key, value in records:
            producer.send(topic, key=key, value=value)
        producer.flush()
        return len(records) / (time.perf_counter() - start)
    finally:
        producer.close()


def _consumer(config: Mapping[str, object], topic: str, max_poll_records: int) -> KafkaConsumer:
    settings = {
        **config,
        **GROUP_CONFIG,
        "group_id": f"ceiling-{uuid.uuid4().hex[:8]}",
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
        "max_poll_records": max_poll_records,
    }
    return KafkaConsumer(topic, **client_settings(client=KafkaConsumer, kafka=settings))


# what KafkaConsumer.poll returns: kafka-python's ConsumerRecords (untyped) by partition
Polled = dict[TopicPartition, list[Any]]


def _first_poll(consumer: KafkaConsumer, timeout: float = 60.0) -> tuple[Polled, float]:
    """Poll until records arrive; returns them and the seconds it took (mostly the join)."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        batch: Polled = consumer.poll(timeout_ms=100)
        if batch:
            return batch, time.perf_counter() - start
    raise TimeoutError("no records within the timeout")


def _consume(
    config: Mapping[str, object], topic: str, n: int, max_poll_records: int
) -> tuple[float, float]:
    """(records/s consumed, seconds to the first records)."""
    consumer = _consumer(config, topic, max_poll_records)
    try:
        batch, join = _first_poll(consumer)
        start = time.perf_counter()
        seen = sum(len(records) for records in batch.values())
        while seen < n:
            seen += sum(len(records) for records in consumer.poll(timeout_ms=1000).values())
        return seen / (time.perf_counter() - start), join
    finally:
        consumer.close()


class Pipeline(NamedTuple):
    """Consume + publish + flush + commit per batch: records/s, seconds to the first records,
    batches, records per batch, batch latency p50 and p99 (poll() returned → commit returned)."""

    rate: float
    join_s: float
    batches: int
    batch_records: float
    batch_p50_ms: float
    batch_p99_ms: float


def _figures(seen: int, elapsed: float, join: float, latencies: list[float]) -> Pipeline:
    cuts = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else latencies * 99
    return Pipeline(
        rate=seen / elapsed,
        join_s=join,
        batches=len(latencies),
        batch_records=seen / len(latencies),
        batch_p50_ms=cuts[49] * 1000,
        batch_p99_ms=cuts[98] * 1000,
    )


def _pipeline(
    config: Mapping[str, object],
    source: str,
    sink: str,
    n: int,
    max_poll_records: int,
    acks: int | str,
    kafka_producer: bool = False,
) -> Pipeline:
    """Consume + produce + flush + commit per batch through the daemon's Publisher, or with
    `kafka_producer` through KafkaProducer."""
    consumer = _consumer(config, source, max_poll_records)
    producer: KafkaProducer | Publisher
    if kafka_producer:
        producer = KafkaProducer(
            **{
                **client_settings(client=KafkaProducer, kafka={**config, **PRODUCER_CONFIG}),
                "acks": acks,
            }
        )
    else:
        producer = Publisher({**config, "acks": acks})
    latencies = []
    try:
        batch, join = _first_poll(consumer)
        start = time.perf_counter()
        seen = 0
        while True:
            t0 = time.perf_counter()
            for records in batch.values():
                if isinstance(producer, Publisher):
                    producer.send_keyed(
                        sink, [(record.key.decode(), DECISION) for record in records]
                    )
                else:
                    for record in records:
                        producer.send(sink, key=record.key, value=DECISION)
                seen += len(records)
            if batch:
                producer.flush()
                consumer.commit()
                latencies.append(time.perf_counter() - t0)
            if seen >= n:
                break
            batch = consumer.poll(timeout_ms=1000)
        elapsed = time.perf_counter() - start
    finally:
        producer.close()
        consumer.close()
    return _figures(seen, elapsed, join, latencies)


class ClientCeiling(TypedDict):
    """`client_ceiling()`'s figures (`Pipeline`'s but the batches)."""

    rate: float
    join_s: float
    batch_records: float
    batch_p50_ms: float
    batch_p99_ms: float


def client_ceiling(
    bootstrap_servers: str,
    client: str,
    n: int = 200_000,
    partitions: int = 4,
    max_poll_records: int = 500,
    client_config: Mapping[str, object] | None = None,
) -> ClientCeiling:
    """Consume + publish + flush + commit per batch through filterd's consumer and publisher of
    `client` (what the scorer does per batch, without deciding), `n` records produced beforehand
    into a fresh topic; acks=all, as the daemon publishes."""
    run = uuid.uuid4().hex[:8]
    source, sink = f"ceiling-{client}-in-{run}", f"ceiling-{client}-out-{run}"
    config = {**(client_config or {}), "bootstrap_servers": bootstrap_servers}
    create_topics(config, [source, sink], partitions)
    produce(config, source, sms_records(n), acks=1)
    kafka = {**config, **GROUP_CONFIG, "client": client, "acks": "all"}
    consumer = subscribed_consumer(
        kafka, source, f"ceiling-{run}", max_poll_records, lambda _: None, lambda _: None
    )
    publisher = publisher_of(kafka)
    latencies, seen = [], 0
    try:
        start = time.perf_counter()
        while not (batch := Batch.poll(consumer, 100, max_poll_records)).records:
            if time.perf_counter() - start > 60:
                raise TimeoutError("no records within 60 s")
        join = time.perf_counter() - start
        start = time.perf_counter()
        while True:
            t0 = time.perf_counter()
            publisher.send_keyed(sink, [(_key(record), DECISION) for record in batch.records])
            publisher.flush()
            consumer.commit(batch.offsets())
            latencies.append(time.perf_counter() - t0)
            seen += len(batch)
            if seen >= n:
                break
            while not (batch := Batch.poll(consumer, 1000, max_poll_records)).records:
                pass
        elapsed = time.perf_counter() - start
    finally:
        publisher.close()
        consumer.close()
    figures = _figures(seen, elapsed, join, latencies)
    return {
        "rate": figures.rate,
        "join_s": figures.join_s,
        "batch_records": figures.batch_records,
        "batch_p50_ms": figures.batch_p50_ms,
        "batch_p99_ms": figures.batch_p99_ms,
    }


def _key(record: object) -> str:
    """A consumed record's key as text: kafka-python's and librdkafka's records both have one,
    which filterd's `ConsumedRecord` does not name."""
    key = getattr(record, "key", None)
    return key.decode() if isinstance(key, bytes) else str(key)


class Ceiling(TypedDict):
    """`ceiling()`'s figures: records/s, seconds, batch latencies in ms; the pipeline's again with
    the suffix _kafka_producer, through KafkaProducer."""

    n: int
    record_bytes: float
    pipeline_acks: int | str
    produce_acks_1: float
    produce_acks_all: float
    consume: float
    join_s: float
    pipeline: float
    pipeline_join_s: float
    batches: int
    batch_records: float
    batch_p50_ms: float
    batch_p99_ms: float
    pipeline_kafka_producer: float
    pipeline_join_s_kafka_producer: float
    batches_kafka_producer: int
    batch_records_kafka_producer: float
    batch_p50_ms_kafka_producer: float
    batch_p99_ms_kafka_producer: float
    repeats: int


# the figures `ceiling()` gives as the median of its runs (the others are the first run's)
Measured = Literal[
    "record_bytes",
    "produce_acks_1",
    "produce_acks_all",
    "consume",
    "join_s",
    "pipeline",
    "pipeline_join_s",
    "batch_records",
    "batch_p50_ms",
    "batch_p99_ms",
    "pipeline_kafka_producer",
    "pipeline_join_s_kafka_producer",
    "batch_records_kafka_producer",
    "batch_p50_ms_kafka_producer",
    "batch_p99_ms_kafka_producer",
]
MEASURED: tuple[Measured, ...] = get_args(Measured)


def ceiling(
    bootstrap_servers: str,
    n: int = 200_000,
    partitions: int = 4,
    max_poll_records: int = 500,
    pipeline_acks: int | str = "all",
    repeats: int = 1,
    client_config: Mapping[str, object] | None = None,
) -> Ceiling:
    """Measure the kafka-python ceiling on a broker; returns records/s and batch latencies, each
    figure the median of `repeats` runs, as shared machines are noisy.

    Creates uniquely named topics of `partitions` partitions per run; `client_config` passes
    SASL/TLS and other client settings through (each client takes the keys it knows).
    """
    runs = [
        _one_run(bootstrap_servers, n, partitions, max_poll_records, pipeline_acks, client_config)
        for _ in range(repeats)
    ]
    result = runs[0].copy()
    for key in MEASURED:
        result[key] = statistics.median(run[key] for run in runs)
    result["repeats"] = repeats
    return result


def _one_run(
    bootstrap_servers: str,
    n: int,
    partitions: int,
    max_poll_records: int,
    pipeline_acks: int | str,
    client_config: Mapping[str, object] | None,
) -> Ceiling:
    config = {**(client_config or {}), "bootstrap_servers": bootstrap_servers}
    run = uuid.uuid4().hex[:8]
    source, spare, sink, sink2 = (
        f"ceiling-{kind}-{run}" for kind in ("in", "acks-all", "out", "out-kp")
    )
    create_topics(config, [source, spare, sink, sink2], partitions)
    records = sms_records(n)
    record_bytes = sum(len(v) for _, v in records) / n
    produce_acks_1 = produce(config, source, records, acks=1)
    produce_acks_all = produce(config, spare, records, acks="all")
    consume, join = _consume(config, source, n, max_poll_records)
    publisher = _pipeline(config, source, sink, n, max_poll_records, pipeline_acks)
    producer = _pipeline(
        config, source, sink2, n, max_poll_records, pipeline_acks, kafka_producer=True
    )
    return {
        "n": n,
        "record_bytes": record_bytes,
        "pipeline_acks": pipeline_acks,
        "produce_acks_1": produce_acks_1,
        "produce_acks_all": produce_acks_all,
        "consume": consume,
        "join_s": join,
        "pipeline": publisher.rate,
        "pipeline_join_s": publisher.join_s,
        "batches": publisher.batches,
        "batch_records": publisher.batch_records,
        "batch_p50_ms": publisher.batch_p50_ms,
        "batch_p99_ms": publisher.batch_p99_ms,
        "pipeline_kafka_producer": producer.rate,
        "pipeline_join_s_kafka_producer": producer.join_s,
        "batches_kafka_producer": producer.batches,
        "batch_records_kafka_producer": producer.batch_records,
        "batch_p50_ms_kafka_producer": producer.batch_p50_ms,
        "batch_p99_ms_kafka_producer": producer.batch_p99_ms,
        "repeats": 1,
    }


def table(result: Ceiling) -> str:
    """The figures of `ceiling()` as a markdown table."""
    batches = (
        f"{result['batch_records']:.0f} records/batch; batch p50 "
        f"{result['batch_p50_ms']:.1f} ms, p99 {result['batch_p99_ms']:.1f} ms"
    )
    rows = [
        ("produce, acks=1", result["produce_acks_1"], ""),
        ("produce, acks=all", result["produce_acks_all"], ""),
        (
            "consume (group, max_poll_records=500)",
            result["consume"],
            f"group join {result['join_s']:.1f} s",
        ),
        (
            "consume + publish + flush + commit per batch, the daemon's Publisher "
            f"(acks={result['pipeline_acks']})",
            result["pipeline"],
            batches,
        ),
        (
            "the same with KafkaProducer (send per record, flush), for reference",
            result["pipeline_kafka_producer"],
            f"batch p50 {result['batch_p50_ms_kafka_producer']:.1f} ms, "
            f"p99 {result['batch_p99_ms_kafka_producer']:.1f} ms",
        ),
    ]
    title = (
        f"kafka-python ceiling: {result['n']:,} records of ~{result['record_bytes']:.0f} B,"
        f" median of {result['repeats']} run(s)"
    )
    lines = [title, "", "| path | records/s | notes |", "|---|---:|---|"]
    lines += [f"| {name} | {rate:,.0f} | {notes} |" for name, rate, notes in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=200_000, help="records (default 200,000)")
    parser.add_argument("--bootstrap-servers", help="use this broker instead of a local Tansu")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--max-poll-records", type=int, default=500)
    parser.add_argument("--pipeline-acks", default="all", choices=["0", "1", "all"])
    parser.add_argument("--repeats", type=int, default=3, help="runs; medians are printed")
    parser.add_argument("--json", action="store_true", help="print the dict as JSON")
    args = parser.parse_args()
    # kafka-python warns on every metadata refresh of a new topic; the figures are the output.
    logging.getLogger("kafka").setLevel(logging.ERROR)
    acks: int | str = args.pipeline_acks if args.pipeline_acks == "all" else int(args.pipeline_acks)

    def measure(bootstrap_servers: str) -> Ceiling:
        return ceiling(
            bootstrap_servers,
            n=args.n,
            partitions=args.partitions,
            max_poll_records=args.max_poll_records,
            pipeline_acks=acks,
            repeats=args.repeats,
        )

    if args.bootstrap_servers:
        result = measure(args.bootstrap_servers)
    else:
        with LocalBroker() as broker:
            result = measure(broker.bootstrap_servers)
    print(json.dumps(result, indent=2) if args.json else table(result))


if __name__ == "__main__":
    main()
