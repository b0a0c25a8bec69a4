"""Reading records back by their coordinates (partition, offset): how a learner gets the message
that feedback names by id when another process decided it, while the topic still retains it.

A `KafkaFetcher` is a consumer of no group that commits nothing: it is assigned one partition
at a time, seeks to each wanted offset (reading on instead when the next one is near) and keeps
the values of the wanted offsets. An offset the topic no longer holds (retention, compaction) or
does not hold yet is simply absent from the result.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from typing import Any, Protocol

from kafka import KafkaConsumer, TopicPartition

from filterd.kafka.settings import client_settings

Coordinates = tuple[int, int]  # (partition, offset)

# Read on rather than seek when the next wanted offset is at most this far ahead: a seek costs
# a fetch round trip, reading a few hundred small records costs less.
READ_AHEAD = 500


class RecordFetcher(Protocol):
    def fetch(self, topic: str, wanted: Collection[Coordinates]) -> dict[Coordinates, bytes]:
        """The values at the `wanted` coordinates of `topic` that it holds."""
        ...

    def close(self) -> None: ...


class KafkaFetcher:
    """`RecordFetcher` over kafka-python; `timeout` bounds each `fetch` (seconds)."""

    def __init__(self, kafka: Mapping[str, Any], timeout: float = 10.0) -> None:
        settings = client_settings(kafka, KafkaConsumer)
        settings.update(group_id=None, enable_auto_commit=False, auto_offset_reset="earliest")
        self._consumer = KafkaConsumer(**settings)
        self.timeout = timeout

    def fetch(self, topic: str, wanted: Collection[Coordinates]) -> dict[Coordinates, bytes]:
        found: dict[Coordinates, bytes] = {}
        deadline = time.monotonic() + self.timeout
        for partition in sorted({p for p, _ in wanted}):
            offsets = sorted({o for p, o in wanted if p == partition})
            values = self._partition(TopicPartition(topic, partition), offsets, deadline)
            found.update({(partition, o): v for o, v in values.items()})
        return found

    def _partition(
        self, tp: TopicPartition, offsets: list[int], deadline: float
    ) -> dict[int, bytes]:
        """The values at `offsets` (sorted) of one partition, read before `deadline`."""
        consumer = self._consumer
        consumer.assign([tp])
        found: dict[int, bytes] = {}
        i = 0  # the first wanted offset not passed yet
        while i < len(offsets) and time.monotonic() < deadline:
            consumer.seek(tp, offsets[i])
            stop = offsets[i]  # read on while the next wanted offset is near
            while i + 1 < len(offsets) and offsets[i + 1] - stop <= READ_AHEAD:
                i += 1
                stop = offsets[i]
            i += 1
            self._read_until(tp, stop, offsets, found, deadline)
        return found

    def _read_until(
        self,
        tp: TopicPartition,
        stop: int,
        offsets: list[int],
        found: dict[int, bytes],
        deadline: float,
    ) -> None:
        """Poll `tp` from its position until past `stop`, the partition's end or `deadline`."""
        wanted = set(offsets)
        while time.monotonic() < deadline:
            batch = self._consumer.poll(timeout_ms=200).get(tp, [])
            for record in batch:
                if record.offset in wanted and record.value is not None:
                    found[record.offset] = record.value
            position = self._consumer.position(tp)
            end = self._consumer.highwater(tp)
            if position is not None and (position > stop or (end is not None and position >= end)):
                return

    def close(self) -> None:
        self._consumer.close(autocommit=False, timeout_ms=1000)
