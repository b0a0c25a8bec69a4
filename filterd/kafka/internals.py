"""The parts of kafka-python that it does not document, which filterd uses: imported here and
nowhere else (an import-linter contract in pyproject.toml enforces it). Elsewhere filterd uses
only what kafka-python documents, imported from `kafka` (the clients, `TopicPartition`,
`OffsetAndMetadata`, `ConsumerRebalanceListener`: the modules that define them are not part of
it) and `kafka.errors`.

- `KafkaNetClient` (kafka.net.compat): bootstraps, keeps the cluster's metadata (`cluster`:
  partitions and leaders of a topic), sends a request to a node (`send` → `Future`,
  `send_and_receive`) and runs the I/O (`poll`). `Future` (kafka.future) is what `send` returns.
- `MetadataRequest`, `ProduceRequest` (kafka.protocol), `DefaultRecordBatchBuilder`
  (kafka.record): the batch publisher (`filterd.kafka.producer`) builds one record batch per
  partition and one produce request per leader, and awaits them together: `KafkaProducer`
  costs CPU time per record (per-record futures, an accumulator shared with a sender thread)
  that publishing a whole batch and waiting for it does not need.
- `FetchRequest` (kafka.protocol), `MemoryRecords` (kafka.record): the reader of an undecodable
  batch (`filterd.kafka.batches`) fetches a partition's raw record batches and reads their
  headers (codec, base offset, last offset delta, record count), which a consumer cannot
  give for a batch it fails to decode.
- `has_gzip`, `has_snappy`, `has_lz4`, `has_zstd` (kafka.codec): whether kafka-python finds
  each codec's library, so that a batch it cannot decode is named as such.

filterd also reads `DEFAULT_CONFIG` of the documented clients (the settings each one takes,
`filterd.kafka.settings`), which kafka-python does not document either.

Tested against kafka-python 3.0.12, the versions `pyproject.toml` allows (>=3.0.12,<3.1):
`tests/kafka/test_kafka_python_internals.py` checks each of these on a real broker and fails
when a release changes one.
"""

from __future__ import annotations

from kafka.codec import has_gzip, has_lz4, has_snappy, has_zstd
from kafka.future import Future
from kafka.net.compat import KafkaNetClient
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.producer.produce import ProduceRequest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

__all__ = [
    "DefaultRecordBatchBuilder",
    "FetchRequest",
    "Future",
    "KafkaNetClient",
    "MemoryRecords",
    "MetadataRequest",
    "ProduceRequest",
    "has_gzip",
    "has_lz4",
    "has_snappy",
    "has_zstd",
]
