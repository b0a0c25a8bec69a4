"""The record batch at an offset, read as the broker holds it: what a consumer cannot decode
(a codec whose library is missing, a codec id no client knows, a corrupt batch) is described
rather than raised, with the offsets it spans, so that it can be reported and skipped whole.

    at = batch_at(kafka, TopicPartition("filterd.messages", 2), 40)
    at.problem      # None: kafka-python reads it here; else why not ("snappy: its library …")
    at.next_offset  # the first offset past the batch: where a consumer skipping it resumes

A consumer cannot step past part of an undecodable batch: a fetch from any offset inside it
returns the whole batch again. So a skip moves to `next_offset`, and `records` says how many
records that passes over (the batch header's count, which needs no decoding).

`describe` works on the bytes of a fetch response (pure); `batch_at` fetches them with one
Fetch request to the partition's leader, through kafka-python's network client as
`filterd.kafka.producer` publishes (undocumented parts of kafka-python: `filterd.kafka.internals`).
"""

from __future__ import annotations

import contextlib
import importlib
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import (
    CorruptRecordError,
    KafkaError,
    KafkaTimeoutError,
    OffsetOutOfRangeError,
    UnsupportedCodecError,
    for_code,
)

from filterd.kafka.internals import FetchRequest, KafkaNetClient, MemoryRecords
from filterd.kafka.settings import CODEC_INSTALLED, client_settings, size_limits

# the compression codec ids of the record batch attributes (the low three bits)
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
# Fetch versions that name topics (13 and later name them by id)
FETCH_VERSIONS = (4, 12)
# A fetch that asks for no bytes at all is answered with no partitions by some brokers
# (Tansu): one byte, and a short wait when the partition ends at the offset.
FETCH_WAIT_MS = 100


def _library_errors() -> tuple[type[Exception], ...]:
    """The errors of the codec libraries that are installed."""
    found = []
    for module, name in (
        ("snappy", "UncompressError"),
        ("cramjam", "DecompressionError"),
        ("zstandard", "ZstdError"),
    ):
        with contextlib.suppress(ImportError):
            found.append(getattr(importlib.import_module(module), name))
    return tuple(found)


# What decoding a record batch raises on bytes that are not what they claim: kafka-python's
# errors, the decompressors' (gzip: OSError, EOFError, zlib.error; lz4: RuntimeError; snappy
# and zstd: their libraries' own) and the record parser's.
DECODING_ERRORS: tuple[type[Exception], ...] = (
    KafkaError,
    OSError,
    EOFError,
    zlib.error,
    RuntimeError,
    ValueError,
    IndexError,
    struct.error,
    *_library_errors(),
)


# What kafka-python's consumer raises out of poll() for a batch it cannot decode.
UNDECODABLE_ERRORS = (UnsupportedCodecError, CorruptRecordError)


@dataclass(frozen=True)
class BatchAt:
    """The record batch that holds `offset` of a partition, as far as it can be read here."""

    offset: int  # the offset asked for (a consumer's position, possibly inside the batch)
    next_offset: int  # the first offset past the batch
    records: int  # the batch's records from `offset` on
    codec: str  # none, gzip, snappy, lz4, zstd, or "id N" for a codec no client knows
    problem: str | None  # why kafka-python cannot read the batch here; None when it can


def describe(data: bytes, offset: int, check_crcs: bool = True) -> BatchAt | None:
    """The batch of `data` (a fetch response's records) that holds `offset` or is the first
    past it; None when `data` has none (the partition ends before `offset`).

    >>> from filterd.kafka.internals import DefaultRecordBatchBuilder
    >>> def batch(codec, base=0, n=3):
    ...     b = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 1 << 20)
    ...     for i in range(n):
    ...         b.append(i, 0, None, b"spam " * 50, [])
    ...     data = bytearray(b.build())
    ...     data[0:8] = base.to_bytes(8, "big")
    ...     return bytes(data)
    >>> describe(batch(1), 0)
    BatchAt(offset=0, next_offset=3, records=3, codec='gzip', problem=None)
    >>> describe(batch(0) + batch(1, base=3, n=5), 4)  # the first batch ends before offset 4
    BatchAt(offset=4, next_offset=8, records=4, codec='gzip', problem=None)
    >>> unknown = bytearray(batch(0))
    >>> unknown[22] |= 6  # codec id 6 in the attributes (the CRC no longer matches either)
    >>> describe(bytes(unknown), 0)  # doctest: +NORMALIZE_WHITESPACE
    BatchAt(offset=0, next_offset=3, records=3, codec='id 6',
            problem='compressed with codec id 6, which no Kafka client knows')
    >>> corrupt = bytearray(batch(0))
    >>> corrupt[-1] ^= 1
    >>> describe(bytes(corrupt), 1).problem
    'corrupt: its CRC does not match its bytes'
    >>> describe(b"", 0) is None
    True
    """
    records = MemoryRecords(data)
    try:
        batch = records.next_batch()
        while batch is not None and batch.next_offset <= offset:
            batch = records.next_batch()
    except DECODING_ERRORS as error:
        # a header that cannot be parsed: nothing says where the batch ends, so a skip passes
        # over the one offset
        return BatchAt(offset, offset + 1, 1, "unknown", f"its header cannot be read: {error}")
    if batch is None:
        return None
    code = batch.compression_type
    codec = CODECS[code] if code < len(CODECS) else f"id {code}"
    passed = max(0, offset - batch.base_offset)
    count = getattr(batch, "records_count", batch.next_offset - batch.base_offset)
    return BatchAt(
        offset, batch.next_offset, max(1, count - passed), codec, _problem(batch, codec, check_crcs)
    )


def _problem(batch: Any, codec: str, check_crcs: bool) -> str | None:
    """Why kafka-python's consumer would raise on `batch`, in words; None if it reads it."""
    if codec not in CODECS:
        return f"compressed with codec {codec}, which no Kafka client knows"
    if not CODEC_INSTALLED[None if codec == "none" else codec]():
        return f"compressed with {codec}, whose library is not installed here"
    if check_crcs and not batch.validate_crc():
        return "corrupt: its CRC does not match its bytes"
    try:
        for record in batch:
            if check_crcs and not record.validate_crc():
                return f"corrupt: the CRC of the record at offset {record.offset} does not match"
    except DECODING_ERRORS as error:
        return f"corrupt: its records cannot be read ({type(error).__name__}: {error})"
    return None


def batch_at(
    kafka: Mapping[str, Any], tp: TopicPartition, offset: int, timeout: float = 5.0
) -> BatchAt | None:
    """The batch of `tp` that holds `offset` (or the first past it), fetched from the partition's
    leader through the `[kafka]` settings; None when the partition ends before `offset`.
    KafkaError when the broker cannot be asked within `timeout` seconds, or refuses."""
    settings = {**KafkaConsumer.DEFAULT_CONFIG, **client_settings(kafka, KafkaConsumer)}
    per_partition = max(
        settings["max_partition_fetch_bytes"], size_limits(0)["max_partition_fetch_bytes"]
    )
    client = KafkaNetClient(**settings)
    try:
        leader = _leader(client, tp, timeout)
        request = fetch_request(
            tp, offset, max(per_partition, settings["fetch_max_bytes"]), per_partition
        )
        response = client.send_and_receive(leader, request, timeout_ms=int(timeout * 1000))
    finally:
        client.close()
    for topic in response.responses:
        for part in topic.partitions:
            if topic.topic != tp.topic or part.partition_index != tp.partition:
                continue
            error = for_code(part.error_code)
            if error is OffsetOutOfRangeError:
                return None
            if part.error_code:
                raise error(f"fetching {tp.topic}[{tp.partition}] at offset {offset}")
            return describe(bytes(part.records or b""), offset, settings["check_crcs"])
    raise KafkaError(f"the broker's fetch response has no {tp.topic}[{tp.partition}]")


def fetch_request(
    tp: TopicPartition, offset: int, max_bytes: int, partition_max_bytes: int
) -> FetchRequest:
    """A Fetch request for the record batches of `tp` from `offset` on, as the broker holds them
    (read uncommitted, no fetch session)."""
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=FETCH_WAIT_MS,
        min_bytes=1,
        max_bytes=max_bytes,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        forgotten_topics_data=[],
        rack_id="",
        topics=[
            FetchRequest.FetchTopic(
                topic=tp.topic,
                partitions=[
                    FetchRequest.FetchTopic.FetchPartition(
                        partition=tp.partition,
                        current_leader_epoch=-1,
                        fetch_offset=offset,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                        partition_max_bytes=partition_max_bytes,
                    )
                ],
            )
        ],
        min_version=FETCH_VERSIONS[0],
        max_version=FETCH_VERSIONS[1],
    )


def _leader(client: KafkaNetClient, tp: TopicPartition, timeout: float) -> int:
    """The node id of `tp`'s leader, from a metadata request when not known yet."""
    cluster = client.cluster
    cluster.add_topic(tp.topic)
    leader = cluster.leader_for_partition(tp)
    if leader is None or leader == -1:
        client.poll(future=cluster.request_update(), timeout_ms=int(timeout * 1000))
        leader = cluster.leader_for_partition(tp)
    if leader is None or leader == -1:
        raise KafkaTimeoutError(
            f"no leader known for {tp.topic}[{tp.partition}] within {timeout:g} s"
        )
    return int(leader)
