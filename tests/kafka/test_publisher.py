"""Client settings: our defaults per loop, under the `[kafka]` settings; publishing keyed
records."""

from typing import Any

from kafka import KafkaConsumer, KafkaProducer

from filterd.daemon.learner import Learner
from filterd.daemon.scorer import Scorer
from filterd.kafka.publisher import Publisher
from filterd.kafka.settings import CONSUMER_DEFAULTS, LEARNER_CONSUMER_DEFAULTS, client_settings
from tests.daemon.conftest import read_all


def test_the_scorer_fetches_with_a_short_wait_the_learner_with_a_long_one() -> None:
    scorer = client_settings({}, KafkaConsumer, Scorer.consumer_defaults)
    learner = client_settings({}, KafkaConsumer, Learner.consumer_defaults)
    assert scorer["fetch_max_wait_ms"] == 20 and learner["fetch_max_wait_ms"] == 500
    assert learner["enable_auto_commit"] is False and Scorer.consumer_defaults is CONSUMER_DEFAULTS


def test_kafka_settings_override_the_defaults_and_unknown_keys_are_left_out() -> None:
    kafka = {"fetch_max_wait_ms": 5, "linger_ms": 50, "bootstrap_servers": "h:1"}
    consumer = client_settings(kafka, KafkaConsumer, LEARNER_CONSUMER_DEFAULTS)
    assert consumer["fetch_max_wait_ms"] == 5 and "linger_ms" not in consumer
    producer = client_settings(kafka, KafkaProducer)
    assert (
        producer["linger_ms"] == 50
        and producer["acks"] == "all"
        and "fetch_max_wait_ms" not in producer
    )


def test_keyed_records_land_where_kafka_pythons_own_partitioner_puts_them(
    kafka_config: dict[str, Any], topics: dict[str, str]
) -> None:
    records = [(f"message-{i}", f'{{"n": {i}}}'.encode()) for i in range(200)]
    publisher = Publisher(kafka_config)
    publisher.send_keyed(topics["decisions"], records)
    publisher.flush()
    publisher.close()
    reference = KafkaProducer(**client_settings(kafka_config, KafkaProducer))
    for key, value in records:
        reference.send(topics["messages"], key=key.encode(), value=value)
    reference.close()

    def partition_by_key(topic: str) -> dict[str, int]:
        return {
            r.key.decode(): r.partition
            for r in read_all(kafka_config, topic, lambda rs: len(rs) >= 200)
            if r.key is not None  # all 200 have one: a record without would leave one out
        }

    ours, theirs = partition_by_key(topics["decisions"]), partition_by_key(topics["messages"])
    assert len(ours) == 200 and ours == theirs
    assert len(set(ours.values())) == 4  # the test would not notice a constant partition otherwise
