"""Reading records back by their coordinates, from the real broker."""

from typing import Any

from kafka import KafkaProducer

from filterd.kafka.fetch import READ_AHEAD, KafkaFetcher


def produce(kafka_config: dict[str, Any], topic: str, n: int) -> dict[tuple[int, int], bytes]:
    """n records spread over the topic's partitions; their coordinates → values."""
    producer = KafkaProducer(
        bootstrap_servers=kafka_config["bootstrap_servers"], enable_idempotence=False
    )
    futures = {
        f"v{i}".encode(): producer.send(topic, f"v{i}".encode(), key=f"k{i}".encode())
        for i in range(n)
    }
    producer.flush()
    coordinates: dict[tuple[int, int], bytes] = {}
    for value, future in futures.items():
        meta = future.get(timeout=10)
        coordinates[(meta.partition, meta.offset)] = value
    producer.close()
    return coordinates


def test_records_are_read_back_by_partition_and_offset(
    kafka_config: dict[str, Any], topics: dict[str, str]
) -> None:
    written = produce(kafka_config, topics["messages"], READ_AHEAD + 200)
    by_partition: dict[int, list[int]] = {}
    for p, o in written:
        by_partition.setdefault(p, []).append(o)
    far = max(by_partition, key=lambda p: len(by_partition[p]))
    # some scattered, two far apart in one partition (one seek each), and two that do not exist
    wanted = set(list(written)[::37]) | {
        (far, min(by_partition[far])),
        (far, max(by_partition[far])),
    }
    missing = {(far, max(by_partition[far]) + 10), (far, 10**9)}
    fetcher = KafkaFetcher(kafka_config, timeout=20)
    try:
        found = fetcher.fetch(topics["messages"], wanted | missing)
    finally:
        fetcher.close()
    assert found == {c: written[c] for c in wanted}
