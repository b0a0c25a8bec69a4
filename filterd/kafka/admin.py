"""Topic administration: creating the topics filterd reads and writes, and where a consumer
group stands in them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafka import KafkaAdminClient, TopicPartition
from kafka.errors import TopicAlreadyExistsError, for_code

from filterd.kafka.settings import client_settings


def create_topics(
    kafka: Mapping[str, Any],
    names: Iterable[str],
    partitions: int = 4,
    replication_factor: int = 1,
    configs: Mapping[str, str] | None = None,
    connect_timeout: float | None = None,
) -> list[str]:
    """Create the topics of `names` that do not exist yet, with topic `configs`; returns those
    created, in order. Existing topics are left as they are, whatever their settings.
    `connect_timeout`: seconds to wait for the first broker to answer (else kafka-python's
    `bootstrap_timeout_ms`, 30 s), before a KafkaError."""
    names = list(dict.fromkeys(names))
    if not names:
        return []
    settings = client_settings(kafka, KafkaAdminClient)
    if connect_timeout is not None:
        settings["bootstrap_timeout_ms"] = round(connect_timeout * 1000)
    admin = KafkaAdminClient(**settings)
    try:
        spec: dict[str, Any] = {
            "num_partitions": partitions,
            "replication_factor": replication_factor,
        }
        if configs:
            spec["configs"] = dict(configs)
        response = admin.create_topics({name: dict(spec) for name in names}, raise_errors=False)
    finally:
        admin.close()
    created = set()
    for topic in response["topics"]:
        if topic["error_code"] == 0:
            created.add(topic["name"])
        elif topic["error_code"] != TopicAlreadyExistsError.errno:
            raise for_code(topic["error_code"])(
                f"creating topic {topic['name']!r}: {topic.get('error_message')}"
            )
    return [name for name in names if name in created]


def committed_offsets(
    kafka: Mapping[str, Any],
    group: str,
    partitions: Iterable[TopicPartition],
    connect_timeout: float = 5.0,
) -> dict[TopicPartition, int]:
    """The offsets `group` has committed in `partitions` (those it never committed in are
    absent); a KafkaError when no broker answers within `connect_timeout` seconds."""
    settings = client_settings(kafka, KafkaAdminClient)
    settings["bootstrap_timeout_ms"] = round(connect_timeout * 1000)
    admin = KafkaAdminClient(**settings)
    try:
        offsets = admin.list_group_offsets({group: list(partitions)}).get(group, {})
    finally:
        admin.close()
    return {tp: meta.offset for tp, meta in offsets.items() if meta.offset >= 0}
