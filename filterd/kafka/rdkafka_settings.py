"""The `[kafka]` settings as librdkafka (confluent-kafka) takes them, for `client = "confluent"`.

A kafka-python name is mapped to librdkafka's dotted one; a dotted name is librdkafka's own and
passes through unchanged; a kafka-python name librdkafka has no equivalent for is an error.

>>> librdkafka_settings(  # doctest: +NORMALIZE_WHITESPACE
...     {"bootstrap_servers": ["a:9092", "b:9092"], "compression_type": None,
...      "sasl_plain_password": "s", "ssl.endpoint.identification.algorithm": "none"},
...     "producer")
{'bootstrap.servers': 'a:9092,b:9092', 'compression.type': 'none', 'sasl.password': 's',
 'ssl.endpoint.identification.algorithm': 'none'}
>>> librdkafka_settings({"bootstrap_servers": "a:9092", "fetch_max_wait_ms": 20}, "producer")
{'bootstrap.servers': 'a:9092'}
>>> librdkafka_settings({"socket_options": []}, "consumer")  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
ValueError: kafka.socket_options: librdkafka has no equivalent; give librdkafka's own (dotted)
setting instead
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

Role = Literal["consumer", "producer"]
BOTH: tuple[Role, ...] = ("consumer", "producer")


def _text(value: Any) -> Any:
    return value


def _servers(value: Any) -> str:
    return value if isinstance(value, str) else ",".join(value)


def _codec(value: Any) -> str:
    return "none" if value is None else str(value)


def _hostname_check(value: Any) -> str:
    return "https" if value else "none"


# kafka-python name → (librdkafka name, the clients it concerns, how the value is converted)
MAPPED: dict[str, tuple[str, tuple[Role, ...], Callable[[Any], Any]]] = {
    "bootstrap_servers": ("bootstrap.servers", BOTH, _servers),
    "client_id": ("client.id", BOTH, _text),
    "security_protocol": ("security.protocol", BOTH, _text),
    "sasl_mechanism": ("sasl.mechanism", BOTH, _text),
    "sasl_plain_username": ("sasl.username", BOTH, _text),
    "sasl_plain_password": ("sasl.password", BOTH, _text),
    "sasl_kerberos_service_name": ("sasl.kerberos.service.name", BOTH, _text),
    "ssl_cafile": ("ssl.ca.location", BOTH, _text),
    "ssl_certfile": ("ssl.certificate.location", BOTH, _text),
    "ssl_keyfile": ("ssl.key.location", BOTH, _text),
    "ssl_password": ("ssl.key.password", BOTH, _text),
    "ssl_crlfile": ("ssl.crl.location", BOTH, _text),
    "ssl_check_hostname": ("ssl.endpoint.identification.algorithm", BOTH, _hostname_check),
    "request_timeout_ms": ("socket.timeout.ms", BOTH, _text),
    "connections_max_idle_ms": ("connections.max.idle.ms", BOTH, _text),
    "metadata_max_age_ms": ("metadata.max.age.ms", BOTH, _text),
    "reconnect_backoff_ms": ("reconnect.backoff.ms", BOTH, _text),
    "reconnect_backoff_max_ms": ("reconnect.backoff.max.ms", BOTH, _text),
    "retry_backoff_ms": ("retry.backoff.ms", BOTH, _text),
    "receive_buffer_bytes": ("socket.receive.buffer.bytes", BOTH, _text),
    "send_buffer_bytes": ("socket.send.buffer.bytes", BOTH, _text),
    # the consumer's
    "group_id": ("group.id", ("consumer",), _text),
    "auto_offset_reset": ("auto.offset.reset", ("consumer",), _text),
    "enable_auto_commit": ("enable.auto.commit", ("consumer",), _text),
    "session_timeout_ms": ("session.timeout.ms", ("consumer",), _text),
    "heartbeat_interval_ms": ("heartbeat.interval.ms", ("consumer",), _text),
    "max_poll_interval_ms": ("max.poll.interval.ms", ("consumer",), _text),
    "fetch_max_wait_ms": ("fetch.wait.max.ms", ("consumer",), _text),
    "fetch_min_bytes": ("fetch.min.bytes", ("consumer",), _text),
    "fetch_max_bytes": ("fetch.max.bytes", ("consumer",), _text),
    "max_partition_fetch_bytes": ("max.partition.fetch.bytes", ("consumer",), _text),
    "check_crcs": ("check.crcs", ("consumer",), _text),
    "isolation_level": ("isolation.level", ("consumer",), _text),
    "partition_assignment_strategy": ("partition.assignment.strategy", ("consumer",), _text),
    # the producer's
    "acks": ("acks", ("producer",), str),
    "compression_type": ("compression.type", ("producer",), _codec),
    "linger_ms": ("linger.ms", ("producer",), _text),
    "batch_size": ("batch.size", ("producer",), _text),
    "retries": ("retries", ("producer",), _text),
    "enable_idempotence": ("enable.idempotence", ("producer",), _text),
    "delivery_timeout_ms": ("delivery.timeout.ms", ("producer",), _text),
    "max_request_size": ("message.max.bytes", ("producer",), _text),
    "max_in_flight_requests_per_connection": (
        "max.in.flight.requests.per.connection",
        ("producer",),
        _text,
    ),
}
# filterd's own keys of `[kafka]`, and kafka-python's that have no meaning for librdkafka
NOT_PASSED = {"client", "bootstrap_timeout_ms", "max_poll_records", "api_version"}


def librdkafka_settings(kafka: Mapping[str, Any], role: Role) -> dict[str, Any]:
    """librdkafka's configuration for a `role` client from `[kafka]` settings (and filterd's
    defaults in kafka-python's names); ValueError naming a setting that cannot be mapped."""
    out: dict[str, Any] = {}
    for key, value in kafka.items():
        if key in NOT_PASSED:
            continue
        if "." in key:
            out[key] = value
        elif key in MAPPED:
            name, roles, convert = MAPPED[key]
            if role in roles:
                out[name] = convert(value)
        else:
            raise ValueError(
                f"kafka.{key}: librdkafka has no equivalent; "
                "give librdkafka's own (dotted) setting instead"
            )
    return out
