"""Client settings: our defaults per loop, under the `[kafka]` settings (no broker needed)."""

from kafka import KafkaConsumer, KafkaProducer

from filterd.daemon.learner import Learner
from filterd.daemon.scorer import Scorer
from filterd.stream import CONSUMER_DEFAULTS, LEARNER_CONSUMER_DEFAULTS, client_settings


def test_the_scorer_fetches_with_a_short_wait_the_learner_with_a_long_one():
    scorer = client_settings({}, KafkaConsumer, Scorer.consumer_defaults)
    learner = client_settings({}, KafkaConsumer, Learner.consumer_defaults)
    assert scorer["fetch_max_wait_ms"] == 20 and learner["fetch_max_wait_ms"] == 500
    assert learner["enable_auto_commit"] is False and Scorer.consumer_defaults is CONSUMER_DEFAULTS


def test_kafka_settings_override_the_defaults_and_unknown_keys_are_left_out():
    kafka = {"fetch_max_wait_ms": 5, "linger_ms": 50, "bootstrap_servers": "h:1"}
    consumer = client_settings(kafka, KafkaConsumer, LEARNER_CONSUMER_DEFAULTS)
    assert consumer["fetch_max_wait_ms"] == 5 and "linger_ms" not in consumer
    producer = client_settings(kafka, KafkaProducer)
    assert producer["linger_ms"] == 50 and producer["acks"] == "all" and "fetch_max_wait_ms" not in producer
