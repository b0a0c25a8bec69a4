"""The decisions read back from their topic: what each says and when it arrived here."""

from __future__ import annotations

import threading
import time
from datetime import datetime

import msgspec
import numpy as np
from kafka import KafkaConsumer, TopicPartition

# p50, p90, p99 and max in ms
Quantiles = dict[str, float]


class DecisionReader:
    """Every record of the decisions topic from the beginning (assigned partitions, no group)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        # Tansu answers a fetch that finds no data only after fetch_max_wait_ms, even when records
        # arrive meanwhile: a short wait keeps the observer's own delay to a few ms.
        # check_crcs=False: kafka-python's pure-Python CRC-32C (without the crc32c package) would
        # make the observer take CPU from the daemon under measure.
        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            enable_auto_commit=False,
            group_id=None,
            fetch_max_wait_ms=10,
            check_crcs=False,
        )
        partitions = self.consumer.partitions_for_topic(topic)
        deadline = time.monotonic() + 10
        while not partitions and time.monotonic() < deadline:
            time.sleep(0.1)
            partitions = self.consumer.partitions_for_topic(topic)
        self.consumer.assign([TopicPartition(topic, p) for p in sorted(partitions)])
        self.consumer.seek_to_beginning()
        # message id → (record timestamp ms, timestamp type, scored_at epoch s, arrival epoch s)
        self.seen: dict[str, tuple[int, int, float, float]] = {}
        self.records = 0
        self.bytes = 0
        self._scored_at: dict[str, float] = {}

    def poll(self, timeout_ms: int = 200) -> int:
        """Read what has arrived; returns how many records."""
        got = 0
        for batch in self.consumer.poll(timeout_ms=timeout_ms).values():
            arrived = time.time()
            for record in batch:
                value = msgspec.json.decode(record.value)
                raw = value["scored_at"]
                scored = self._scored_at.get(raw)
                if scored is None:
                    scored = self._scored_at[raw] = datetime.fromisoformat(raw).timestamp()
                self.seen.setdefault(
                    value["message_id"], (record.timestamp, record.timestamp_type, scored, arrived)
                )
                self.bytes += len(record.value)
                got += 1
        self.records += got
        return got

    def read_until(self, ids: set[str], timeout: float) -> None:
        """Read until every one of `ids` has its decision, or `timeout` s have passed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not ids <= self.seen.keys():
            self.poll()

    def close(self) -> None:
        self.consumer.close()


class LiveReader(threading.Thread):
    """Polls a DecisionReader in a thread until stopped (arrival times while the load runs)."""

    def __init__(self, reader: DecisionReader) -> None:
        super().__init__(name="decision-reader", daemon=True)
        self.reader, self.halt = reader, threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            self.reader.poll(timeout_ms=100)


def quantiles_ms(values: list[float]) -> Quantiles:
    """p50, p90, p99 and max of `values` (seconds), in ms."""
    a = np.asarray(values, dtype=float) * 1000
    return {
        "p50": float(np.percentile(a, 50)),
        "p90": float(np.percentile(a, 90)),
        "p99": float(np.percentile(a, 99)),
        "max": float(a.max()),
    }
