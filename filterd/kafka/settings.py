"""kafka-python client settings: our defaults under the `[kafka]` section, and which settings
each client takes."""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, Protocol, get_args

import msgspec
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer

from filterd.kafka.internals import has_gzip, has_lz4, has_snappy, has_zstd
from filterd.kafka.rdkafka_settings import librdkafka_settings
from filterd.service.config import DEFAULTS, Config, ConfigError

# The Kafka client libraries filterd runs with (confluent: librdkafka, optional)
ClientName = Literal["kafka-python", "confluent"]
# Kafka's record batch codecs (kafka-python's names), in the order of their protocol codes
Codec = Literal["gzip", "snappy", "lz4", "zstd"]


class KafkaKeys(msgspec.Struct, frozen=True, kw_only=True):
    """The `[kafka]` keys filterd reads itself, each declared once with its type, range and
    default (`check` holds a configuration to them); the section's other keys pass to the
    client as they are."""

    # "host:port,…" or a list of them: at least one broker (`Config`'s default)
    bootstrap_servers: str | list[str] = DEFAULTS.kafka["bootstrap_servers"]
    client: ClientName = "kafka-python"
    # what filterd publishes is compressed with (None: not compressed); its library installed
    compression_type: Codec | None = None


KAFKA_DEFAULTS = KafkaKeys()
KAFKA_CLIENTS: tuple[str, ...] = get_args(ClientName)
COMPRESSION_TYPES: tuple[str | None, ...] = (None, *get_args(Codec))

# Our choices where kafka-python's defaults do not suit a filter; `[kafka]` settings override them.
PRODUCER_DEFAULTS = {
    "acks": "all",
    "batch_size": 256 * 1024,  # bytes of one record batch: a poll's decisions per partition in one
}


CONSUMER_DEFAULTS = {
    "auto_offset_reset": "earliest",
    "enable_auto_commit": False,
    # Some Kafka-protocol brokers (Tansu) hold an empty fetch for the whole wait even when
    # records arrive meanwhile; a short wait keeps the decision latency low at low rates.
    "fetch_max_wait_ms": 20,
}


# The learner: feedback has no latency target, and each empty fetch cycle costs kafka-python
# CPU time; with the scorer's short wait an idle learner thread takes CPU from the scorer beside
# it (`--role all`), with 500 ms (kafka-python's default) next to none.
LEARNER_CONSUMER_DEFAULTS = {**CONSUMER_DEFAULTS, "fetch_max_wait_ms": 500}


class KafkaClient(Protocol):
    """A kafka-python client class (KafkaConsumer, KafkaProducer, KafkaAdminClient), as far as
    `client_settings` uses it: the settings it knows, with their defaults."""

    DEFAULT_CONFIG: ClassVar[Mapping[str, Any]]


def client_settings(
    kafka: Mapping[str, Any], client: type[KafkaClient], defaults: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The `[kafka]` settings `client` (KafkaConsumer, KafkaProducer, KafkaAdminClient) knows, over
    `defaults` (by default ours for that client)."""
    if defaults is None:
        defaults = {KafkaProducer: PRODUCER_DEFAULTS, KafkaConsumer: CONSUMER_DEFAULTS}.get(
            client, {}
        )
    known = client.DEFAULT_CONFIG
    return {**defaults, **{k: v for k, v in kafka.items() if k in known}}


# kafka-python's compression_type names → the record batch attribute codes of the protocol
COMPRESSION = {name: code for code, name in enumerate(COMPRESSION_TYPES)}


# whether the library each codec needs is installed
CODEC_INSTALLED = {
    None: lambda: True,
    "gzip": has_gzip,
    "snappy": has_snappy,
    "lz4": has_lz4,
    "zstd": has_zstd,
}


def codecs_missing() -> list[str]:
    """The codecs whose library is not installed here: a batch compressed with one of them
    cannot be read (filterd's dependencies include them all; an install without its
    dependencies may lack some)."""
    return [str(name) for name, installed in CODEC_INSTALLED.items() if not installed()]


def check_compression(name: str | None) -> None:
    """ValueError unless records can be compressed with `name` here (None: not compressed)."""
    if name not in COMPRESSION:
        raise ValueError(f"{name!r} is not one of {', '.join(str(known) for known in COMPRESSION)}")
    if not CODEC_INSTALLED[name]():
        raise ValueError(
            f"{name!r} needs a library that is not installed "
            "(see kafka-python's optional dependencies)"
        )


def check(config: Config) -> None:
    """ConfigError naming the key unless this installation can use the `[kafka]` settings of
    `config`: the keys `KafkaKeys` declares within their ranges (a client filterd has, at least
    one broker named by text, a codec whose library is installed), and every other key one of
    kafka-python's clients' (a misspelt one would be left out without a word). With
    `client = "confluent"`: confluent-kafka is installed, and every key maps to a setting of
    librdkafka or is one (dotted)."""
    kafka = config.kafka
    client = kafka.get("client", KAFKA_DEFAULTS.client)
    if client not in KAFKA_CLIENTS:
        raise ConfigError(f"kafka.client: {client!r} is not one of {', '.join(KAFKA_CLIENTS)}")
    if client == "confluent":
        _check_confluent(config)
    known = {
        *KafkaKeys.__struct_fields__,
        *KafkaConsumer.DEFAULT_CONFIG,
        *KafkaProducer.DEFAULT_CONFIG,
        *KafkaAdminClient.DEFAULT_CONFIG,
    }
    for key in kafka:
        if key not in known and not (client == "confluent" and "." in key):
            close = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"kafka.{key}: not a setting of kafka-python's clients{hint}")
    servers = kafka.get("bootstrap_servers")
    if not servers:
        raise ConfigError("kafka.bootstrap_servers: must name at least one broker")
    try:
        msgspec.convert({"bootstrap_servers": servers}, KafkaKeys)
    except msgspec.ValidationError:
        raise ConfigError(
            f'kafka.bootstrap_servers: expected "host:port,…" or a list of them, got {servers!r}'
        ) from None
    try:
        check_compression(kafka.get("compression_type", KAFKA_DEFAULTS.compression_type))
    except ValueError as error:
        raise ConfigError(f"kafka.compression_type: {error}") from None


def _check_confluent(config: Config) -> None:
    try:
        importlib.import_module("confluent_kafka")
    except ImportError:
        raise ConfigError(
            "kafka.client: \"confluent\" needs confluent-kafka: pip install 'filterd[confluent]'"
        ) from None
    for role in ("consumer", "producer"):
        try:
            librdkafka_settings(config.kafka, role)
        except ValueError as error:
            raise ConfigError(str(error)) from None


# A record batch's own bytes beyond its records' (header, offsets, timestamps)
RECORD_OVERHEAD_BYTES = 1024


def size_limits(max_bytes: int) -> dict[str, Any]:
    """Client settings that follow `limits.max_bytes`, under the `[kafka]` settings: what one
    partition's fetch may carry, and what one fetch may (a broker still returns one larger batch,
    so that a consumer can move on; the topics' `max.message.bytes` bounds that)."""
    per_partition = max_bytes + RECORD_OVERHEAD_BYTES
    return {"max_partition_fetch_bytes": per_partition, "fetch_max_bytes": 8 * per_partition}


def topic_configs(max_bytes: int) -> dict[str, str]:
    """The configuration `filterd topics create` gives the topics it creates: the broker refuses
    records longer than `limits.max_bytes` allows, so that none is ever fetched whole."""
    return {"max.message.bytes": str(max_bytes + RECORD_OVERHEAD_BYTES)}
