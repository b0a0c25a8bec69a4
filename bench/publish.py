"""CPU a published record costs: filterd's BatchProducer against kafka-python's KafkaProducer.

    .venv/bin/python bench/publish.py [-n 100000] [--batch 500] [--rounds 3]

Starts a LocalBroker (Tansu, memory storage) and publishes `n` decision-size records (~220 B,
keyed by message id) in batches of `--batch`, as the scorer does per poll: each batch sent and
its acknowledgement awaited (acks=all) before the next. Both ways put each record on the
partition Kafka's default partitioner chooses, computed for the batch (`filterd.partitioner`);
KafkaProducer gets it as an explicit partition, as the daemon gave it before filterd/produce.py.
The two alternate, `--rounds` times, so that both meet the same machine; printed per round:
CPU µs a record (this process, every thread: KafkaProducer's sender included) and records/s.
"""

from __future__ import annotations

import argparse
import logging
import resource
import time

from kafka import KafkaProducer

from filterd.broker import LocalBroker
from filterd.partitioner import partitions_of
from filterd.produce import BatchProducer
from filterd.stream import create_topics


def records(n: int) -> list[tuple[bytes, bytes]]:
    value = (b'{"message_id":"m%07d","label":"ham","score":-0.5,"threshold":0.1,"target_recall":0.99,'
             b'"explanation":[["free",0.3],["call",0.2],["now",0.1]],"model_version":3,"threshold_version":2,'
             b'"scored_at":"2026-11-23T16:00:00+00:00"}')  # fmt: skip
    return [(f"m{i:07d}".encode(), value % i) for i in range(n)]


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    data = records(args.n)
    with LocalBroker() as broker:
        settings = {"bootstrap_servers": broker.bootstrap_servers, "acks": "all"}
        create_topics(settings, ["publish-batch", "publish-kafka-producer"], 4)
        ours = BatchProducer(settings)
        theirs = KafkaProducer(**settings, linger_ms=5, batch_size=256 * 1024, enable_idempotence=False)
        partitions = sorted(theirs.partitions_for("publish-kafka-producer"))

        def batch_producer(chunk):
            ours.publish([("publish-batch", key, value) for key, value in chunk], timeout=30)

        def kafka_producer(chunk):
            placed = partitions_of([key for key, _ in chunk], partitions)
            futures = [theirs.send("publish-kafka-producer", key=key, value=value, partition=p)
                       for (key, value), p in zip(chunk, placed)]  # fmt: skip
            theirs.flush()
            assert all(f.succeeded() for f in futures)

        print(f"{args.n:,} records of ~{sum(len(v) for _, v in data) / len(data):.0f} B, batches of {args.batch}, acks=all")
        for round_ in range(1, args.rounds + 1):
            for name, publish in (("BatchProducer", batch_producer), ("KafkaProducer", kafka_producer)):
                cpu, wall = cpu_seconds(), time.perf_counter()
                for start in range(0, len(data), args.batch):
                    publish(data[start : start + args.batch])
                cpu, wall = cpu_seconds() - cpu, time.perf_counter() - wall
                print(f"round {round_}  {name:13}  {cpu / len(data) * 1e6:5.1f} µs CPU a record  "
                      f"{len(data) / wall:8,.0f} records/s")  # fmt: skip
        ours.close()
        theirs.close()


if __name__ == "__main__":
    main()
