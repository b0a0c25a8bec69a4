"""Topic creation on a real broker: the configured topics, with the record size limit."""

from typing import Any

from filterd.kafka.admin import create_topics
from filterd.kafka.settings import RECORD_OVERHEAD_BYTES, topic_configs


def test_topics_are_created_once_with_the_record_size_limit(kafka_config: dict[str, Any]) -> None:
    names = ["admin-test-a", "admin-test-b"]
    configs = topic_configs(1_000_000)
    assert configs == {"max.message.bytes": str(1_000_000 + RECORD_OVERHEAD_BYTES)}
    assert create_topics(kafka_config, names, 2, 1, configs) == names
    assert create_topics(kafka_config, names, 2, 1, configs) == []  # they exist now
